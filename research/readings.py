"""The edge model's own reading of each prompt: what it has computed once it has read the prompt as
it would serve it (its chat template applied), before it writes a token.

For every routing row, two readings of the final (normed) hidden states: their mean over the
prompt's positions (llama.cpp's mean pooling) and the state at the last position, where the model
is about to answer (which its next-token logits are a linear image of). Computed once a model and
cached under research/cache/ (not committed: derived from the data and the GGUF), keyed by the
GGUF's hash.

    python -m research.readings          # fills the cache for the bundled model
"""

from __future__ import annotations

import ctypes
import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import gguf_digest
from edge_runtime.threads import thread_count
from gateway.bench.folds import RoutingRow, hashed_fold

CACHE = Path(__file__).resolve().parent / "cache"
READ_TOKENS = 512  # a prompt is read up to this many tokens (its end kept: the template's tail)
PER_SUBJECT = 60  # MMLU questions read per subject: prefill runs at about 170 tokens/s on 2 cores


@dataclass(frozen=True)
class Readings:
    mean: np.ndarray  # (prompts, n_embd)
    last: np.ndarray  # (prompts, n_embd)
    tokens: np.ndarray  # (prompts,) tokens read


def _key(gguf: Path, prompts: list[str]) -> str:
    joined = hashlib.sha256("\x00".join(prompts).encode("utf-8")).hexdigest()[:16]
    return f"{gguf_digest(gguf)[:16]}-{joined}"


def readings(
    prompts: list[str], gguf: str = "bundled:smollm2-135m", bound: int = READ_TOKENS, templated: bool = True
) -> Readings:
    """The readings of `prompts` (each a user message), each of its last `bound` tokens, from the
    cache or computed now. `templated`: read as the edge would serve it, its chat template applied;
    else the text alone, as a base model with no template (a reader) reads it."""
    path = resolve_gguf(gguf)
    CACHE.mkdir(exist_ok=True)
    last = ("" if bound == READ_TOKENS else f"-last{bound}") + ("" if templated else "-text")
    cached = CACHE / f"readings-{_key(path, prompts)}{last}.npz"
    if cached.exists():
        data = np.load(cached)
        return Readings(data["mean"], data["last"], data["tokens"])
    tokens = _templated(path, prompts) if templated else _text(path, prompts)
    found = _compute(path, [t[-bound:] for t in tokens])
    np.savez(cached, mean=found.mean, last=found.last, tokens=found.tokens)
    return found


def _templated(path: Path, prompts: list[str]) -> list[list[int]]:
    from edge_runtime import EdgeEngine, EdgeModelConfig
    from edge_runtime.config import ModelRole

    # as a reader: a base model without a chat template reads the text alone (`PLAIN_TEXT`)
    engine = EdgeEngine(EdgeModelConfig(gguf=str(path), n_ctx=READ_TOKENS * 4, role=ModelRole.READER))
    engine.load()  # for its tokenizer and chat template: exactly the tokens the edge would read
    try:
        return [engine.tokenize_chat([{"role": "user", "content": p}]) for p in prompts]
    finally:
        engine.close()


def _text(path: Path, prompts: list[str]) -> list[list[int]]:
    import llama_cpp

    model = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    return [model.tokenize(p.encode("utf-8"), add_bos=True, special=False) for p in prompts]


@contextmanager
def token_states(
    path: Path, most: int = READ_TOKENS, observe: Any = None
) -> Iterator[Callable[[list[int]], np.ndarray]]:
    """A function from a prompt's tokens (at most `most`) to the model's final hidden state at
    each of them, an array (tokens, n_embd), each prompt read afresh. `observe`: llama.cpp's
    evaluation callback, shown the graph's tensors as they are computed (`research.layer_readings`)."""
    import llama_cpp

    model = llama_cpp.llama_model_load_from_file(str(path).encode(), llama_cpp.llama_model_default_params())
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = params.n_batch = params.n_ubatch = most
    params.n_seq_max = 1
    params.embeddings = True
    params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE
    params.n_threads = params.n_threads_batch = thread_count(None)
    if observe is not None:
        params.cb_eval = observe
    ctx = llama_cpp.llama_init_from_model(model, params)
    n_embd = llama_cpp.llama_model_n_embd(model)
    batch = llama_cpp.llama_batch_init(most, 0, 1)
    memory = llama_cpp.llama_get_memory(ctx)

    def read(tokens: list[int]) -> np.ndarray:
        llama_cpp.llama_memory_clear(memory, True)
        for j, token in enumerate(tokens):
            batch.token[j], batch.pos[j], batch.n_seq_id[j] = token, j, 1
            batch.seq_id[j][0], batch.logits[j] = 0, 1
        batch.n_tokens = len(tokens)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        pointer = llama_cpp.llama_get_embeddings(ctx)
        return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(len(tokens), n_embd))

    try:
        yield read
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)


def _compute(path: Path, token_lists: list[list[int]]) -> Readings:
    means, lasts, counts = [], [], []
    started = time.perf_counter()
    with token_states(path) as read:
        for i, tokens in enumerate(token_lists):
            states = read(tokens).astype(np.float64)
            means.append(states.mean(axis=0))
            lasts.append(states[-1].copy())
            counts.append(len(tokens))
            if i % 500 == 0:
                print(f"read {i}/{len(token_lists)} prompts in {time.perf_counter() - started:.0f} s", flush=True)
    return Readings(np.array(means), np.array(lasts), np.array(counts))


def read_rows(rows: list[RoutingRow], per_subject: int = PER_SUBJECT) -> list[RoutingRow]:
    """The real rows the edge reads for the research: every GSM8K question and AlpacaEval
    instruction, and `per_subject` questions of each MMLU subject (the first by a hash of the
    prompt: the same on every machine)."""
    taken: dict[str, int] = {}
    out = []
    for r in sorted((r for r in rows if r.kind != "template"), key=lambda r: (r.kind, hashed_fold(r.prompt, 1 << 30))):
        if r.kind == "mmlu":
            if taken.get(r.group, 0) >= per_subject:
                continue
            taken[r.group] = taken.get(r.group, 0) + 1
        out.append(r)
    return out


def row_readings(rows: list[RoutingRow]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """prompt -> (mean reading, last reading) for `read_rows(rows)`."""
    chosen = read_rows(rows)
    prompts = sorted({r.prompt for r in chosen})
    found = readings(prompts)
    return {p: (found.mean[i], found.last[i]) for i, p in enumerate(prompts)}


def main() -> None:
    from gateway.bench.folds import routing_rows

    found = row_readings(routing_rows())
    print(f"{len(found)} prompts read")


if __name__ == "__main__":
    main()
