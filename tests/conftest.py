"""Real servers on loopback: the fake cloud upstream, and edgeway itself as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.bench.ports import free_port
from tests.fake_upstream import FakeUpstream, UpstreamServer
from tests.gateways import APP_KEYS as APP_KEYS
from tests.gateways import BETA_POLICY as BETA_POLICY
from tests.gateways import ROOT as ROOT
from tests.gateways import GatewayProcess as GatewayProcess
from tests.gateways import gateway_config as gateway_config

# The store's key (router/sealing.py): a Redis store needs one, and every gateway a test starts,
# in this process or as a child, seals with the same one.
STORE_KEY = os.environ.setdefault("EDGEWAY_STORE_KEY", "edgeway-tests-store-key")


class RedisServer:
    """A real redis-server on a free loopback port, its data in a temporary folder."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("CI") == "true":
                pytest.fail("redis-server is not installed (apt-get install redis-server); CI must run these tests")
            pytest.skip("redis-server is not installed")
        self.binary, self.folder, self.port = binary, folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        import redis

        while time.monotonic() < deadline:
            try:
                redis.Redis(port=self.port).ping()
                return self
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    with UpstreamServer(fake) as server:
        fake.url = server.url
        yield fake


@pytest.fixture(autouse=True)
def _fresh_upstream(request: pytest.FixtureRequest) -> None:
    if "upstream" in request.fixturenames:
        request.getfixturevalue("upstream").reset()


@pytest.fixture(scope="session")
def routing_edge_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model cut to its first and last layers: the same tokenizer, chat template and
    serving path at about a tenth of the compute, for the tests that check where a request goes
    and what is kept of it, and never what the model says (their hundreds of requests each read a
    new prompt on the edge)."""
    from edge_runtime.gguf import resolve_gguf
    from gateway.bench.draft_model import keep_layers, layer_count

    bundled = resolve_gguf("bundled:smollm2-135m")
    path = tmp_path_factory.mktemp("routing-edge") / "smollm2-2-layers.gguf"
    keep_layers(bundled, path, [0, layer_count(bundled) - 1])
    return path


@pytest.fixture(scope="session")
def gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("gateway")
    process = GatewayProcess(gateway_config(upstream.url, tmp), tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


@pytest.fixture(scope="session")
def open_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """`edgeway serve` with no config file and no provider keys: the quickstart's gateway."""
    process = GatewayProcess(None, tmp_path_factory.mktemp("open"))
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client_for(gateway: GatewayProcess, app: str = "alpha", **kwargs: Any):
    import openai

    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=APP_KEYS[app], max_retries=0, **kwargs)


def async_client_for(gateway: GatewayProcess, app: str = "alpha"):
    import openai

    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=APP_KEYS[app], max_retries=0)


# What a client's conversation with a system prompt becomes, in Chat Completions terms.
TERSE_CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": "What is 2+2?"},
]


# --- two apps: one on the plain rules, one whose private requests stay on the edge ----------------
TWO_APPS = {"open": "open-key-0123456789", "private": "private-key-0123456789"}
PRIVATE_POLICY = """
app: private
defaults: {edge: smollm2, cloud: gpt-fake}
rules:
  - name: pii-stays-local
    when: {pii: any}
    route: edge
    fallback: none
  - name: rest
    route: cloud
"""


def two_apps(
    upstream: FakeUpstream, tmp: Path, policy: str = PRIVATE_POLICY, cloud: list[dict[str, Any]] | None = None
) -> Iterator[GatewayProcess]:
    """A gateway with the apps `open` (plain rules) and `private` (`policy`), and extra `cloud` models."""
    (tmp / "private.yaml").write_text(policy)
    config = gateway_config(upstream.url, tmp)
    config["cloud"]["models"] += cloud or []
    config["apps"] = [
        {"name": "open", "key": TWO_APPS["open"]},
        {"name": "private", "key": TWO_APPS["private"], "policy": str(tmp / "private.yaml")},
    ]
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()
