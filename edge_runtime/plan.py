"""The memory a local model needs, from its GGUF metadata, before it is loaded.

KV cache per token = layers x KV heads x head size x 2 (K and V) x bytes per element (f16: 2).
With the unified cache, a context of `n_ctx` cells holds every sequence's tokens together, so the
cache is n_ctx x that, whatever `parallel` is. Weights take their file's size. The compute buffer
grows with the batch: about n_batch x (embedding + vocabulary) floats, measured against llama.cpp's
own report for the bundled model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from edge_runtime.config import EdgeModelConfig
from edge_runtime.gguf import resolve_gguf

KV_BYTES_PER_ELEMENT = 2  # llama.cpp's default KV type is f16
N_BATCH = 512  # tokens a decode step holds at most: the engine's batch, and the compute buffer's size


@dataclass(frozen=True)
class MemoryPlan:
    model: str
    weights_bytes: int
    kv_bytes_per_token: int
    kv_bytes: int
    compute_bytes: int
    layers: int
    kv_heads: int
    head_size: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.compute_bytes


def _field(metadata: dict[str, str], suffix: str) -> int:
    arch = metadata.get("general.architecture", "llama")
    value = metadata.get(f"{arch}.{suffix}")
    if value is None:
        raise ValueError(f"the GGUF metadata has no {arch}.{suffix}")
    return int(float(value))


def model_plans(config: EdgeModelConfig) -> list[MemoryPlan]:
    """The model's plan, and its draft model's (`speculative: {mode: draft}`): a second set of
    weights, and a cache as long as the model's and one batch more."""
    made = [_plan(config.name, config.gguf, config.n_ctx)]
    if config.speculative is not None and config.speculative.draft_gguf is not None:
        made.append(_plan(f"{config.name} draft", config.speculative.draft_gguf, config.n_ctx + N_BATCH))
    return made


def _plan(name: str, gguf: str, n_ctx: int) -> MemoryPlan:
    from llama_cpp import Llama

    path = resolve_gguf(gguf)
    vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)  # reads metadata, not weights
    try:
        meta = vocab.metadata
        layers = _field(meta, "block_count")
        heads = _field(meta, "attention.head_count")
        kv_heads = int(float(meta.get(f"{meta.get('general.architecture', 'llama')}.attention.head_count_kv", heads)))
        embedding = _field(meta, "embedding_length")
        vocab_size = vocab.n_vocab()
    finally:
        vocab.close()
    head_size = embedding // heads
    per_token = layers * kv_heads * head_size * 2 * KV_BYTES_PER_ELEMENT
    compute = N_BATCH * (embedding * 8 + vocab_size) * 4
    return MemoryPlan(name, os.path.getsize(path), per_token, per_token * n_ctx, compute, layers, kv_heads, head_size)


def available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_fits(configs: list[EdgeModelConfig]) -> list[MemoryPlan]:
    """The plans; raises MemoryError naming each model's need when they cannot fit together."""
    plans = [made for c in configs for made in model_plans(c)]
    free = available_bytes()
    need = sum(p.total_bytes for p in plans)
    if free is not None and need > free:
        detail = ", ".join(f"{p.model} {p.total_bytes / 2**20:.0f} MiB" for p in plans)
        raise MemoryError(
            f"the edge models need {need / 2**20:.0f} MiB ({detail}) but {free / 2**20:.0f} MiB are "
            f"available; lower n_ctx or use a smaller model"
        )
    return plans


def describe(plans: list[MemoryPlan]) -> str:
    lines = [f"{'model':<16} {'weights':>10} {'KV/token':>10} {'KV cache':>10} {'compute':>10} {'total':>10}"]
    for p in plans:
        lines.append(
            f"{p.model:<16} {p.weights_bytes / 2**20:>8.1f}Mi {p.kv_bytes_per_token / 1024:>8.1f}Ki "
            f"{p.kv_bytes / 2**20:>8.1f}Mi {p.compute_bytes / 2**20:>8.1f}Mi {p.total_bytes / 2**20:>8.1f}Mi"
            f"   ({p.layers} layers x {p.kv_heads} KV heads x {p.head_size} x 2 x {KV_BYTES_PER_ELEMENT} B)"
        )
    free = available_bytes()
    total = sum(p.total_bytes for p in plans)
    lines.append(
        f"needed {total / 2**20:.0f} MiB; available now {free / 2**20:.0f} MiB"
        if free
        else f"needed {total / 2**20:.0f} MiB"
    )
    return "\n".join(lines)
