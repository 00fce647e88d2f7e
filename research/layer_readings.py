"""Every layer's reading of a prompt: what each of a model's blocks wrote (llama.cpp's `l_out-N`
tensors, the residual stream after block N), averaged over the prompt's positions and taken at its
last one. Where `research.readings` keeps the final normed state, this keeps all of them: routing
from a small model's activations across layers, not its last alone, is what published work finds
ranks best.

llama.cpp hands out intermediate tensors through its scheduler's evaluation callback (`cb_eval`):
asked for each tensor of the graph whether it is wanted, it says yes to the layer outputs and is
then given each one once computed, which it copies out with ggml's own accessors (no struct layout
assumed). Cached under research/cache/, keyed by the GGUF's hash and the prompts.

    python -m research.layer_readings            # fills the cache for the step probe's prompts
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from edge_runtime.gguf import resolve_gguf
from gateway.bench.folds import RoutingRow
from research.protocol import Fit, Scorer
from research.readings import CACHE, READ_TOKENS, _key, _templated, _text, token_states
from router.probe_fit import Labelled, fit_probe

LAYER_OUTPUT = b"l_out-"


@dataclass(frozen=True)
class LayerReadings:
    mean: np.ndarray  # (prompts, layers, n_embd): each layer's output averaged over the prompt
    last: np.ndarray  # (prompts, layers, n_embd): at the prompt's last position


def _ggml() -> ctypes.CDLL:
    import llama_cpp

    lib = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
    lib.ggml_get_name.restype, lib.ggml_get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
    lib.ggml_nelements.restype, lib.ggml_nelements.argtypes = ctypes.c_int64, [ctypes.c_void_p]
    lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    return lib


@contextmanager
def layer_states(path: Path, most: int = READ_TOKENS) -> Iterator[Callable[[list[int]], np.ndarray]]:
    """A function from a prompt's tokens (at most `most`) to every layer's output at each of them,
    an array (layers, tokens, n_embd), each prompt read afresh."""
    import llama_cpp

    lib = _ggml()
    outputs: dict[int, np.ndarray] = {}

    @llama_cpp.ggml_backend_sched_eval_callback
    def observe(tensor: int, ask: bool, _: int) -> bool:
        name = lib.ggml_get_name(tensor)
        if ask:
            return bool(name.startswith(LAYER_OUTPUT))
        count = lib.ggml_nelements(tensor)
        values = np.empty(count, np.float32)
        lib.ggml_backend_tensor_get(tensor, values.ctypes.data, 0, count * 4)
        outputs[int(name[len(LAYER_OUTPUT) :])] = values
        return True

    with token_states(path, most, observe) as read_final:

        def read(tokens: list[int]) -> np.ndarray:
            outputs.clear()
            read_final(tokens)
            if sorted(outputs) != list(range(len(outputs))):
                raise RuntimeError(f"expected every layer's output, observed {sorted(outputs)}")
            return np.stack([outputs[i].reshape(len(tokens), -1) for i in range(len(outputs))])

        yield read


def layer_readings(
    prompts: list[str], gguf: str = "bundled:smollm2-135m", bound: int = READ_TOKENS, templated: bool = True
) -> LayerReadings:
    """Every layer's reading of `prompts` (each a user message, its last `bound` tokens), from the
    cache or computed now; `templated` as in `research.readings.readings`."""
    path = resolve_gguf(gguf)
    CACHE.mkdir(exist_ok=True)
    cached = CACHE / f"layers-{_key(path, prompts)}-last{bound}{'' if templated else '-text'}.npz"
    if cached.exists():
        data = np.load(cached)
        return LayerReadings(data["mean"], data["last"])
    tokens = _templated(path, prompts) if templated else _text(path, prompts)
    means, lasts = [], []
    started = time.perf_counter()
    with layer_states(path, bound) as read:
        for i, ids in enumerate(tokens):
            states = read(ids[-bound:])
            means.append(states.mean(axis=1, dtype=np.float64).astype(np.float32))
            lasts.append(states[:, -1].astype(np.float32))
            if i % 250 == 0:
                print(f"read {i}/{len(tokens)} prompts in {time.perf_counter() - started:.0f} s", flush=True)
    found = LayerReadings(np.stack(means), np.stack(lasts))
    np.savez(cached, mean=found.mean, last=found.last)
    return found


class Pool(StrEnum):
    """How a probe joins the layers' readings."""

    CONCAT = "concat"  # side by side: a weight per layer and dimension
    MEAN = "mean"  # averaged: one weight per dimension


def layers_probe(states: Callable[[], dict[str, np.ndarray]], kinds: tuple[str, ...], pool: Pool) -> Fit:
    """A probe on every layer's mean state (`states`: by prompt, (layers, n_embd)), fitted on the
    training rows of `kinds` by the gateway's ridge (`router.probe_fit`): each layer scaled to a
    unit mean square on those rows first (a deep layer's states are tens of times a shallow
    one's, and one penalty must suit them all), then joined as `pool` says."""

    def fit(train: list[RoutingRow]) -> Scorer:
        found = states()
        mine = [r for r in train if r.kind in kinds]
        raw = np.stack([found[r.prompt] for r in mine]).astype(np.float64)
        scale = np.sqrt((raw**2).mean(axis=(0, 2)))

        def read(rows: list[RoutingRow]) -> np.ndarray:
            x = np.stack([found[r.prompt] for r in rows]) / scale[None, :, None]
            return x.reshape(len(rows), -1) if pool is Pool.CONCAT else x.mean(axis=1)

        weights, bias = fit_probe(read(mine), [Labelled(r.kind, r.target, r.group) for r in mine])
        return lambda rows: read(rows) @ weights + bias

    return fit


if __name__ == "__main__":
    from research.step_probe import gemma_gguf, step_prompts

    for gguf, templated in (("bundled:smollm2-135m", True), (gemma_gguf(), False)):
        layer_readings(list(step_prompts()), gguf, 128, templated)
