"""Speculative decoding on the edge, side by side: the bundled model served twice by one gateway,
once plain and once with `speculative: {mode: prompt_lookup}`, in alternating runs.

- An answer grounded in its prompt (copying a supplied paragraph) at batch 1: decode tokens/s
  (target >= 1.5x plain).
- Eight such requests at once: aggregate tokens/s (target >= 0.95x).
- Eight open-ended requests at once (a story: little to look up): aggregate tokens/s
  (target >= 0.98x).
- Whether greedy answers are the same with and without it.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx

from gateway.bench.overhead import Server, edgeway_command
from gateway.bench.ports import free_port
from gateway.bench.wire import stream_times

PARAGRAPH = (
    "The lighthouse at Point Reyes was built in 1870 and stands on a rocky headland about 300 feet above "
    "the Pacific Ocean. Its first-order Fresnel lens, made in France, has 24 panels and more than 1,000 "
    "pieces of glass. Keepers climbed 308 steps each night to wind the clockwork that turned the lens, and "
    "in foggy weather they ran a steam whistle that could be heard for miles along the coast."
)
GROUNDED = f"Copy the following paragraph exactly, word for word, and nothing else:\n\n{PARAGRAPH}"
OPEN = "Write a long story about a lighthouse keeper and the ships she guides."
TOKENS = 128
PLAIN, SPECULATIVE = "smollm2", "smollm2-speculative"


def _body(model: str, content: str, stream: bool) -> dict:
    return {
        "model": model,
        "stream": stream,
        "temperature": 0,
        "max_tokens": TOKENS,
        "messages": [{"role": "user", "content": content}],
        **({"stream_options": {"include_usage": True}} if stream else {}),
    }


async def _decode_rate(port: int, model: str) -> float:
    """Tokens/s after the first, of one streamed grounded answer."""
    times = await stream_times(port, "/v1/chat/completions", json.dumps(_body(model, GROUNDED, True)).encode())
    if times.first is None or times.last is None or times.last <= times.first or not times.usage:
        return float("nan")
    return (times.usage["completion_tokens"] - 1) / (times.last - times.first)


async def _aggregate(url: str, model: str, content: str, n: int) -> float:
    """Completion tokens/s of `n` requests sent at once."""
    async with httpx.AsyncClient(timeout=600) as client:
        started = time.perf_counter()
        answers = await asyncio.gather(*(client.post(url, json=_body(model, content, False)) for _ in range(n)))
        seconds = time.perf_counter() - started
    return sum(a.json()["usage"]["completion_tokens"] for a in answers) / seconds


async def _same_answers(url: str) -> tuple[int, int, int]:
    """Of some greedy answers: how many read the same with and without speculation, and how many
    read the same plain twice (a prompt read in a batch or partly from the prompt cache may round
    differently: the control)."""
    same = control = 0
    prompts = (GROUNDED, OPEN, "Repeat after me: the quick brown fox jumps over the lazy dog, twice.")
    async with httpx.AsyncClient(timeout=600) as client:
        for content in prompts:
            plain, spec, again = [
                (await client.post(url, json=_body(model, content, False))).json()["choices"][0]["message"]["content"]
                for model in (PLAIN, SPECULATIVE, PLAIN)
            ]
            same += plain == spec
            control += plain == again
    return same, control, len(prompts)


def _alternating(measure: Callable[[str], Coroutine[Any, Any, float]], runs: int) -> list[tuple[float, float]]:
    """(plain, speculative) figures, the two taking turns: this machine's speed drifts."""
    return [(asyncio.run(measure(PLAIN)), asyncio.run(measure(SPECULATIVE))) for _ in range(runs)]


def run(repeat: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        config = Path(tmp_name) / "edge.yaml"
        config.write_text(
            "edge:\n  models:\n"
            f"    - {{name: {PLAIN}, n_ctx: 4096, parallel: 8}}\n"
            f"    - {{name: {SPECULATIVE}, n_ctx: 4096, parallel: 8, speculative: {{mode: prompt_lookup}}}}\n"
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        ready = {"model": PLAIN, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        gateway = Server("edgeway", port, "/v1/chat/completions", {}, ready)
        try:
            gateway.start(edgeway_command(config, port))
            asyncio.run(_aggregate(url, SPECULATIVE, GROUNDED, 1))  # warm: the step cost is measured
            single = _alternating(lambda model: _decode_rate(port, model), repeat)
            grounded8 = _alternating(lambda model: _aggregate(url, model, GROUNDED, 8), repeat)
            open8 = _alternating(lambda model: _aggregate(url, model, OPEN, 8), repeat)
            same, control, asked = asyncio.run(_same_answers(url))
        finally:
            gateway.stop()
    print(
        f"the bundled model served plain and with prompt-lookup speculation, {TOKENS} tokens an answer; "
        "medians of alternating runs"
    )
    print(f"{'case':<44} {'plain':>8} {'speculative':>12} {'ratio':>7} {'target':>8}")
    for name, pairs, target in (
        ("grounded answer, batch 1 (decode tok/s)", single, ">= 1.50"),
        ("8 grounded answers at once (tok/s)", grounded8, ">= 0.95"),
        ("8 open-ended answers at once (tok/s)", open8, ">= 0.98"),
    ):
        plain = statistics.median(p for p, _ in pairs)
        spec = statistics.median(s for _, s in pairs)
        ratio = statistics.median(s / p for p, s in pairs)
        print(f"{name:<44} {plain:>8.1f} {spec:>12.1f} {ratio:>6.2f}x {target:>8}")
    print(
        f"greedy answers identical with and without speculation: {same} of {asked} "
        f"(plain against itself: {control} of {asked})"
    )
