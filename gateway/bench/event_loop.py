"""The event loop while the largest allowed body is handled: /healthz latency, polled from a
process of its own, first with the gateway idle and then while one request of 4 MiB in 1,024
messages (the defaults of `server.max_body_bytes` and `server.max_messages`) is parsed, scanned,
templated and served, for either tier. The target: the slowest /healthz under 100 ms.

The edge request is far longer than the bundled model's context, so it is refused (400) after
all of it is read and scanned; the cloud one goes to the fixed-answer upstream.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from gateway.bench.overhead import APP_KEY, Server, edgeway_command, upstream_command, write_configs
from gateway.bench.ports import free_port

MAX_BODY = 4 * 1024 * 1024
MAX_MESSAGES = 1024
TARGET_MS = 100.0
# Words and numbers for the scan to read, nothing the bench policy keeps local.
CLOUD_SENTENCE = "Invoice 4471 covers 12 crates shipped to the north warehouse on Monday at 10:30. "
EDGE_SENTENCE = "Jane Roe of 12 Main Street called 555 0100 about invoice 4471. "

POLLER = """
import sys, time, httpx
with httpx.Client(base_url=sys.argv[1], timeout=30) as client:
    while True:
        started = time.perf_counter()
        status = client.get("/healthz").status_code
        print(status, time.time(), time.perf_counter() - started, flush=True)
        time.sleep(0.01)
"""


def largest_body(model: str, sentence: str) -> bytes:
    """As many messages as allowed, as much text as allowed, none of it seen before."""
    room = (MAX_BODY - 300) // MAX_MESSAGES - len(json.dumps({"role": "user", "content": ""})) - 2
    text = sentence * (room // len(sentence) - 1)
    messages = [{"role": "user", "content": f"{i:06d} {text}"} for i in range(MAX_MESSAGES)]
    return json.dumps({"model": model, "max_tokens": 4, "messages": messages}).encode()


def healthz_while(url: str, body: bytes | None) -> tuple[list[float], int, float]:
    """/healthz latencies (seconds) while `body` is handled (or for two quiet seconds), with the
    request's status and how long it took."""
    poller = subprocess.Popen([sys.executable, "-c", POLLER, url], stdout=subprocess.PIPE, text=True)
    status, took = 0, 0.0
    try:
        time.sleep(1.0)  # the poller's imports and its first connection
        started_at, started = time.time(), time.perf_counter()
        if body is None:
            time.sleep(2.0)
        else:
            headers = {"authorization": f"Bearer {APP_KEY}", "content-type": "application/json"}
            status = httpx.post(url + "/v1/chat/completions", content=body, headers=headers, timeout=300).status_code
        took, ended_at = time.perf_counter() - started, time.time()
    finally:
        poller.terminate()
        out, _ = poller.communicate(timeout=10)
    latencies = []
    for line in out.splitlines():
        answered, at, seconds = line.split()
        if answered != "200":
            raise RuntimeError(f"/healthz answered {answered}")
        if started_at <= float(at) <= ended_at + float(seconds):
            latencies.append(float(seconds))
    return latencies, status, took


def run(repeat: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        config, _ = write_configs(tmp, upstream_port)
        upstream = Server("upstream", upstream_port, "/v1/chat/completions", {}, {"model": "bench", "messages": []})
        body = {"model": "bench", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
        edgeway = Server("edgeway", free_port(), "/v1/chat/completions", {"authorization": f"Bearer {APP_KEY}"}, body)
        try:
            upstream.start(upstream_command(upstream_port))
            edgeway.start(edgeway_command(config, edgeway.port))
            url = f"http://127.0.0.1:{edgeway.port}"
            cases = {
                "idle": None,
                "cloud, 4 MiB": largest_body("bench", CLOUD_SENTENCE),
                "edge, 4 MiB": largest_body("smollm2", EDGE_SENTENCE),
            }
            print(f"/healthz while the largest allowed body is handled ({repeat} rounds, medians)")
            print(f"target: the slowest under {TARGET_MS:g} ms")
            print(
                f"{'case':<14} {'status':>6} {'request s':>9} {'polls':>6} {'p50 ms':>7} {'max ms':>7} {'max/idle':>8}"
            )
            idle_max = 0.0
            for name, payload in cases.items():
                rounds = [healthz_while(url, payload) for _ in range(repeat)]
                p50 = statistics.median(statistics.median(r[0]) for r in rounds) * 1e3
                worst = statistics.median(max(r[0]) for r in rounds) * 1e3
                idle_max = idle_max or worst
                polls = statistics.median(len(r[0]) for r in rounds)
                took = statistics.median(r[2] for r in rounds)
                status = rounds[-1][1] or "-"
                verdict = "" if worst < TARGET_MS else "  over target"
                print(
                    f"{name:<14} {status!s:>6} {took:>9.2f} {polls:>6.0f} {p50:>7.1f} {worst:>7.1f} "
                    f"{worst / idle_max:>7.1f}x{verdict}"
                )
        finally:
            edgeway.stop()
            upstream.stop()
