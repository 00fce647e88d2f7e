"""Load and soak: a mixed workload at a fixed rate for a bounded time, on loopback.

Edge and cloud routes, streamed and not, and some invalid requests (which must get their 400),
against one edgeway process and the fixed-answer upstream. Reports throughput, latency p50/p99
per kind, unexpected errors, and edgeway's resident memory sampled over the run; the goal is no
unexpected error and under 10% memory growth after the warm-up.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gateway.bench.overhead import APP_KEY, Server, _rss_mb, edgeway_command, upstream_command, write_configs
from gateway.bench.ports import free_port
from gateway.bench.wire import _read_response

KINDS: dict[str, tuple[dict[str, Any], int]] = {  # name: (body, expected status), mixed in this proportion
    "cloud": (
        {"model": "auto", "max_tokens": 16, "messages": [{"role": "user", "content": "Capital of France?"}]},
        200,
    ),
    "cloud-stream": (
        {
            "model": "auto",
            "stream": True,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "Capital of France?"}],
        },
        200,
    ),
    "edge": ({"model": "smollm2", "max_tokens": 4, "messages": [{"role": "user", "content": "Say hi."}]}, 200),
    "edge-stream": (
        {"model": "smollm2", "stream": True, "max_tokens": 4, "messages": [{"role": "user", "content": "Say hi."}]},
        200,
    ),
    "invalid": ({"model": "auto", "messages": []}, 400),
}
MIX = ["cloud"] * 5 + ["cloud-stream"] * 3 + ["edge"] + ["edge-stream"] + ["invalid"]


async def _one(
    port: int, kind: str, results: dict[str, list[Any]], connections: asyncio.Queue[tuple[Any, Any]]
) -> None:
    body, expected = KINDS[kind]
    payload = json.dumps(body).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer {APP_KEY}\r\ncontent-length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    reader, writer = await connections.get()
    started = time.perf_counter()
    try:
        writer.write(request)
        status = await asyncio.wait_for(_read_response(reader), timeout=60)
        results[kind].append(time.perf_counter() - started)
        if status != expected:
            results["unexpected"].append(f"{kind}: HTTP {status}")
        await connections.put((reader, writer))
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
        results["unexpected"].append(f"{kind}: {type(exc).__name__}")
        writer.close()
        await connections.put(await asyncio.open_connection("127.0.0.1", port))


async def _drive(port: int, rate: float, seconds: float, pid: int, samples: list[Any]) -> dict[str, Any]:
    results: dict[str, Any] = {kind: [] for kind in KINDS} | {"unexpected": []}
    connections: asyncio.Queue[tuple[Any, Any]] = asyncio.Queue()
    for _ in range(64):
        await connections.put(await asyncio.open_connection("127.0.0.1", port))
    tasks, kinds = [], itertools.cycle(MIX)
    started = time.perf_counter()
    next_sample = started
    for n in itertools.count():
        due = started + n / rate
        now = time.perf_counter()
        if due - started >= seconds:
            break
        if now >= next_sample:
            samples.append((now - started, _rss_mb(pid)))
            next_sample += 5
        if due > now:
            await asyncio.sleep(due - now)
        tasks.append(asyncio.create_task(_one(port, next(kinds), results, connections)))
    await asyncio.gather(*tasks)
    results["seconds"] = time.perf_counter() - started
    samples.append((results["seconds"], _rss_mb(pid)))
    return results


def run(repeat: int = 2, rate: float = 40.0) -> None:
    """`repeat` minutes at `rate` requests/s."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        edgeway_config, _ = write_configs(tmp, upstream_port)
        upstream = Server("direct", upstream_port, "/v1/chat/completions", {}, {"model": "bench", "messages": []})
        edgeway = Server(
            "edgeway", free_port(), "/v1/chat/completions", {"authorization": f"Bearer {APP_KEY}"}, KINDS["cloud"][0]
        )
        try:
            upstream.start(upstream_command(upstream_port))
            edgeway.start(edgeway_command(edgeway_config, edgeway.port))
            samples: list[tuple[float, float]] = []
            assert edgeway.process is not None  # started above
            results = asyncio.run(_drive(edgeway.port, rate, repeat * 60, edgeway.process.pid, samples))
        finally:
            edgeway.stop()
            upstream.stop()
    total = sum(len(results[k]) for k in KINDS)
    print(
        f"{repeat} min at {rate:g} requests/s: {total} requests in {results['seconds']:.0f} s, "
        f"{total / results['seconds']:.1f} requests/s, {len(results['unexpected'])} unexpected"
    )
    print(f"{'kind':<14} {'count':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for kind in KINDS:
        times = sorted(results[kind])
        if times:
            print(
                f"{kind:<14} {len(times):>6} {statistics.median(times) * 1e3:>8.1f} "
                f"{times[min(len(times) - 1, int(0.99 * len(times)))] * 1e3:>8.1f}"
            )
    for problem in sorted(set(results["unexpected"]))[:10]:
        print(f"  unexpected: {problem} (x{results['unexpected'].count(problem)})")
    warm = [rss for t, rss in samples if t >= 30] or [rss for _, rss in samples]
    print("resident memory (MB) over time: " + ", ".join(f"{t:.0f}s {rss:.0f}" for t, rss in samples[::2]))
    growth = (warm[-1] - warm[0]) / warm[0] * 100 if warm else float("nan")
    print(f"growth after the 30 s warm-up: {growth:+.1f}% (goal: under 10%)")
