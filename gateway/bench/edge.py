"""The edge runtime against llama.cpp itself, in one run.

- Prefill: the same fresh prompts of 100, 500 and 2,000 tokens read by raw llama.cpp and by the
  edge runtime, taking turns in one process (`gateway.bench.prefill`).
- Raw llama.cpp through its low-level API (one `llama_decode` over N sequences per step, greedy,
  no HTTP): the ceiling for decode and prefill on this machine.
- edgeway over HTTP, streaming: single-stream decode rate, and aggregate tokens/s with 1, 2, 4 and
  8 concurrent streams, against the same N served one after another and against raw.
- Head-of-line: a short request's time to first token alone and beside a 4,500-token prompt being
  read (`gateway.bench.head_of_line`).
- A second edge model in the same process: the first one's single-stream decode before the second
  has answered anything and after (libgomp spins less once more threads have teams than there are
  cores: `edge_runtime.openmp`).
- Memory bandwidth, to say which ceiling binds.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

import httpx
import numpy as np

from edge_runtime.gguf import resolve_gguf
from gateway.bench import head_of_line
from gateway.bench import prefill as prefill_bench
from gateway.bench.wire import stream_times, timed_stream

PROMPT = "Write a long story about a lighthouse keeper and the ships she guides."
TOKENS = 64
LEVELS = (1, 2, 4, 8)


class RawLlama:
    """The bundled model on llama.cpp's low-level API, greedy, no HTTP: the ceiling here."""

    def __init__(self, n_seq_max: int = max(LEVELS)) -> None:
        import os

        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.lib = llama_cpp
        self.llama = llama_cpp.Llama(model_path=str(resolve_gguf("bundled:smollm2-135m")), n_ctx=64, verbose=False)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = 4096, 512, 512
        params.n_seq_max, params.kv_unified = n_seq_max, True
        params.n_threads = params.n_threads_batch = len(os.sched_getaffinity(0))
        self.ctx = llama_cpp.llama_init_from_model(self.llama._model.model, params)
        self.batch = llama_cpp.llama_batch_init(512, 0, 1)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        formatted = Jinja2ChatFormatter(
            template=self.llama.metadata["tokenizer.chat_template"], eos_token="", bos_token=""
        )(messages=[{"role": "user", "content": PROMPT}])
        # what edgeway feeds the model for the same request
        self.prompt = self.llama.tokenize(formatted.prompt.encode(), add_bos=False, special=True)

    def close(self) -> None:
        self.lib.llama_batch_free(self.batch)
        self.lib.llama_free(self.ctx)
        self.llama.close()

    def _put(self, i: int, token: int, pos: int, seq: int, logits: bool) -> None:
        batch = self.batch
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
        batch.seq_id[i][0], batch.logits[i] = seq, int(logits)

    def generate(self, n: int, steps: int = TOKENS) -> tuple[float, float]:
        """N sequences read the prompt, then make up to `steps` tokens each, ending at end-of-sequence
        like a request: (aggregate tokens/s including the prompt, decode tokens/s after it)."""
        lib, prompt, vocab = self.lib, self.prompt, self.llama.n_vocab()

        def eog(token: int) -> bool:
            return bool(lib.llama_vocab_is_eog(self.llama._model.vocab, token))

        lib.llama_memory_clear(self.memory, True)
        k = 0
        for seq in range(n):
            for j, token in enumerate(prompt):
                self._put(k, token, j, seq, j == len(prompt) - 1)
                k += 1
        self.batch.n_tokens = k
        started = time.perf_counter()
        lib.llama_decode(self.ctx, self.batch)
        decoding = time.perf_counter()
        rows = {seq: len(prompt) * (seq + 1) - 1 for seq in range(n)}  # sequence -> its logits row
        made = 0
        for step in range(steps):
            nexts = {
                seq: int(np.ctypeslib.as_array(lib.llama_get_logits_ith(self.ctx, row), shape=(vocab,)).argmax())
                for seq, row in rows.items()
            }
            nexts = {seq: token for seq, token in nexts.items() if not eog(token)}
            made += len(nexts)
            if not nexts or step == steps - 1:
                break
            rows = {}
            for i, (seq, token) in enumerate(nexts.items()):
                self._put(i, token, len(prompt) + step, seq, True)
                rows[seq] = i
            self.batch.n_tokens = len(rows)
            lib.llama_decode(self.ctx, self.batch)
        ended = time.perf_counter()
        return made / (ended - started), (made - n) / (ended - decoding)

    def prefill(self) -> float:
        self.lib.llama_memory_clear(self.memory, True)
        long = (self.prompt * 200)[:512]
        for j, token in enumerate(long):
            self._put(j, token, j, 0, j == len(long) - 1)
        self.batch.n_tokens = len(long)
        started = time.perf_counter()
        self.lib.llama_decode(self.ctx, self.batch)
        return len(long) / (time.perf_counter() - started)


SECOND = "smollm2-second"  # the bundled model again, as a second edge model of the same gateway


def _greedy_stream(content: str, max_tokens: int, model: str = "smollm2") -> dict[str, object]:
    return {
        "model": model,
        "stream": True,
        "temperature": 0,
        "max_tokens": max_tokens,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": content}],
    }


