"""Real servers on loopback: the fake cloud upstream, and edgeway itself as a subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway.bench.ports import free_port
from tests.fake_upstream import FakeUpstream, UpstreamServer

ROOT = Path(__file__).resolve().parent.parent
# The store's key (router/sealing.py): a Redis store needs one, and every gateway a test starts,
# in this process or as a child, seals with the same one.
STORE_KEY = os.environ.setdefault("EDGEWAY_STORE_KEY", "edgeway-tests-store-key")
APP_KEYS = {"alpha": "alpha-key-0123456789", "beta": "beta-key-0123456789"}


class GatewayProcess:
    """`edgeway serve` in a child process, as a user would run it."""

    def __init__(
        self, config: dict[str, Any] | None, tmp: Path, env: dict[str, str] | None = None, args: list[str] | None = None
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / f"gateway-{self.port}.log"
        command = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(self.port), *(args or [])]
        if config is not None:
            config_path = tmp / f"gateway-{self.port}.yaml"
            config_path.write_text(yaml.safe_dump(config))
            command += ["--config", str(config_path)]
        environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        environment.update(env or {})
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=environment)

    def wait_ready(self, timeout: float = 60) -> GatewayProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"edgeway exited with {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"edgeway was not ready in {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


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


BETA_POLICY = """
app: beta
defaults: {cloud: gpt-fake}
rules:
  - name: app-default-cloud
    route: cloud
    fallback: edge
"""


def gateway_config(upstream_url: str, tmp: Path, **overrides: Any) -> dict[str, Any]:
    """The config most tests run against: the bundled edge model, an OpenAI-compatible and an
    Anthropic cloud model (both the fake upstream), and two apps: alpha with the plain rules,
    beta with a policy file whose default is the cloud."""
    (tmp / "beta.yaml").write_text(BETA_POLICY)
    config: dict[str, Any] = {
        "server": {"max_body_bytes": 65536},
        "edge": {"models": [{"name": "smollm2", "gguf": "bundled:smollm2-135m", "n_ctx": 2048}]},
        "cloud": {
            "models": [
                {
                    "name": "gpt-fake",
                    "provider_model": "openai/gpt-4o-mini",
                    "api_key": "sk-fake",
                    "api_base": upstream_url + "/v1",
                    "timeout_s": 3,
                    "read_timeout_s": 1,
                    "circuit_failures": 1000,
                },
                {
                    "name": "claude-fake",
                    "provider_model": "anthropic/claude-3-5-haiku-latest",
                    "api_key": "sk-ant-fake",
                    "api_base": upstream_url,
                    "timeout_s": 10,
                },
            ]
        },
        "apps": [
            {"name": "alpha", "key": APP_KEYS["alpha"]},
            {"name": "beta", "key": APP_KEYS["beta"], "policy": str(tmp / "beta.yaml")},
        ],
    }
    config.update(overrides)
    return config


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
