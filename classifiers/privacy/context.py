"""Whether a text reads as someone's own document (an email, a résumé, an application, a company's
text) rather than a question about the world: the names in the first are private, the names in
the second mostly famous.

A TF-IDF + logistic regression text model (`classifiers.text_model.SparseTextModel`) that `classifiers.train`
fits on real prompts that carry private information (PUPA) against real public instructions
(AlpacaEval), with edgeway's template prompts for coverage. The span model uses it as a gate:
see `SpanModel`.
"""

from __future__ import annotations

from pathlib import Path

from classifiers.text_model import SparseTextModel, clipped

MODEL_PATH = Path(__file__).resolve().parent.parent / "models" / "private_context.json"
HEAD_CHARS = 1000  # a letter's greeting, a résumé's header: what the document is
TAIL_CHARS = 300  # and its sign-off, or the request after a pasted text


def context_text(text: str) -> str:
    return clipped(text, HEAD_CHARS, TAIL_CHARS)


class PrivateContext:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        self._model = SparseTextModel(path)

    def score(self, text: str) -> float:
        """P(the text is a private document)."""
        return self._model.probability(context_text(text)) if text.strip() else 0.0
