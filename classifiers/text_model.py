"""A text classifier that `classifiers.train` fitted (TF-IDF and logistic regression) and exported
to ONNX, scored with onnxruntime on one thread: the complexity signal and the private-context
gate are both one of these."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np


def clipped(text: str, head: int, tail: int) -> str:
    """The exact preprocessing applied before training and before scoring: lower case (ONNX's
    StringNormalizer needs OS locales) and, for a long text, its start and its end only, which
    say what it is; onnxruntime takes about 25 us plus 25 us per 1,000 characters here."""
    if len(text) > head + tail:
        text = text[:head] + "\n" + text[-tail:]
    return text.lower()


class TextModel:
    def __init__(self, path: Path) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name

    def probability(self, prepared: str) -> float:
        """P(class 1) for a text already `clipped`."""
        try:
            probabilities = self._session.run(["probabilities"], {self._input: np.array([[prepared]], dtype=object)})
        except UnicodeEncodeError:  # lone surrogates: not text a tokenizer can read, so drop them
            prepared = prepared.encode("utf-8", "ignore").decode("utf-8")
            probabilities = self._session.run(["probabilities"], {self._input: np.array([[prepared]], dtype=object)})
        return float(probabilities[0][0][1])


class SparseTextModel:
    """The same kind of model (binary TF-IDF over word 1-2-grams, L2-normalized, and a logistic
    regression) scored as dictionary lookups: for a text of a few hundred words that is 30-40 us
    here, where onnxruntime spends about 90 us on the dense 20,000-wide vector and its product
    (measured side by side when this replaced it for the private-context gate).

    Each n-gram in the vocabulary keeps its weight times its idf, and its idf squared: the score is
    bias + sum(weight * idf) / sqrt(sum(idf^2)) over the distinct n-grams present, exactly what
    scikit-learn computes."""

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self._pattern = re.compile(data["token_pattern"])
        self._bias = float(data["bias"])
        self._grams: dict[str, tuple[float, float]] = {g: (w, q) for g, (w, q) in data["grams"].items()}

    def probability(self, prepared: str) -> float:
        words = self._pattern.findall(prepared)
        grams = set(words)
        grams.update(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
        weighted = squares = 0.0
        for gram in grams:
            found = self._grams.get(gram)
            if found is not None:
                weighted += found[0]
                squares += found[1]
        z = self._bias + (weighted / math.sqrt(squares) if squares else 0.0)
        return 1.0 / (1.0 + math.exp(-z)) if z > -500 else 0.0
