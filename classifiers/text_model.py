"""A text classifier that `research.train` fitted with scikit-learn (binary TF-IDF over word
1-2-grams, L2-normalized, and a logistic regression), scored as table lookups: the complexity
signal's words term and the private-context gate's words term are both one of these."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classifiers import _scan

# The token patterns the compiled scan reads (`classifiers/scan/grams.c`): True for ASCII only.
TOKEN_PATTERNS = {r"\b\w\w+\b": False, r"[a-z0-9_]{2,}": True}


def head_and_tail(text: str, head: int, tail: int) -> str:
    """A long text's start and its end only, which say what it is."""
    return text[:head] + "\n" + text[-tail:] if len(text) > head + tail else text


def clipped(text: str, head: int, tail: int) -> str:
    """The exact preprocessing applied before training and before scoring: `head_and_tail`, in
    lower case."""
    return head_and_tail(text, head, tail).lower()


class SparseTextModel:
    """Each n-gram in the vocabulary keeps its weight times its idf, and its idf squared: the logit
    is bias + sum(weight * idf) / sqrt(sum(idf^2)) over the distinct n-grams present, exactly what
    scikit-learn computes (checked on every training text when the model is written).

    The sums run in C (`classifiers/scan/grams.c`, the grams hashed as the text is read): 3.6 us
    for a 1,300-character message, where the same sums in Python took 27-42 us and onnxruntime,
    which scored these models before, 45-90 us (its fixed cost and the dense vocabulary-wide
    vector and product), each measured side by side."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._bias = float(data["bias"])
        if data["token_pattern"] not in TOKEN_PATTERNS:
            raise ValueError(f"no compiled scan reads {data['token_pattern']!r}")
        grams = list(data["grams"])
        self._grams = _scan.Grams(
            grams,
            [float(data["grams"][g][0]) for g in grams],
            [float(data["grams"][g][1]) for g in grams],
            TOKEN_PATTERNS[data["token_pattern"]],
        )
        # what a model that builds on this one stored beside it (the complexity model's length weights)
        self.extra: dict[str, float] = {k: v for k, v in data.items() if k not in ("token_pattern", "bias", "grams")}

    @classmethod
    def load(cls, path: Path) -> SparseTextModel:
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def logit(self, prepared: str) -> float:
        """For a text already `clipped`."""
        weighted, squares = self._grams.sums(prepared)
        return self._bias + (weighted / math.sqrt(squares) if squares else 0.0)

    def probability(self, prepared: str) -> float:
        return 1.0 / (1.0 + math.exp(-max(-500.0, self.logit(prepared))))
