"""A text classifier that `classifiers.train` fitted with scikit-learn (binary TF-IDF over word
1-2-grams, L2-normalized, and a logistic regression), scored as dictionary lookups: the
complexity signal's words term and the private-context gate are both one of these."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path


def clipped(text: str, head: int, tail: int) -> str:
    """The exact preprocessing applied before training and before scoring: lower case and, for a
    long text, its start and its end only, which say what it is."""
    if len(text) > head + tail:
        text = text[:head] + "\n" + text[-tail:]
    return text.lower()


class SparseTextModel:
    """Each n-gram in the vocabulary keeps its weight times its idf, and its idf squared: the logit
    is bias + sum(weight * idf) / sqrt(sum(idf^2)) over the distinct n-grams present, exactly what
    scikit-learn computes (checked on every training text when the model is written).

    For a text of a few hundred words that is 15-40 us here. onnxruntime, which scored these
    models before, spent 45-90 us on the same texts (measured side by side when this replaced
    it): its fixed cost and the dense vocabulary-wide vector and product."""

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self._pattern = re.compile(data["token_pattern"])
        self._bias = float(data["bias"])
        self._grams: dict[str, tuple[float, float]] = {g: (w, q) for g, (w, q) in data["grams"].items()}
        # what a model that builds on this one stored beside it (the complexity model's length weight)
        self.extra: dict[str, float] = {k: v for k, v in data.items() if k not in ("token_pattern", "bias", "grams")}

    def logit(self, prepared: str) -> float:
        """For a text already `clipped`."""
        words = self._pattern.findall(prepared)
        grams = set(words)
        grams.update(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
        weighted = squares = 0.0
        for gram in grams:
            found = self._grams.get(gram)
            if found is not None:
                weighted += found[0]
                squares += found[1]
        return self._bias + (weighted / math.sqrt(squares) if squares else 0.0)

    def probability(self, prepared: str) -> float:
        return 1.0 / (1.0 + math.exp(-max(-500.0, self.logit(prepared))))
