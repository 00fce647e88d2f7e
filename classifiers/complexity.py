"""The complexity signal: a calibrated probability that routing this prompt to the cloud buys
quality the edge tier would not give.

Two terms, learned by `classifiers.train` and weighed by `classifiers.crossval` on validation
folds: what the prompt's words ask for (binary TF-IDF over word 1-2-grams and a logistic
regression, `classifiers.text_model.SparseTextModel`) and how long it is (log words), which
carries across topics where words do not: on MMLU subjects never trained on, length alone
ranks prompts better than the words do.
"""

from __future__ import annotations

import math
from pathlib import Path

from classifiers.text_model import SparseTextModel, clipped
from classifiers.tokens import Counts, text_counts

MODEL_PATH = Path(__file__).resolve().parent / "models" / "complexity.json"
HEAD_CHARS = 100  # the start of a long conversation: the system prompt, the task
TAIL_CHARS = 500  # and its end: the latest turns


def complexity_text(text: str) -> str:
    """What the words term reads: a long conversation's start and end say what is asked; the
    middle (a pasted document, old turns) adds cost, not signal."""
    return clipped(text, HEAD_CHARS, TAIL_CHARS)


def length_term(counts: Counts) -> float:
    """log(1 + words), words as the token estimate counts them (`classifiers.tokens`): the counts
    are made once per message and added up, so a long conversation is not read again for this."""
    spaces, newlines = counts[0], counts[1]
    return math.log1p(spaces + newlines + 1)


class ComplexityModel:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        self._words = SparseTextModel.load(path)
        extra = self._words.extra
        self.length_weight = float(extra["length_weight"])
        self._scale, self._shift = float(extra["scale"]), float(extra["shift"])

    def score(self, text: str, counts: Counts | None = None) -> float:
        """`counts`: `text_counts(text)`, when the caller has them."""
        if not text.strip():
            return 0.0
        length = length_term(counts if counts is not None else text_counts(text))
        z = self._words.logit(complexity_text(text)) + self.length_weight * length
        return 1.0 / (1.0 + math.exp(-max(-500.0, self._scale * z + self._shift)))
