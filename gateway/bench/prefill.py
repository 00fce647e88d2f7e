"""Prefill against raw llama.cpp, in one process: the same fresh prompts read by `llama_cpp.Llama.eval`
(llama.cpp's own batching: `n_batch` tokens a decode) and by the edge runtime (`EdgeEngine`, its
first token), taking turns, so that the machine's noise falls on both alike.

Each trial's prompt starts with its own number, so that neither side has any of it cached: the
engine keeps a finished prompt's cells for a request that starts the same way, and `Llama.eval`
after `reset` reads from the start. The edge's time is to its first token (the prompt read, one
token sampled and handed to the event loop); raw llama.cpp's is the read alone, its logits ready.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

from edge_runtime import EdgeEngine, EdgeModelConfig, Sampling
from edge_runtime.gguf import resolve_gguf
from edge_runtime.plan import N_BATCH
from edge_runtime.threads import thread_count

LENGTHS = (100, 500, 2000)
TEXT = (
    "The harbor light turned on at dusk and the ships came home one by one, their lanterns swinging "
    "over the water while the keeper wrote each name in the log. "
) * 80
N_CTX = 4096


@dataclass(frozen=True)
class Prefill:
    tokens: int
    raw_s: list[float]  # each trial's seconds, raw llama.cpp
    edge_s: list[float]  # and the edge runtime's, in the same order

    @property
    def ratio(self) -> float:
        """Raw llama.cpp's time over the edge's, the median of the trials' (>= 1: the edge as fast)."""
        return statistics.median(r / e for r, e in zip(self.raw_s, self.edge_s, strict=True))


def measure(lengths: tuple[int, ...] = LENGTHS, repeat: int = 3) -> list[Prefill]:
    import llama_cpp

    path = str(resolve_gguf("bundled:smollm2-135m"))
    threads = thread_count(None)
    raw = llama_cpp.Llama(
        model_path=path, n_ctx=N_CTX, n_batch=N_BATCH, n_threads=threads, n_threads_batch=threads, verbose=False
    )
    engine = EdgeEngine(EdgeModelConfig(n_ctx=N_CTX, parallel=2))
    engine.load()
    try:
        found = []
        trial = 0
        for length in lengths:
            raw_s: list[float] = []
            edge_s: list[float] = []
            for rep in range(repeat):
                sides = [("raw", raw_s), ("edge", edge_s)]
                for side, times in sides if rep % 2 == 0 else sides[::-1]:
                    trial += 1
                    prompt = engine.tokenize_text(f"Log {trial}. {TEXT}")[:length]
                    times.append(_raw(raw, prompt) if side == "raw" else asyncio.run(_edge(engine, prompt)))
            found.append(Prefill(length, raw_s, edge_s))
        return found
    finally:
        engine.close()
        raw.close()


def _raw(llama: object, prompt: list[int]) -> float:
    llama.reset()  # type: ignore[attr-defined]
    started = time.perf_counter()
    llama.eval(prompt)  # type: ignore[attr-defined]
    return time.perf_counter() - started


async def _edge(engine: EdgeEngine, prompt: list[int]) -> float:
    started = time.perf_counter()
    generation = engine.submit_tokens(prompt, Sampling(max_tokens=1, temperature=0))
    async for _ in generation.text():
        break
    took = time.perf_counter() - started
    generation.cancel()
    return took


def report(found: list[Prefill]) -> None:
    print("prefill, fresh prompts, raw llama.cpp (Llama.eval) and the edge runtime taking turns in one process:")
    print(f"{'tokens':>7} {'raw s':>8} {'edge s':>8} {'raw/edge':>9}   (median of trials; target >= 0.95)")
    for p in found:
        print(
            f"{p.tokens:>7} {statistics.median(p.raw_s):>8.3f} {statistics.median(p.edge_s):>8.3f} {p.ratio:>9.2f}   "
            f"trials {', '.join(f'{r / e:.2f}' for r, e in zip(p.raw_s, p.edge_s, strict=True))}"
        )


def run(repeat: int = 3) -> None:
    report(measure(repeat=repeat))
