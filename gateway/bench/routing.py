"""What the edge-first stage of `route: auto` costs, side by side on the bundled model:

1. The text prior alone (the 1 ms stage), per request, for conversations of about 100, 1,000 and
   10,000 tokens.
2. An edge-served request's time to first token, on the plain edge route and read first (the probe
   scores the reading and keeps it on the edge): the same prompts, alternated, medians.
3. A cloud-bound request's added latency: from queueing it on the edge to the reading's verdict
   (one prefill; the cloud's own latency comes after it), by prompt length.

Every prompt is new to the edge (its start is made unique), so no kept prompt is reused.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time

import numpy as np

from classifiers import Scorer
from edge_runtime import EdgeEngine, EdgeModelConfig
from edge_runtime.reading import BUNDLED_PROBES, Gate, find_probe, gguf_digest
from edge_runtime.sampling import Sampling
from gateway.bench.classify import conversations
from gateway.percentiles import percentile

LENGTHS = (100, 500, 1000)  # prompt tokens, about
_unique = itertools.count()


def _prompt(engine: EdgeEngine, tokens: int) -> list[int]:
    words = "The committee reviewed the quarterly figures and asked for a short summary of the risks. "
    text = f"[{next(_unique)}] " + words * max(1, tokens // 17) + "\nWhat are the main risks?"
    return engine.tokenize_chat([{"role": "user", "content": text}])


async def _time_to_first_token(engine: EdgeEngine, prompt: list[int], gate: Gate | None) -> float:
    started = time.perf_counter()
    generation = engine.submit_tokens(prompt, Sampling(max_tokens=1, temperature=0), gate=gate)
    async for _ in generation.text():
        break
    elapsed = time.perf_counter() - started
    generation.cancel()
    return elapsed


async def _reading_time(engine: EdgeEngine, prompt: list[int], gate: Gate) -> float:
    started = time.perf_counter()
    generation = engine.submit_tokens(prompt, Sampling(max_tokens=1, temperature=0), gate=gate)
    await generation.reading()
    elapsed = time.perf_counter() - started
    async for _ in generation.text():
        pass
    return elapsed


async def _edge_first(engine: EdgeEngine, repeat: int) -> None:
    probe = find_probe(gguf_digest(engine.gguf_path), [BUNDLED_PROBES])
    assert probe is not None, "the bundled model ships its probe"
    keep, away = Gate(probe, lambda _: True), Gate(probe, lambda _: False)
    print(f"{'prompt tokens':>13} {'TTFT plain':>11} {'read first':>11} {'ratio':>6} {'cloud-bound: reading':>21}")
    for length in LENGTHS:
        plain, read, routed = [], [], []
        for _ in range(repeat * 3):  # alternated, so drift on a noisy machine lands on both
            plain.append(await _time_to_first_token(engine, _prompt(engine, length), None))
            read.append(await _time_to_first_token(engine, _prompt(engine, length), Gate(probe, keep.keep)))
            routed.append(await _reading_time(engine, _prompt(engine, length), Gate(probe, away.keep)))
        p, r = statistics.median(plain) * 1e3, statistics.median(read) * 1e3
        size = len(_prompt(engine, length))
        print(f"{size:>13} {p:>9.1f} ms {r:>8.1f} ms {r / p:>5.2f}x {statistics.median(routed) * 1e3:>18.1f} ms")


def _text_prior(repeat: int) -> None:
    scorer = Scorer()
    print("the text prior alone (Signals.complexity), one request")
    print(f"{'tokens':>7} {'p50':>9} {'p99':>9}")
    for size in (100, 1_000, 10_000):
        samples = conversations(size, 40, scorer.tokens.estimate)
        found = []
        for _ in range(repeat * 5):
            for messages in samples:
                signals = scorer.signals(messages)
                started = time.perf_counter()
                _ = signals.complexity
                found.append(time.perf_counter() - started)
        print(f"{size:>7} {statistics.median(found) * 1e3:>7.3f} ms {percentile(found, 0.99) * 1e3:>7.3f} ms")


def run(repeat: int = 3) -> None:
    _text_prior(repeat)
    engine = EdgeEngine(EdgeModelConfig(n_ctx=4096, parallel=4))
    engine.load()
    try:
        print("\nthe edge reads first (bundled model, its shipped probe): edge-served and cloud-bound requests")
        asyncio.run(_edge_first(engine, repeat))
    finally:
        engine.close()
    print(f"(numpy {np.__version__}; medians of {repeat * 3} runs each)")
