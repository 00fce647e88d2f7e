"""The complexity signal: a calibrated probability that routing this prompt to the cloud buys
quality the edge tier would not give.

Four terms, learned by `research.train` and weighed by `research.crossval` on validation
folds: what the prompt's words ask for (binary TF-IDF over word 1-2-grams and a logistic
regression, `classifiers.text_model.SparseTextModel`); what the edge model's own input embeddings
of the same text say of it (a ridge regression on their mean, trained on AlpacaEval's open-ended
instructions alone and folded into one score a piece, `classifiers.pieces.PieceModel`: the words
term learns mostly from exam questions, and ranks open-ended chat less well); how long the whole
text is (log words), which carries across topics where words do not (on MMLU subjects never
trained on, length alone ranks prompts better than the words do); and how long the ask is (log
words of the first line of the latest user message): "Summarize the article.\\n\\n<the article>"
is long and easy, a word problem told in one long paragraph is long and hard.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from classifiers.pieces import PieceModel
from classifiers.text_model import SparseTextModel, clipped
from classifiers.tokens import Counts, text_counts

MODEL_PATH = Path(__file__).resolve().parent / "models" / "complexity.json"
HEAD_CHARS = 100  # the start of a long conversation: the system prompt, the task
TAIL_CHARS = 500  # and its end: the latest turns
ASK_CHARS = 1000  # an ask's first line is read this far: beyond, its log length barely moves
_LEADING_SPACE = re.compile(r"\s*")


def complexity_text(text: str) -> str:
    """What the words term reads: a long conversation's start and end say what is asked; the
    middle (a pasted document, old turns) adds cost, not signal."""
    return clipped(text, HEAD_CHARS, TAIL_CHARS)


def length_term(counts: Counts) -> float:
    """log(1 + words), words as the token estimate counts them (`classifiers.tokens`): the counts
    are made once per message and added up, so a long conversation is not read again for this."""
    spaces, newlines = counts[0], counts[1]
    return math.log1p(spaces + newlines + 1)


def ask_term(ask: str) -> float:
    """log(1 + words) of the ask's first line that holds any: the instruction, without the text
    it supplies below it (an article, a contract, a list of choices)."""
    leading = _LEADING_SPACE.match(ask)  # without copying a long message, as lstrip() would
    start = leading.end() if leading else 0
    end = ask.find("\n", start, start + ASK_CHARS)
    return math.log1p(len(ask[start : end if end >= 0 else start + ASK_CHARS].split()))


class ComplexityModel:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self._pieces = PieceModel(data.pop("pieces"))
        self._words = SparseTextModel(data)
        extra = self._words.extra
        self.length_weight = float(extra["length_weight"])
        self.ask_weight = float(extra["ask_weight"])
        self.pieces_weight = float(extra["pieces_weight"])
        self._scale, self._shift = float(extra["scale"]), float(extra["shift"])

    def score(self, text: str, counts: Counts | None = None, ask: str | None = None) -> float:
        """`counts`: `text_counts(text)`, when the caller has them; `ask`: the latest user
        message's text (the whole `text` when not given: a single prompt)."""
        if not text.strip():
            return 0.0
        length = length_term(counts if counts is not None else text_counts(text))
        asked = ask_term(text if ask is None else ask)
        read = complexity_text(text)
        z = self._words.logit(read) + self.pieces_weight * self._pieces.logit(read)
        z += self.length_weight * length + self.ask_weight * asked
        return 1.0 / (1.0 + math.exp(-max(-500.0, self._scale * z + self._shift)))
