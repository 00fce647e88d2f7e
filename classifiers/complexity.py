"""The complexity signal: a calibrated probability that the edge tier is not enough.

A TF-IDF + logistic regression pipeline trained by `classifiers.train`, exported to ONNX and
scored here with onnxruntime on one thread.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MODEL_PATH = Path(__file__).resolve().parent / "models" / "complexity.onnx"
MAX_CHARS = 32_000  # the tail of a very long conversation says enough; keeps the cost bounded


def complexity_text(text: str) -> str:
    """The exact preprocessing applied before training and before scoring."""
    return text[-MAX_CHARS:].lower()


class ComplexityModel:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name

    def score(self, text: str) -> float:
        if not text.strip():
            return 0.0
        prepared = complexity_text(text)
        try:
            probabilities = self._session.run(["probabilities"], {self._input: np.array([[prepared]], dtype=object)})
        except UnicodeEncodeError:  # lone surrogates: not text a tokenizer can read, so drop them
            prepared = prepared.encode("utf-8", "ignore").decode("utf-8")
            probabilities = self._session.run(["probabilities"], {self._input: np.array([[prepared]], dtype=object)})
        return float(probabilities[0][0][1])
