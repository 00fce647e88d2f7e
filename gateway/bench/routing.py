"""What the edge-first stage of `route: auto` costs, side by side on the bundled model:

1. The text prior alone (the 1 ms stage), per request, for conversations of about 100, 1,000 and
   10,000 tokens.
2. An edge-served request's time to first token, on the plain edge route, read first (the probe
   scores the reading and keeps it on the edge, which answers from the same prefill), and read
   first within the policy's default bound (`router.reading_tokens`: a longer prompt's last tokens
   are read, then the whole prompt to answer): the same prompts, alternated, medians.
3. A cloud-bound request's added latency: from queueing it on the edge to the reading's verdict
   (the cloud's own latency comes after it), with the whole prompt read and within the bound, by
   prompt length.

With `--reader GGUF`, what a `role: reader` model (`router: {reader: NAME}`) costs beside it: a
cloud-bound request's added latency is the reader's bounded reading; an edge-served one pays that
reading and then the answering model's own prefill, against the answering model reading first
itself. The reader reads with its fitted probe where one is found (`edge.probes`' default folder),
else with a probe of zeros: one dot product either way, so the times are the same.

Every prompt is new to the edge (each sentence is numbered), so no kept prompt is reused.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from pathlib import Path

import numpy as np

from classifiers import Scorer
from edge_runtime import EdgeEngine, EdgeModelConfig
from edge_runtime.config import ModelRole
from edge_runtime.reading import BUNDLED_PROBES, Gate, Probe, ReadingKind, find_probe, gguf_digest
from edge_runtime.sampling import Sampling
from gateway.bench.classify import conversations, require_data
from gateway.config import EdgeConfig
from gateway.percentiles import percentile
from policies.schema import DEFAULT_READING_TOKENS

LENGTHS = (100, 500, 1000)  # prompt tokens, about
_unique = itertools.count()


def _prompt(engine: EdgeEngine, tokens: int) -> list[int]:
    """A new prompt of about `tokens`: every sentence is numbered with it, so that no stretch of it
    (its start, or the end a bounded reading reads) is in the edge's prompt cache already."""
    number = next(_unique)
    words = "The committee reviewed the quarterly figures and asked for a short summary of the risks"
    sentences = " ".join(f"{words} ({number}.{i})." for i in range(max(1, tokens // 21)))
    return engine.tokenize_chat([{"role": "user", "content": f"{sentences}\nWhat are the main risks?"}])


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


async def _bounded_time_to_first_token(engine: EdgeEngine, prompt: list[int], probe: Probe, bound: int) -> float:
    """As `router.edge.EdgeModel.read_first` with a bound: a longer prompt's end read (and kept),
    then the whole prompt read to answer; a prompt within the bound read first as a whole."""
    if len(prompt) <= bound:
        return await _time_to_first_token(engine, prompt, Gate(probe, lambda _: True))
    started = time.perf_counter()
    end = engine.submit_tokens(prompt[-bound:], Sampling(max_tokens=1, temperature=0), gate=Gate(probe, _away))
    await end.reading()
    return time.perf_counter() - started + await _time_to_first_token(engine, prompt, None)


def _away(score: float) -> bool:
    return False


def _kept(score: float) -> bool:
    return True


async def _edge_first(engine: EdgeEngine, repeat: int, bound: int) -> None:
    probe = find_probe(gguf_digest(engine.gguf_path), [BUNDLED_PROBES])
    assert probe is not None, "the bundled model ships its probe"
    print(f"{'':>13} {'edge-served: time to first token':^44} {'cloud-bound: added':^27}")
    print(
        f"{'prompt tokens':>13} {'plain':>10} {'read first':>10} {'ratio':>6} {f'last {bound}':>11}"
        f" {'whole read':>12} {f'last {bound}':>12}"
    )
    for length in LENGTHS:
        plain, read, bounded, routed, routed_bounded = [], [], [], [], []
        for _ in range(repeat * 3):  # alternated, so drift on a noisy machine lands on each
            plain.append(await _time_to_first_token(engine, _prompt(engine, length), None))
            read.append(await _time_to_first_token(engine, _prompt(engine, length), Gate(probe, _kept)))
            bounded.append(await _bounded_time_to_first_token(engine, _prompt(engine, length), probe, bound))
            routed.append(await _reading_time(engine, _prompt(engine, length), Gate(probe, _away)))
            routed_bounded.append(await _reading_time(engine, _prompt(engine, length)[-bound:], Gate(probe, _away)))
        p, r, b = (statistics.median(found) * 1e3 for found in (plain, read, bounded))
        whole, within = (statistics.median(found) * 1e3 for found in (routed, routed_bounded))
        size = len(_prompt(engine, length))
        print(f"{size:>13} {p:>7.1f} ms {r:>7.1f} ms {r / p:>5.2f}x {b:>8.1f} ms {whole:>9.1f} ms {within:>9.1f} ms")


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


async def _reader(engine: EdgeEngine, reader: EdgeEngine, repeat: int, bound: int) -> None:
    own = find_probe(gguf_digest(engine.gguf_path), [BUNDLED_PROBES])
    probe = find_probe(gguf_digest(reader.gguf_path), [Path(EdgeConfig().probes).expanduser(), BUNDLED_PROBES])
    if probe is None:
        probe = Probe(ReadingKind.LAST, np.zeros(reader.n_vocab, np.float32), 0.0, "")
    assert own is not None, "the bundled model ships its probe"
    print(f"{'':>13} {'edge-served: time to first token':^40} {'cloud-bound: added':^22}")
    print(f"{'prompt tokens':>13} {'own reading':>13} {'the reader':>12} {'ratio':>6} {'own':>10} {'the reader':>11}")
    for length in LENGTHS:
        own_served, read_served, own_routed, read_routed = [], [], [], []
        for _ in range(repeat * 3):  # alternated, so drift on a noisy machine lands on each
            own_served.append(await _bounded_time_to_first_token(engine, _prompt(engine, length), own, bound))
            read = await _reading_time(reader, _prompt(reader, length)[-bound:], Gate(probe, _away))
            read_served.append(read + await _time_to_first_token(engine, _prompt(engine, length), None))
            own_routed.append(await _reading_time(engine, _prompt(engine, length)[-bound:], Gate(own, _away)))
            read_routed.append(await _reading_time(reader, _prompt(reader, length)[-bound:], Gate(probe, _away)))
        o, r, a, b = (statistics.median(found) * 1e3 for found in (own_served, read_served, own_routed, read_routed))
        size = len(_prompt(engine, length))
        print(f"{size:>13} {o:>10.1f} ms {r:>9.1f} ms {r / o:>5.2f}x {a:>7.1f} ms {b:>8.1f} ms")


def run(repeat: int = 3, reader: str | None = None) -> None:
    require_data()
    _text_prior(repeat)
    engine = EdgeEngine(EdgeModelConfig(n_ctx=4096, parallel=4))
    engine.load()
    try:
        print("\nthe edge reads first (bundled model, its shipped probe): edge-served and cloud-bound requests")
        asyncio.run(_edge_first(engine, repeat, DEFAULT_READING_TOKENS))
        if reader is not None:
            _beside(engine, reader, repeat)
    finally:
        engine.close()
    print(f"(numpy {np.__version__}; medians of {repeat * 3} runs each)")


def _beside(engine: EdgeEngine, gguf: str, repeat: int) -> None:
    reader = EdgeEngine(EdgeModelConfig(name="reader", gguf=gguf, parallel=1, role=ModelRole.READER))
    reader.load()
    try:
        print(f"\n{reader.gguf_path.name} reads for the bundled model (`role: reader`): the same requests")
        asyncio.run(_reader(engine, reader, repeat, DEFAULT_READING_TOKENS))
    finally:
        reader.close()
