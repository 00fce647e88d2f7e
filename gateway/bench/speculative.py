"""Speculative decoding on the edge, side by side: the bundled model served three times by one
gateway, plain, with `speculative: {mode: prompt_lookup}` and with `speculative: {mode: draft}`, in
alternating runs. The draft is the bundled model without ten of its thirty layers
(`gateway.bench.draft_model`): no smaller model shares its vocabulary, and an untrained cut agrees
with it on about one token in four, so the draft's figures show the scheduler not losing by a draft
that does not pay, not a gain.

- An answer grounded in its prompt (copying a supplied paragraph) at batch 1: decode tokens/s
  (target >= 1.5x plain).
- An answer that reshapes a list from its prompt (a shopping list numbered, one item a line: the
  items are copied, the separators not) and an open-ended one (a story: little to look up), at
  batch 1 (target >= 0.98x: never slower).
- Eight grounded and eight open-ended requests at once: aggregate tokens/s (target >= 0.98x).
- Whether greedy answers are the same with and without it.
- How many guesses each mode made, and kept.
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

from edge_runtime.gguf import resolve_gguf
from gateway.bench.draft_model import layer_count, skip_middle
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
ITEMS = (
    "apples, bananas, cherries, dates, elderberries, figs, grapes, honeydew melons, kiwis, lemons, mangoes, "
    "nectarines, oranges, papayas, quinces, raspberries"
)
LIST = f"Here is my shopping list: {ITEMS}.\n\nRewrite it as a numbered list, one item per line."
TOKENS = 128
PLAIN, SPECULATIVE, DRAFT = "smollm2", "smollm2-speculative", "smollm2-draft"
SKIPPED_LAYERS = 10


def _body(model: str, content: str, stream: bool) -> dict[str, Any]:
    return {
        "model": model,
        "stream": stream,
        "temperature": 0,
        "max_tokens": TOKENS,
        "messages": [{"role": "user", "content": content}],
        **({"stream_options": {"include_usage": True}} if stream else {}),
    }


async def _decode_rate(port: int, model: str, content: str) -> float:
    """Tokens/s after the first, of one streamed answer."""
    times = await stream_times(port, "/v1/chat/completions", json.dumps(_body(model, content, True)).encode())
    return times.decode_rate()


async def _aggregate(url: str, model: str, content: str, n: int) -> float:
    """Completion tokens/s of `n` requests sent at once."""
    async with httpx.AsyncClient(timeout=600) as client:
        started = time.perf_counter()
        answers = await asyncio.gather(*(client.post(url, json=_body(model, content, False)) for _ in range(n)))
        seconds = time.perf_counter() - started
    return float(sum(a.json()["usage"]["completion_tokens"] for a in answers) / seconds)


async def _same_answers(url: str) -> tuple[int, int, int, int]:
    """Of some greedy answers: how many read the same with and without prompt lookup, with and
    without the draft model, and plain alone and plain beside another request (the control: llama.cpp
    rounds a token differently in a batch of another size or with its cache cells elsewhere, and a
    near tie between two words can go either way, speculation or not)."""
    same = drafted = control = 0
    prompts = (GROUNDED, LIST, OPEN, "Repeat after me: the quick brown fox jumps over the lazy dog, twice.")

    async def answer(client: httpx.AsyncClient, model: str, content: str) -> str:
        reply = await client.post(url, json=_body(model, content, False))
        return str(reply.json()["choices"][0]["message"]["content"])

    async with httpx.AsyncClient(timeout=600) as client:
        for content in prompts:
            plain, spec, draft = [await answer(client, model, content) for model in (PLAIN, SPECULATIVE, DRAFT)]
            beside, _ = await asyncio.gather(answer(client, PLAIN, content), answer(client, PLAIN, OPEN))
            same += plain == spec
            drafted += plain == draft
            control += plain == beside
    return same, drafted, control, len(prompts)


def _guesses(port: int) -> dict[str, tuple[float, float]]:
    """(guessed, kept) tokens of each model, from the gateway's metrics."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    counts: dict[str, list[float]] = {}
    for line in text.splitlines():
        for metric, at in (("edgeway_edge_draft_tokens_kept_total", 1), ("edgeway_edge_draft_tokens_total", 0)):
            if line.startswith(metric + "{"):
                model = line.split('model="', 1)[1].split('"', 1)[0]
                counts.setdefault(model, [0.0, 0.0])[at] = float(line.rsplit(" ", 1)[1])
                break
    return {model: (guessed, kept) for model, (guessed, kept) in counts.items()}


