"""A linear model over static word-piece embeddings, folded into one number per piece.

WordLlama's embeddings (256 dimensions for each of Llama 2's 32,000 sentence pieces, trained to
be mean-pooled; its PyPI wheel ships them) place a piece never seen in training near the pieces
that mean the same. A logistic regression on a text's mean-pooled embedding is linear in it, so
`classifiers.train` folds the regression into one score per piece (its weights' dot product with
that piece's embedding): here a text's logit is the bias plus the mean score of its pieces, read
from a table of 32,000 numbers. Nothing of WordLlama runs at serving time.

The pieces are found as Llama's tokenizer finds them, nearly: each run of non-space characters
is "▁" + the run, split by longest match (where Llama's BPE merges, a few words split
differently), characters no piece holds as their UTF-8 bytes, a line break as its byte piece,
and the text starts with "<s>". Training embeds the pieces this same function finds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")
START = "<s>"
NEWLINE = "<0x0A>"
_RUNS = re.compile(r"\S+|\n")
_CACHE_WORDS = 50_000  # distinct runs remembered per model; then it starts over


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
            out += [vocab[f"<0x{b:02X}>"] for b in s[i].encode("utf-8")]
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


class _Runs(dict[str, float]):
    """Each run's summed piece scores, split on first sight; `counts` has its number of pieces."""

    def __init__(self, scores: dict[str, float]) -> None:
        super().__init__()
        self.scores, self.longest = scores, max(len(p) for p in scores)
        self.counts: dict[str, int] = {}
        self.reset()

    def reset(self) -> None:
        self.clear()
        self.counts.clear()
        self["\n"], self.counts["\n"] = self.scores[NEWLINE], 1

    def __missing__(self, run: str) -> float:
        found = split(run, self.scores, self.longest)
        self[run], self.counts[run] = sum(found), len(found)
        return self[run]


class PieceModel:
    """bias + mean(score of each piece), from `{"bias": float, "scores": {piece: float}}`."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._bias = float(data["bias"])
        scores = {p: float(s) for p, s in data["scores"].items()}
        self._start = scores[START]
        self._runs = _Runs(scores)

    def logit(self, text: str) -> float:
        runs = _RUNS.findall(text)
        if len(self._runs) > _CACHE_WORDS:
            self._runs.reset()
        total = sum(map(self._runs.__getitem__, runs))  # in C, as the words term's sums (filling counts)
        count = sum(map(self._runs.counts.__getitem__, runs))
        return self._bias + (self._start + total) / (1 + count)
