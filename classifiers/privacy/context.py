"""Whether a text reads as someone's own document (an email, a résumé, an application, a company's
text) rather than a question about the world: the names in the first are private, the names in
the second mostly famous.

Two terms, added as logits, each a logistic regression that `research.train` fits on real
prompts that carry private information (PUPA) against real public instructions (AlpacaEval), with
edgeway's template prompts for coverage: the words (binary TF-IDF over word 1-2-grams,
`classifiers.text_model.SparseTextModel`) and the mean of the text's static word-piece embeddings
(`classifiers.pieces.PieceModel`), which knows words it was never trained on and reads case and
punctuation (line breaks it reads as spaces: `context_pieces_text`). The span model uses the sum as
a gate: see `SpanModel`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from classifiers.pieces import PieceModel
from classifiers.text_model import SparseTextModel, clipped, head_and_tail

MODEL_PATH = Path(__file__).resolve().parent.parent / "models" / "private_context.json"
HEAD_CHARS = 1000  # a letter's greeting, a résumé's header: what the document is
TAIL_CHARS = 300  # and its sign-off, or the request after a pasted text


def context_text(text: str) -> str:
    """What the words term reads."""
    return clipped(trimmed(text), HEAD_CHARS, TAIL_CHARS)


def context_pieces_text(text: str) -> str:
    """What the pieces term reads: the same characters, in their own case, a line break as a space.
    PUPA's private prompts come without line breaks (its CSV flattened them), and a fourth of the
    public instructions hold some: read, a line break was the surest sign of a public text, and a
    short email read public for its greeting's and signature's lines."""
    return head_and_tail(trimmed(text), HEAD_CHARS, TAIL_CHARS).replace("\n", " ").replace("\r", " ")


def trimmed(text: str) -> str:
    """The text without white space at either end, as every prompt the gate is trained on comes.
    While the pieces term read a line break as a piece (`context_pieces_text`), one trailing
    newline (as pasted text and command-line clients end) read 23 of PUPA's 406 private-looking
    prompts as public, and two, 41. A text with nothing to trim is not copied.
    Nor is one pair of quotes around the whole text read: quoted whole, six measured prompts read
    differently to the gate and lost a finding."""
    if text and (text[0].isspace() or text[-1].isspace()):
        text = text.strip()
    # a prompt sent whole in quotes (as `json.dumps` or a copy from a chat log writes it) reads as itself
    if len(text) > 1 and text[0] in _OPENING_QUOTES and text[-1] == _OPENING_QUOTES[text[0]]:
        return text[1:-1].strip()
    return text


_OPENING_QUOTES = {'"': '"', "'": "'", "“": "”", "«": "»", "「": "」"}


class PrivateContext:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self._words = SparseTextModel(data["words"])
        self._pieces = PieceModel(data["pieces"])

    def terms(self, text: str) -> tuple[float, float]:
        """The words term's logit and the pieces term's: of `context_text(text)` and
        `context_pieces_text(text)`, cut from the text once (the gate runs on most messages that
        name someone, and the two cuts and trimmings cost as much as either term)."""
        read = head_and_tail(trimmed(text), HEAD_CHARS, TAIL_CHARS)
        pieces_text = read.replace("\n", " ").replace("\r", " ") if "\n" in read or "\r" in read else read
        return self._words.logit(read.lower()), self._pieces.logit(pieces_text)

    def logit(self, text: str) -> float:
        words, pieces = self.terms(text)
        return words + pieces

    def score(self, text: str) -> float:
        """P(the text is a private document)."""
        return probability(text, self.logit(text))


def probability(text: str, logit: float) -> float:
    """The gate's score from its logit for `text` (an empty text is no document)."""
    return 1.0 / (1.0 + math.exp(-max(-500.0, logit))) if text and not text.isspace() else 0.0
