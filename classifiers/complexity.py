"""The complexity signal: a calibrated probability that the edge tier is not enough.

A TF-IDF + logistic regression pipeline trained by `classifiers.train`, exported to ONNX
(`classifiers.text_model`).
"""

from __future__ import annotations

from pathlib import Path

from classifiers.text_model import TextModel, clipped

MODEL_PATH = Path(__file__).resolve().parent / "models" / "complexity.onnx"
HEAD_CHARS = 100  # the start of a long conversation: the system prompt, the task
TAIL_CHARS = 500  # and its end: the latest turns


def complexity_text(text: str) -> str:
    """A long conversation is read by its start and its end, which say what is asked; the middle
    (a pasted document, old turns) adds cost, not signal. Held-out APGR (RouteLLM's / all) with
    100 + 500 characters: 0.577 / 0.687; with 200 + 800: 0.578 / 0.687; with 500 + 2,000: 0.575 /
    0.684."""
    return clipped(text, HEAD_CHARS, TAIL_CHARS)


class ComplexityModel:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        self._model = TextModel(path)

    def score(self, text: str) -> float:
        if not text.strip():
            return 0.0
        return self._model.probability(complexity_text(text))
