"""Head-of-line blocking on the edge: a short request's time to first token alone and beside a
4,500-token prompt being read, and what reading around the short requests costs the long prompt.

Ten short requests in a row (each after the last has its answer), alone; then the long prompt is
sent, and once it is being read, ten more. The figure is the slowest of each ten (a short request
that lands while a long chunk is being read waits for the step to be cut, and its own step reads
attention over a cache that holds the long prompt), and their ratio (target <= 1.5x).
The long prompt's own time to first token is taken alone and beside the short requests.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from gateway.bench.overhead import Server, edgeway_command
from gateway.bench.ports import free_port
from gateway.bench.wire import timed_stream

SHORT = "Say hello."
LONG = "Summarize this log. " + "The harbor light turned on at dusk and the ships came home. " * 340
IN_A_ROW = 10
N_CTX = 8192  # the long prompt and the short requests beside it


@dataclass(frozen=True)
class HeadOfLine:
    alone: list[float]  # the short requests' times to first token, seconds
    beside: list[float]
    long_alone: float  # the long prompt's time to first token, alone
    long_beside: float  # and beside the short requests
    long_tokens: int
    cuts: int = 0  # steps the short requests cut
    cut_wait_ms: float | None = None  # their median wait, from a short request's asking to the cut


async def _first_token(client: httpx.AsyncClient, url: str, content: str) -> tuple[float, int]:
    """(time to first token, prompt tokens) of one streamed greedy request."""
    body = {
        "model": "smollm2",
        "stream": True,
        "temperature": 0,
        "max_tokens": 4,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": content}],
    }
    times = await timed_stream(client, url, body)
    return (times.first or time.perf_counter()) - times.started, times.usage["prompt_tokens"] if times.usage else 0


async def _in_a_row(client: httpx.AsyncClient, url: str) -> list[float]:
    return [(await _first_token(client, url, SHORT))[0] for _ in range(IN_A_ROW)]


async def measure(url: str) -> HeadOfLine:
    """The figures against the gateway at `url` (its chat completions endpoint), serving the
    bundled model with room for the long prompt (`N_CTX`)."""
    async with httpx.AsyncClient(timeout=900) as client:
        await _in_a_row(client, url)  # warm: templates, the cache of the short prompt
        alone = await _in_a_row(client, url)
        long_alone, _ = await _first_token(client, url, LONG)
        # The long prompt again, with a word changed up front, so that no cached prefix is reused.
        long_task = asyncio.ensure_future(_first_token(client, url, "Now " + LONG))
        await asyncio.sleep(0.5)  # being read
        beside = await _in_a_row(client, url)
        long_beside, long_tokens = await long_task
        if long_beside < sum(beside):
            raise RuntimeError("the long prompt was read before the short requests were done: make it longer")
        edge = (await client.get(url.replace("/v1/chat/completions", "/readyz"))).json()["edge"][0]
    return HeadOfLine(alone, beside, long_alone, long_beside, long_tokens, edge["cuts"], edge["cut_wait_ms"])


def report(figures: HeadOfLine) -> None:
    worst_alone, worst_beside = max(figures.alone) * 1e3, max(figures.beside) * 1e3
    print(
        f"head-of-line: a short request's time to first token, the slowest of {IN_A_ROW} in a row: "
        f"{worst_alone:.0f} ms alone, {worst_beside:.0f} ms beside a {figures.long_tokens:,}-token prompt being "
        f"read: {worst_beside / worst_alone:.2f}x (target <= 1.5x); p50 {statistics.median(figures.alone) * 1e3:.0f} "
        f"/ {statistics.median(figures.beside) * 1e3:.0f} ms"
    )
    print(
        f"the long prompt's own first token: {figures.long_alone:.1f} s alone, {figures.long_beside:.1f} s beside "
        f"the short requests ({figures.long_beside / figures.long_alone:.2f}x; target <= 1.10x)"
    )
    if figures.cut_wait_ms is not None:
        floor = statistics.median(figures.alone) * 1e3 + figures.cut_wait_ms
        print(
            f"the floor beside it: a short request's own first token alone (p50 "
            f"{statistics.median(figures.alone) * 1e3:.0f} ms) and the wait for the step in flight to be cut "
            f"(median {figures.cut_wait_ms:.1f} ms over {figures.cuts} cuts) = {floor:.0f} ms; p50 beside "
            f"{statistics.median(figures.beside) * 1e3:.0f} ms ({statistics.median(figures.beside) * 1e3 / floor:.2f}x "
            f"the floor)"
        )


@contextmanager
def edge_gateway(parallel: int, second: str | None = None) -> Iterator[int]:
    """An edgeway process serving the bundled model (room for the long prompt), and the bundled
    model again under the name `second` where one is given; its port."""
    with tempfile.TemporaryDirectory() as tmp_name:
        config = Path(tmp_name) / "edge.yaml"
        models = f"    - {{name: smollm2, n_ctx: {N_CTX}, parallel: {parallel}}}\n"
        if second is not None:
            models += f"    - {{name: {second}, n_ctx: 2048, parallel: 1}}\n"
        config.write_text(f"edge:\n  models:\n{models}")
        port = free_port()
        ready = {"model": "smollm2", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        gateway = Server("edgeway", port, "/v1/chat/completions", {}, ready)
        try:
            gateway.start(edgeway_command(config, port))
            yield port
        finally:
            gateway.stop()


def run(repeat: int = 1) -> None:
    with edge_gateway(parallel=4) as port:
        for _ in range(repeat):
            report(asyncio.run(measure(f"http://127.0.0.1:{port}/v1/chat/completions")))
