"""The edge model's reading of a prompt, and the probe that scores it.

Once the edge has read a prompt (its prefill) it holds what it understood of it, and at the last
position, where it is about to answer, its next-token logits: a linear image of its last hidden
state, and what it samples its first token from. A probe is a linear model on those logits,
fitted for one GGUF (`edgeway router probe`, research/) and kept in a file named by the GGUF's
hash, so that a probe is never applied to a model it was not fitted for. Scoring it costs one dot
product and nothing the edge does not compute anyway.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from edge_runtime.threads import thread_count

BUNDLED_PROBES = Path(__file__).resolve().parent / "probes"
DIGEST_CHARS = 16  # of the GGUF's sha256: a probe file's name


class ReadingKind(StrEnum):
    """What a probe reads (kept in its file, for probes of other readings to come)."""

    LAST = "last"  # the next-token logits at the prompt's last position


@dataclass(frozen=True)
class Probe:
    """A linear score of a reading: `weights` . reading + `bias`. `label` names what it predicts
    (the edge class whose data fitted it), `gguf` the model it was fitted for (the hash's prefix)."""

    kind: ReadingKind
    weights: np.ndarray[Any, np.dtype[np.float32]]
    bias: float
    gguf: str
    label: str = ""
    # how its score joins the text prior's logit, as fitted with it: (prior, reading, bias) weights
    # of a logistic regression of what routing buys (`router.app_router.Combination`)
    combine: tuple[float, float, float] = (1.0, 0.0, 0.0)

    def score(self, reading: np.ndarray[Any, np.dtype[Any]]) -> float:
        return float(np.dot(self.weights, reading)) + self.bias

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.gguf}.npz"
        meta = {
            "kind": str(self.kind),
            "bias": self.bias,
            "gguf": self.gguf,
            "label": self.label,
            "combine": list(self.combine),
        }
        with open(path, "wb") as f:
            np.savez(f, weights=self.weights.astype(np.float32), meta=np.array(json.dumps(meta)))
        return path

    @classmethod
    def load(cls, path: Path) -> Probe:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            weights = data["weights"].astype(np.float32)
        prior, reading, bias = (float(x) for x in meta["combine"])
        kind, label = ReadingKind(meta["kind"]), meta["label"]
        return cls(kind, weights, float(meta["bias"]), meta["gguf"], label, (prior, reading, bias))


def gguf_digest(path: Path, cache: Path | None = None) -> str:
    """The first `DIGEST_CHARS` of the file's sha256; remembered in `cache` by path, size and
    modification time (hashing a 4 GB model takes seconds at every start otherwise)."""
    stat = path.stat()
    key = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    known: dict[str, str] = {}
    if cache is not None and cache.exists():
        try:
            known = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
    if key in known:
        return known[key]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    found = digest.hexdigest()[:DIGEST_CHARS]
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**known, key: found}), encoding="utf-8")
            tmp.replace(cache)
        except OSError:
            pass  # a read-only folder: hashed again next time
    return found


def find_probe(digest: str, folders: list[Path]) -> Probe | None:
    """The probe fitted for the GGUF with this digest: in the given folders (a user's fitted
    probes first), then among the bundled ones."""
    for folder in [*folders, BUNDLED_PROBES]:
        path = folder / f"{digest}.npz"
        if path.exists():
            return Probe.load(path)
    return None


@dataclass
class Gate:
    """What a generation read first carries: the probe, and what decides once it has scored.
    `keep(score)` runs on the edge's worker thread and must only compare numbers: True, the edge
    goes on to answer from the same prefill; False, the generation ends unanswered (its request
    goes to the cloud)."""

    probe: Probe
    keep: Callable[[float], bool]
    score: float | None = None  # set by the worker once the prompt is read


def read_last_logits(
    gguf: Path, prompts: list[list[int]], n_threads: int | None = None, progress: Callable[[int], None] | None = None
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Each prompt's (tokens, chat template applied) next-token logits at its last position: the
    `LAST` reading, as the edge's scheduler computes it for a generation read first."""
    import ctypes

    import llama_cpp

    longest = max(len(p) for p in prompts)
    model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), llama_cpp.llama_model_default_params())
    if not model:
        raise ValueError(f"llama.cpp could not load {gguf}")
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = params.n_batch = params.n_ubatch = longest
    params.n_seq_max = 1
    params.n_threads = params.n_threads_batch = thread_count(n_threads)
    ctx = llama_cpp.llama_init_from_model(model, params)
    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    batch = llama_cpp.llama_batch_init(longest, 0, 1)
    memory = llama_cpp.llama_get_memory(ctx)
    out = np.zeros((len(prompts), n_vocab), dtype=np.float32)
    try:
        for i, tokens in enumerate(prompts):
            llama_cpp.llama_memory_clear(memory, True)
            for j, token in enumerate(tokens):
                batch.token[j], batch.pos[j], batch.n_seq_id[j] = token, j, 1
                batch.seq_id[j][0], batch.logits[j] = 0, j == len(tokens) - 1
            batch.n_tokens = len(tokens)
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise RuntimeError(f"llama_decode failed on prompt {i}")
            pointer = llama_cpp.llama_get_logits_ith(ctx, len(tokens) - 1)
            out[i] = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))
            if progress is not None:
                progress(i + 1)
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)
    return out
