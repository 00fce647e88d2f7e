"""A linear model over static word-piece embeddings, folded into one number per piece.

WordLlama's embeddings (256 dimensions for each of Llama 2's 32,000 sentence pieces, trained to
be mean-pooled; its PyPI wheel ships them) place a piece never seen in training near the pieces
that mean the same. A logistic regression on a text's mean-pooled embedding is linear in it, so
`research.train` folds the regression into one score per piece (its weights' dot product with
that piece's embedding): here a text's logit is the bias plus the mean score of its pieces, read
from a table of 32,000 numbers (summed in C, `classifiers/scan/pieces.c`, 6 us for a message).
Nothing of WordLlama runs at serving time. The complexity model's edge-pieces term is the same
shape over another table: the bundled edge model's input embeddings (SmolLM2's 49,152 byte-level
BPE pieces, named here as Llama's are, `research.wordlists.gguf_pieces`), read at training time
from its GGUF.

The pieces are found as Llama's tokenizer finds them, nearly: each run of non-space characters
is "▁" + the run, split by longest match (where Llama's BPE merges, a few words split
differently), characters no piece holds as their UTF-8 bytes, a line break as its byte piece,
and the text starts with "<s>". Training embeds the pieces this same function finds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

from classifiers import _scan

T = TypeVar("T")
START = "<s>"
LONGEST = 64  # characters: the C table's longest piece (MAX_PIECE in classifiers/scan/pieces.c)
NEWLINE = "<0x0A>"
_RUNS = re.compile(r"\S+|\n")


def split(run: str, vocab: Mapping[str, T], longest: int) -> list[T]:
    """The pieces of one run of non-space characters (`longest`: the longest piece's length)."""
    s, out, i = "\u2581" + run, [], 0
    while i < len(s):
        for j in range(min(len(s), i + longest), i, -1):
            found = vocab.get(s[i:j])
            if found is not None:
                out.append(found)
                i = j
                break
        else:  # Llama's byte fallback
            out += [vocab[f"<0x{b:02X}>"] for b in s[i].encode("utf-8", "surrogatepass")]
            i += 1
    return out


def pieces(text: str, vocab: Mapping[str, T], longest: int) -> list[T]:
    """Every piece of `text`, "<s>" first."""
    out = [vocab[START]]
    for run in _RUNS.findall(text):
        if run == "\n":
            out.append(vocab[NEWLINE])
        else:
            out += split(run, vocab, longest)
    return out


class PieceModel:
    """bias + mean(score of each piece), from `{"bias": float, "scores": {piece: float}}`; the sums
    run in C (`classifiers/scan/pieces.c`), over the pieces `pieces` finds."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._bias = float(data["bias"])
        names = list(data["scores"])
        self._start = float(data["scores"][START])
        self._native = _scan.Pieces(names, [float(data["scores"][p]) for p in names])

    def logit(self, text: str) -> float:
        total, count = self._native.sums(text)
        return self._bias + (self._start + total) / (1 + count)
