"""edgeway as a user runs it, for the suite and for what research/ shows of it (no pytest here):
`edgeway serve` in a child process, and the config most tests run against."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.bench.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
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

    def access_line(self, request_id: str, timeout: float = 10) -> str:
        """The request's plain access line, once written: after the answer's last byte went out,
        so a client may read the answer before the line is in the log."""
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.log().splitlines() if f"request {request_id}" in line]
            if found or time.monotonic() > deadline:
                (line,) = found
                return line
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


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