async def _stream(client: httpx.AsyncClient, url: str, content: str, max_tokens: int) -> tuple[float, float, int]:
    """(time to first token, decode seconds after it, completion tokens) of one streamed request."""
    times = await timed_stream(client, url, _greedy_stream(content, max_tokens))
    first, last = times.first or times.started, times.last or times.started
    tokens = times.usage["completion_tokens"] if times.usage else times.deltas
    return (times.first or times.last or times.started) - times.started, last - first, tokens


async def _gateway(url: str) -> dict[Any, Any]:
    results: dict[Any, Any] = {}
    async with httpx.AsyncClient(timeout=600) as client:
        for n in LEVELS:
            started = time.perf_counter()
            done = await asyncio.gather(*(_stream(client, url, PROMPT, TOKENS) for _ in range(n)))
            results[("concurrent", n)] = sum(t for _, _, t in done) / (time.perf_counter() - started)
            started = time.perf_counter()
            serial = [await _stream(client, url, PROMPT, TOKENS) for _ in range(n)]
            results[("serial", n)] = sum(t for _, _, t in serial) / (time.perf_counter() - started)
    results["head_of_line"] = await head_of_line.measure(url)
    return results


async def _single_decode(port: int, model: str = "smollm2") -> float:
    """Tokens/s after the first, read by a client lean enough not to slow the model it waits on
    (httpx parsing every chunk took 0.4 ms of CPU per token here: 4% of these two cores)."""
    body = _greedy_stream(PROMPT, TOKENS, model)
    return (await stream_times(port, "/v1/chat/completions", json.dumps(body).encode())).decode_rate()


def second_model(repeat: int) -> tuple[list[float], float, list[float]]:
    """The first model's single-stream decode rates before a second edge model in the same
    gateway has answered, the second's own rate, and the first's again after."""
    with head_of_line.edge_gateway(parallel=1, second=SECOND) as port:
        before = [asyncio.run(_single_decode(port)) for _ in range(repeat)]
        second = asyncio.run(_single_decode(port, SECOND))
        after = [asyncio.run(_single_decode(port)) for _ in range(repeat)]
    return before, second, after


def memory_bandwidth_gbs() -> float:
    data = np.ones(64 * 2**20 // 8)  # 64 MiB, well past the caches
    copy = np.empty_like(data)
    best = 0.0
    for _ in range(5):
        started = time.perf_counter()
        np.copyto(copy, data)
        best = max(best, 2 * data.nbytes / (time.perf_counter() - started) / 1e9)  # read + write
    return best


def run(repeat: int = 3) -> None:
    bandwidth = memory_bandwidth_gbs()
    prefill_bench.report(prefill_bench.measure(repeat=repeat))  # in this process, before the gateway's starts
    with head_of_line.edge_gateway(parallel=8) as port:
        raw_llama = RawLlama()
        try:
            # This machine is shared and noisy: raw and edgeway take turns, and the medians count.
            singles = [(raw_llama.generate(1)[1], asyncio.run(_single_decode(port))) for _ in range(repeat)]
            raw = {n: raw_llama.generate(n)[0] for n in LEVELS}
            prefill = raw_llama.prefill()
        finally:
            raw_llama.close()
        ours = asyncio.run(_gateway(f"http://127.0.0.1:{port}/v1/chat/completions"))
    before, second, after = second_model(repeat)
    raw_single = statistics.median(r for r, _ in singles)
    ours_single = statistics.median(o for _, o in singles)
    ratio = statistics.median(o / r for r, o in singles)
    print(f"raw llama.cpp: single stream decode {raw_single:.1f} tokens/s; prefill {prefill:.0f} tokens/s")
    print(
        f"single stream decode through edgeway (HTTP, streaming): {ours_single:.1f} tokens/s = "
        f"{ratio:.2f} of raw (target >= 0.95; median of {repeat} alternating runs: "
        f"{', '.join(f'{o / r:.2f}' for r, o in singles)})"
    )
    print("aggregate tokens/s, prompt reading included, answers ending at end-of-sequence:")
    print(
        f"{'streams':>7} {'raw tok/s':>10} {'edgeway':>9} {'serialized':>11} {'edgeway/raw':>12} {'vs serialized':>14}"
    )
    for n in LEVELS:
        ours_n, serial_n = ours[("concurrent", n)], ours[("serial", n)]
        print(
            f"{n:>7} {raw[n]:>10.1f} {ours_n:>9.1f} {serial_n:>11.1f} {ours_n / raw[n]:>12.2f} "
            f"{ours_n / serial_n:>13.2f}x"
        )
    head_of_line.report(ours["head_of_line"])
    kept = statistics.median(after) / statistics.median(before)
    print(
        f"a second edge model in the gateway: the first decodes {statistics.median(before):.1f} tokens/s before "
        f"the second has answered, {statistics.median(after):.1f} after ({kept:.2f}x; target >= 0.95; medians "
        f"of {repeat}); the second {second:.1f}"
    )
    weights = resolve_gguf("bundled:smollm2-135m").stat().st_size
    needed = weights * raw_single / 1e9
    print(
        f"ceilings: memory bandwidth {bandwidth:.1f} GB/s (numpy copy); "
        f"one decode step reads the {weights / 2**20:.0f} MiB of weights, "
        f"so {raw_single:.0f} tokens/s moves {needed:.1f} GB/s: "
        f"{'memory-bound' if needed > 0.6 * bandwidth else 'compute-bound (batching helps less than on a GPU)'}"
    )
    print(f"median raw gain from batching 8 streams: {raw[8] / raw[1]:.2f}x")
