"""The complexity signal, the text prior: a calibrated probability that the cloud's answer to this
request is better than the edge's, from what the request's text says before any model reads it.

A logistic regression on features of `classifiers.asks`, fitted by research/ for one edge class
(`EdgeClass`: what the edge model is measured against). Measured on sources it never saw, only the
lengths carried: how long the whole conversation is, and how long the ask's first line is
("Summarize the article.\\n\\n<the article>" is long and easy, a word problem told in one long
paragraph is long and hard). What a request asks for (math, code, reasoning) ranked near chance
within every source, and a bag of words learned which exam subjects the weak model fails; both
are left to a deployment's own fitted router, which learns from its own traffic, and to the edge
model's reading of the prompt (`router.app_router`).
"""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path

from classifiers.asks import Ask, ask_term, features, words_term
from classifiers.tokens import Counts, text_counts

MODELS = Path(__file__).resolve().parent / "models"
SMALL_UP_TO = 4_000_000_000  # parameters: a larger edge model is measured as a mid-size one


class EdgeClass(StrEnum):
    """What an edge model's answers are measured against GPT-4-class answers as."""

    SMALL = "small"  # up to 4B parameters: AlpacaEval's 1B model (and Mixtral's exam labels)
    MID = "mid"  # larger: AlpacaEval's 7B-14B models and Mixtral-8x7B's exam labels

    @classmethod
    def of_size(cls, parameters: int) -> EdgeClass:
        return cls.SMALL if parameters <= SMALL_UP_TO else cls.MID


def model_path(edge_class: EdgeClass) -> Path:
    return MODELS / f"complexity-{edge_class}.json"


_LENGTHS = frozenset({Ask.WORDS, Ask.ASK_WORDS})


class ComplexityModel:
    def __init__(self, edge_class: EdgeClass = EdgeClass.SMALL, path: Path | None = None) -> None:
        data = json.loads((path or model_path(edge_class)).read_text(encoding="utf-8"))
        self.edge_class = EdgeClass(data["edge_class"])
        self.terms = tuple(
            (Ask[name.upper()], float(w)) for name, w in zip(data["features"], data["weights"], strict=True)
        )
        self.bias = float(data["bias"])
        self._lengths_only = {feature for feature, _ in self.terms} <= _LENGTHS

    def logit(self, text: str, counts: Counts | None = None, ask: str | None = None) -> float:
        """`counts`: `text_counts(text)`, when the caller has them; `ask`: the latest user
        message's text (the whole `text` when not given: a single prompt)."""
        counts = counts if counts is not None else text_counts(text)
        words = counts[0] + counts[1] + 1
        ask = text if ask is None else ask
        if self._lengths_only:  # what the shipped priors read: no pattern runs over the text
            values = {Ask.WORDS: words_term(words), Ask.ASK_WORDS: ask_term(ask)}
            return self.bias + sum(w * values[f] for f, w in self.terms)
        found = features(text, ask, words)
        return self.bias + sum(w * found[f] for f, w in self.terms)

    def score(self, text: str, counts: Counts | None = None, ask: str | None = None) -> float:
        if not text or text.isspace():
            return 0.0
        return 1.0 / (1.0 + math.exp(-max(-500.0, min(500.0, self.logit(text, counts, ask)))))
