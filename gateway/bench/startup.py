"""Start-up: seconds from launching `edgeway serve` to its first edge answer.

Measured with no config (bundled model only), with an Anthropic model configured (reached directly:
no LiteLLM), and with a model reached through LiteLLM (Gemini), whose import the gateway makes
beside the edge model's load and before it is ready, so that no first request waits for it; next
to the cost of `import litellm` alone.
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
        anthropic, gemini = Path(tmp) / "with-anthropic.yaml", Path(tmp) / "with-gemini.yaml"
        anthropic.write_text(
            "cloud:\n  models:\n    - {name: claude, provider_model: anthropic/claude-3-5-haiku-latest,"
            " api_key: sk-unused, api_base: 'http://127.0.0.1:9'}\n"
        )
        gemini.write_text(
            "cloud:\n  models:\n    - {name: gemini, provider_model: gemini/gemini-2.5-flash, api_key: sk-unused}\n"
        )
        bare = [time_to_first_answer(None) for _ in range(repeat)]
        direct = [time_to_first_answer(anthropic) for _ in range(repeat)]
        through_litellm = [time_to_first_answer(gemini) for _ in range(repeat)]
    litellm_import = time_import_litellm()
    print(f"{'measure':<62} {'median s':>9} {'max s':>7}")
    for label, times in (
        ("launch -> first edge answer, no config", bare),
        ("launch -> first edge answer, an Anthropic model configured", direct),
        ("launch -> first edge answer, a LiteLLM model configured", through_litellm),
    ):
        print(f"{label:<62} {statistics.median(times):>9.2f} {max(times):>7.2f}")
    label = 'python -c "import litellm" alone'
    print(f"{label:<62} {litellm_import:>9.2f}")
    ratio = statistics.median(through_litellm) / litellm_import
    print(
        f"target: first edge answer within 3.00 s without a LiteLLM model -> "
        f"{'met' if max(bare + direct) <= 3 else 'MISSED'}; with one, ready once LiteLLM is imported "
        f"(its first request waits for nothing): start / import = {ratio:.2f}"
    )
