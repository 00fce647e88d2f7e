"""The complexity model's two learned terms: what the prompt's words ask for (binary TF-IDF and a
logistic regression on what routing buys, `classifiers.text_model`) and what the bundled edge
model's input embeddings say of the same text (a ridge regression on their mean, folded into one
score a piece, `classifiers.pieces`). Both are fitted on a list of `RoutingRow`s: every row for the
shipped model, a fold's training rows for the cross-validation."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from classifiers.complexity import complexity_text
from edge_runtime.config import EdgeModelConfig
from research.fitting import check_pieces, folded_pieces, mean_embedding, soft_tfidf_logreg
from research.folds import RoutingRow
from research.wordlists import gguf_pieces


@dataclass(frozen=True)
class Weights:
    """How the terms add up (the words term counts 1): chosen on the validation folds by
    `python -m research.select`, kept in research/chosen.json."""

    length: float  # of log words of the whole text
    ask: float  # of log words of the ask's first line
    pieces: float = 0.0  # of the edge-pieces term


# C chosen on the validation folds by mean APGR over the three sources (`python -m
# research.crossval --words-c C`): 0.25 0.594 / 0.639 / 0.549, 0.5 0.596 / 0.638 / 0.550,
# 1 0.600 / 0.636 / 0.553, 2 0.605 / 0.630 / 0.555, 4 0.610 / 0.623 / 0.557, 8 0.612 / 0.604 /
# 0.558 (2 and 4 tie at 0.597: the more regularized one).
COMPLEXITY_C, COMPLEXITY_FEATURES = 2.0, 8000
# AlpacaEval's instructions count thirty times each: they are the only open-ended chat among
# 11,869 exam questions, and counted once each the bag of words learned mostly which exams the
# weak model fails. Out of fold (`python -m research.crossval --alpaca-eval-weight W`), MMLU /
# GSM8K / AlpacaEval APGR with the length weights 0.5 / 2 and C 2 (all three rose together): at 1
# 0.605 / 0.630 / 0.584, 3 0.607 / 0.633 / 0.588, 10 0.609 / 0.636 / 0.593, 20 0.610 / 0.637 /
# 0.594, 30 0.611 / 0.638 / 0.595, 60 0.611 / 0.639 / 0.595; at 30, C 1 gave 0.606 / 0.642 / 0.594
# and C 4 0.614 / 0.625 / 0.596 (2 kept). The length weights chosen anew at 30: 0.5 / 3.
ALPACA_EVAL_WEIGHT = 30.0


def complexity_words(rows: list[RoutingRow]) -> Any:
    """The complexity model's words term, trained on what routing buys (`RoutingRow.target`)."""
    return soft_tfidf_logreg(
        [complexity_text(r.prompt) for r in rows],
        [r.target for r in rows],
        COMPLEXITY_C,
        COMPLEXITY_FEATURES,
        [ALPACA_EVAL_WEIGHT if r.kind == "alpaca_eval" else 1.0 for r in rows],
    )


# The edge-pieces term's ridge penalty, chosen on the validation folds by mean APGR over the three
# sources, each with its best weights (`research.crossval.Weights`): 0.01 / 0.03 / 0.1 / 0.3 gave
# 0.6214 / 0.6217 / 0.6217 / 0.6208 (AlpacaEval alone, out of fold: 0.593 / 0.608 / 0.624 / 0.629);
# 0.03 and 0.1 tie to six places and the more regularized one ships.
EDGE_PIECES_ALPHA = 0.1


# The edge model whose input embeddings the edge-pieces term reads, and whose tokenizer the token
# estimate is fitted to: the one `edge_runtime` serves by default.
EDGE_MODEL = EdgeModelConfig().gguf


@cache
def edge_pieces() -> tuple[dict[str, int], np.ndarray, int]:
    """The bundled edge model's pieces, input embeddings (`wordlists.gguf_pieces`) and longest
    piece, read once a process."""
    from edge_runtime.gguf import resolve_gguf

    vocab, embedding = gguf_pieces(resolve_gguf(EDGE_MODEL))
    return vocab, embedding, max(len(p) for p in vocab)


@cache
def edge_embedding(text: str) -> np.ndarray:
    """The mean input embedding of `text`'s pieces (`classifiers.pieces`, "<s>" a row of zeros)."""
    return mean_embedding(text, *edge_pieces())


def complexity_pieces(rows: list[RoutingRow]) -> Any:
    """The complexity model's edge-pieces term: a ridge regression of AlpacaEval's label (what the
    cloud buys over the edge) on the mean of the edge model's input embeddings of the words term's
    text. Trained on AlpacaEval's rows alone: the exams' labels ask which subjects Mixtral fails,
    and trained on every source (logistic, AlpacaEval counted 30 times) it gained at most 0.002."""
    from sklearn.linear_model import Ridge

    mine = [r for r in rows if r.kind == "alpaca_eval"]
    x = np.stack([edge_embedding(complexity_text(r.prompt)) for r in mine])
    return Ridge(alpha=EDGE_PIECES_ALPHA, solver="cholesky").fit(x, [r.target for r in mine])


def pieces_data(ridge: Any, texts: list[str]) -> dict:
    """The fitted ridge as `PieceModel`'s data, one score a piece, checked to score `texts` as
    scikit-learn does. The words term's text is in lower case: a piece with a capital is never
    read, and is left out (the byte pieces stay: every table has them)."""
    vocab, embedding, _ = edge_pieces()
    folded = folded_pieces(vocab, embedding @ ridge.coef_, ridge.intercept_, _lower_case_or_byte)
    check_pieces("the edge-pieces model", folded, texts, ridge.predict(np.stack([edge_embedding(t) for t in texts])))
    return folded


def _lower_case_or_byte(piece: str) -> bool:
    return piece == piece.lower() or piece.startswith("<0x")
