"""The pieces of a llama.cpp decode step that the scheduler (`edge_runtime.batch`) and the draft
model (`edge_runtime.drafting`) both use: writing a token into a `llama_batch`, reading a token's
logits after the decode, and how much of a token run a cache already holds."""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from typing import Any

import numpy as np


def put(batch: Any, i: int, token: int, pos: int, seq_id: int, logits: bool) -> None:
    """Write token `i` of a `llama_batch`: one sequence, logits only where asked."""
    batch.token[i] = token
    batch.pos[i] = pos
    batch.n_seq_id[i] = 1
    batch.seq_id[i][0] = seq_id
    batch.logits[i] = 1 if logits else 0


def logits_at(lib: Any, ctx: Any, index: int, n_vocab: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The logits of the batch's token `index` after a decode, as a view (no copy)."""
    pointer = lib.llama_get_logits_ith(ctx, index)
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))


def common_start(kept: Iterable[int], prompt: list[int]) -> int:
    """How many tokens two prompts share from their start."""
    common = 0
    for a, b in zip(kept, prompt, strict=False):
        if a != b:
            break
        common += 1
    return common