def _alternating(measure: Callable[[str], Coroutine[Any, Any, float]], runs: int) -> list[tuple[float, float, float]]:
    """(plain, prompt lookup, draft) figures, the three taking turns: this machine's speed drifts.
    Each round starts with the next of the three, so that none is always the first after a pause
    (or after the other two): in a fixed order a few per cent moved with the position, not the mode."""
    models = (PLAIN, SPECULATIVE, DRAFT)
    figures = []
    for round_ in range(runs):
        order = models[round_ % 3 :] + models[: round_ % 3]
        measured = {model: asyncio.run(measure(model)) for model in order}
        figures.append((measured[PLAIN], measured[SPECULATIVE], measured[DRAFT]))
    return figures


def run(repeat: int = 6) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        draft = Path(tmp_name) / "draft.gguf"
        skip_middle(resolve_gguf("bundled:smollm2-135m"), draft, SKIPPED_LAYERS)
        config = Path(tmp_name) / "edge.yaml"
        config.write_text(
            "edge:\n  models:\n"
            f"    - {{name: {PLAIN}, n_ctx: 4096, parallel: 8}}\n"
            f"    - {{name: {SPECULATIVE}, n_ctx: 4096, parallel: 8, speculative: {{mode: prompt_lookup}}}}\n"
            f"    - {{name: {DRAFT}, n_ctx: 4096, parallel: 8, speculative: {{mode: draft, draft_gguf: {draft}}}}}\n"
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        ready = {"model": PLAIN, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        gateway = Server("edgeway", port, "/v1/chat/completions", {}, ready)
        try:
            gateway.start(edgeway_command(config, port))
            for model in (SPECULATIVE, DRAFT):  # warm: the step cost is measured
                asyncio.run(_aggregate(url, model, GROUNDED, 1))
            single = _alternating(lambda model: _decode_rate(port, model, GROUNDED), repeat)
            listed = _alternating(lambda model: _decode_rate(port, model, LIST), repeat)
            open1 = _alternating(lambda model: _decode_rate(port, model, OPEN), repeat)
            grounded8 = _alternating(lambda model: _aggregate(url, model, GROUNDED, 8), repeat)
            open8 = _alternating(lambda model: _aggregate(url, model, OPEN, 8), repeat)
            same, drafted, control, asked = asyncio.run(_same_answers(url))
            guesses = _guesses(port)
        finally:
            gateway.stop()
    print(
        f"the bundled model served plain, with prompt-lookup speculation and with a draft model (itself "
        f"without {SKIPPED_LAYERS} of its {layer_count(resolve_gguf('bundled:smollm2-135m'))} layers), "
        f"{TOKENS} tokens an answer; medians of alternating runs"
    )
    print(f"{'case':<40} {'plain':>7} {'lookup':>7} {'ratio':>6} {'target':>7} {'draft':>7} {'ratio':>6}")
    for name, triples, target in (
        ("grounded answer, batch 1 (decode tok/s)", single, ">= 1.50"),
        ("a list reshaped, batch 1 (decode tok/s)", listed, ">= 0.98"),
        ("open-ended answer, batch 1 (decode tok/s)", open1, ">= 0.98"),
        ("8 grounded answers at once (tok/s)", grounded8, ">= 0.98"),
        ("8 open-ended answers at once (tok/s)", open8, ">= 0.98"),
    ):
        plain = statistics.median(p for p, _, _ in triples)
        spec = statistics.median(s for _, s, _ in triples)
        draft_rate = statistics.median(d for _, _, d in triples)
        ratio = statistics.median(s / p for p, s, _ in triples)
        draft_ratio = statistics.median(d / p for p, _, d in triples)
        print(
            f"{name:<40} {plain:>7.1f} {spec:>7.1f} {ratio:>5.2f}x {target:>7} {draft_rate:>7.1f} {draft_ratio:>5.2f}x"
        )
    for model, label in ((SPECULATIVE, "prompt lookup"), (DRAFT, "draft model")):
        guessed, kept = guesses.get(model, (0.0, 0.0))
        share = f"{kept / guessed:.0%}" if guessed else "-"
        print(f"{label}: {guessed:.0f} tokens guessed, {kept:.0f} kept ({share})")
    print(
        f"greedy answers identical to plain: prompt lookup {same} of {asked}, draft model {drafted} of {asked} "
        f"(plain alone against plain beside another request: {control} of {asked})"
    )
