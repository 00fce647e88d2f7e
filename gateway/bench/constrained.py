"""Constrained decoding on the edge: an answer under a JSON schema's grammar and one under any
JSON's, with the grammar checked against each drawn token (`edge_runtime.sampler`, as served)
beside the grammar applied to every candidate before each draw, in alternating rounds on one
engine. Greedy, so both write the same tokens: the bench checks that they do, and the figure
is their decode rate (tokens after the first, over the time after the first).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

from edge_runtime import EdgeEngine, EdgeModelConfig
from edge_runtime.grammar import json_grammar
from edge_runtime.sampling import Sampling

MAX_TOKENS = 96
RECORD = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "city": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "notes": {"type": "string"},
    },
    "required": ["name", "city", "tags", "notes"],
    "additionalProperties": False,
}
CASES = {
    "JSON schema": (
        "Describe a lighthouse keeper as a JSON record: her name, her city, three tags and long notes.",
        json_grammar(RECORD),
    ),
    "any JSON": ("List the planets of the solar system with one fact each, as JSON.", json_grammar(None)),
}


@dataclass(frozen=True)
class Rate:
    tokens: int
    per_s: float
    text: str


async def _decode(engine: EdgeEngine, ask: str, grammar: str) -> Rate:
    generation = engine.submit(
        [{"role": "user", "content": ask}], Sampling(max_tokens=MAX_TOKENS, temperature=0, grammar=grammar)
    )
    text, first = "", 0.0
    async for piece in generation.text():
        if not first:
            first = time.perf_counter()
        text += piece
    ended = time.perf_counter()
    tokens = generation.completion_tokens
    return Rate(tokens, (tokens - 1) / (ended - first) if tokens > 1 and ended > first else 0.0, text)


def run(repeat: int = 5) -> None:
    engine = EdgeEngine(EdgeModelConfig(name="smollm2", n_ctx=2048))
    engine.load()
    scheduler = engine._scheduler
    assert scheduler is not None
    try:
        print(
            "constrained decoding, greedy, the grammar checked after each draw (served) against applied "
            f"to every candidate first; {repeat} alternating rounds, medians:"
        )
        for name, (ask, grammar) in CASES.items():
            checked: list[Rate] = []
            first: list[Rate] = []
            for _ in range(repeat):
                for grammar_first, found in ((True, first), (False, checked)):
                    scheduler.grammar_first = grammar_first
                    found.append(asyncio.run(_decode(engine, ask, grammar)))
            assert {r.text for r in checked} == {r.text for r in first}, "the two draws wrote different answers"
            ours, theirs = statistics.median(r.per_s for r in checked), statistics.median(r.per_s for r in first)
            ratios = ", ".join(f"{c.per_s / f.per_s:.2f}" for c, f in zip(checked, first, strict=True))
            print(
                f"  {name}: {checked[0].tokens} tokens, the same in both; checked after the draw {ours:.1f} "
                f"tokens/s, applied first {theirs:.1f}: {ours / theirs:.2f}x (rounds: {ratios})"
            )
    finally:
        scheduler.grammar_first = False
        engine.close()
