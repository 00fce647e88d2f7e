"""Start-up: seconds from launching `edgeway serve` to its first edge answer.

Measured with no config (bundled model only) and with an Anthropic model configured (so that
LiteLLM is needed), next to the cost of `import litellm` alone, which must not be on that path.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from gateway.bench.ports import free_port

BODY = {"model": "auto", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}


def time_to_first_answer(config: Path | None) -> float:
    port = free_port()
    command = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--log-level", "warning"]
    if config is not None:
        command += ["--config", str(config)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < 60:
            try:
                response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=BODY, timeout=10)
                if response.status_code == 200 and response.headers.get("x-edgeway-route") == "edge":
                    return time.perf_counter() - started
            except httpx.HTTPError:
                time.sleep(0.02)
        raise RuntimeError("edgeway did not answer within 60 s")
    finally:
        process.terminate()
        process.wait(timeout=30)


def time_import_litellm() -> float:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import litellm"], check=True, env=env)
    return time.perf_counter() - started


def run(repeat: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "with-anthropic.yaml"
        config.write_text(
            "cloud:\n  models:\n    - {name: claude, provider_model: anthropic/claude-3-5-haiku-latest,"
            " api_key: sk-unused, api_base: 'http://127.0.0.1:9'}\n"
        )
        bare = [time_to_first_answer(None) for _ in range(repeat)]
        with_litellm = [time_to_first_answer(config) for _ in range(repeat)]
    litellm_import = time_import_litellm()
    print(f"{'measure':<52} {'median s':>9} {'max s':>7}")
    print(f"{'launch -> first edge answer, no config':<52} {statistics.median(bare):>9.2f} {max(bare):>7.2f}")
    print(
        f"{'launch -> first edge answer, LiteLLM model configured':<52} "
        f"{statistics.median(with_litellm):>9.2f} {max(with_litellm):>7.2f}"
    )
    label = 'python -c "import litellm" alone'
    print(f"{label:<52} {litellm_import:>9.2f}")
    print(
        f"target: first edge answer within 3.00 s -> {'met' if max(bare + with_litellm) <= 3 else 'MISSED'}; "
        f"edgeway start / litellm import = {statistics.median(with_litellm) / litellm_import:.2f}"
    )
