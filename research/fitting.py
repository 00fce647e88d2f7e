"""The fitting helpers every trained artifact shares: a logistic regression solved to its optimum,
the binary TF-IDF text model (`classifiers.text_model`), folding a linear model over embeddings into
one score a piece (`classifiers.pieces`), and the checks that an artifact scores its training
texts exactly as scikit-learn does."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

WORDS = r"\b\w\w+\b"
ASCII_WORDS = r"[a-z0-9_]{2,}"  # no words of other scripts: the gate learns from English prompts


def logistic_regression(C: float) -> Any:
    """Every logistic regression here, solved to its optimum (Newton-CG to a gradient of 1e-12),
    so that any CPU rebuilds the same model. The problem is strictly convex and has one optimum;
    lbfgs at scikit-learn's tolerance stops where its path leaves it, and the path follows the
    CPU's rounding (OpenBLAS picks its kernels by CPU): the complexity model's bias was 1.2e-3
    apart between the machine that committed it and an AMD EPYC, which flipped a near-tie in
    the length weights' choice. Two orders of the same rows agree to 3e-13 this way, 8e-6 with
    lbfgs even at a tolerance of 1e-10."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, solver="newton-cg", tol=1e-12, max_iter=1000)


def tfidf_logreg(
    texts: list[str],
    labels: list[int],
    C: float,
    max_features: int,
    sample_weight: list[float] | None = None,
    token_pattern: str = WORDS,
) -> Any:
    """Binary TF-IDF over word 1-2-grams and a logistic regression: the shape of every text model
    here (`classifiers.text_model`). Binary term weights score as well as sublinear ones (APGR
    0.577 / 0.687 against 0.575 / 0.683 on the old split) and are what `SparseTextModel` reads.
    Texts arrive `clipped`."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline

    vocabulary = frequent_grams(texts, token_pattern, max_features)
    vectorizer = TfidfVectorizer(
        lowercase=False, token_pattern=token_pattern, ngram_range=(1, 2), vocabulary=vocabulary, binary=True
    )
    pipeline = Pipeline([("tfidf", vectorizer), ("logreg", logistic_regression(C))])
    pipeline.fit(texts, labels, logreg__sample_weight=sample_weight)
    return pipeline


MIN_TEXTS = 3  # a word or pair in fewer texts than this is left out


def frequent_grams(texts: list[str], token_pattern: str, count: int) -> dict[str, int]:
    """The `count` word 1-2-grams found in the most texts (of those in `MIN_TEXTS` or more), ties
    broken by the gram itself. scikit-learn's own `max_features` cut sorts the counts with an
    unstable sort, and which of the grams tied at the cut it keeps follows the CPU's sorting
    kernels: an AMD EPYC kept other words than the machine that committed the models, and every
    weight moved."""
    from sklearn.feature_extraction.text import CountVectorizer

    counter = CountVectorizer(
        lowercase=False, token_pattern=token_pattern, ngram_range=(1, 2), min_df=MIN_TEXTS, binary=True
    )
    found = np.asarray(counter.fit_transform(texts).sum(axis=0)).ravel()
    grams = counter.get_feature_names_out()
    kept = sorted(range(len(grams)), key=lambda i: (-int(found[i]), str(grams[i])))[:count]
    return {gram: i for i, gram in enumerate(sorted(str(grams[i]) for i in kept))}


def soft_tfidf_logreg(texts: list[str], targets: list[float], C: float, max_features: int, counts: list[float]) -> Any:
    """Trained on a soft target: each text counts as positive with weight `count * target`,
    negative with the rest."""
    n = len(texts)
    pairs = list(zip(counts, targets, strict=True))
    weights = [c * t for c, t in pairs] + [c * (1.0 - t) for c, t in pairs]
    return tfidf_logreg(texts * 2, [1] * n + [0] * n, C, max_features, weights)


def sparse_model(pipeline: Any, token_pattern: str, texts: list[str], extra: dict[str, float] | None = None) -> dict:
    """The fitted pipeline as `SparseTextModel`'s data (with `extra` fields), checked to score
    `texts` as scikit-learn does."""
    from classifiers.text_model import SparseTextModel

    vectorizer, logreg = pipeline.steps[0][1], pipeline.steps[1][1]
    coef = logreg.coef_[0]
    grams = {
        gram: [float(coef[i] * vectorizer.idf_[i]), float(vectorizer.idf_[i] ** 2)]
        for gram, i in vectorizer.vocabulary_.items()
    }
    data = {"token_pattern": token_pattern, "bias": float(logreg.intercept_[0]), "grams": grams, **(extra or {})}
    data = json.loads(json.dumps(data))  # as read back from the file
    model = SparseTextModel(data)
    check("the sparse model", np.array([model.logit(t) for t in texts]), pipeline.decision_function(texts))
    return data


def check(name: str, scored: np.ndarray, trained: np.ndarray) -> None:
    if np.abs(scored - trained).max() > 1e-6:
        raise AssertionError(f"{name} is off by {np.abs(scored - trained).max():.2e}")


def encoded(data: dict) -> bytes:
    return (json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def mean_embedding(text: str, vocab: dict[str, int], embedding: np.ndarray, longest: int) -> np.ndarray:
    """The mean embedding of `text`'s pieces (`classifiers.pieces`), "<s>" among them."""
    from classifiers.pieces import pieces

    return embedding[pieces(text, vocab, longest)].mean(axis=0)


def folded_pieces(
    vocab: dict[str, int], scores: np.ndarray, bias: float, keep: Callable[[str], bool] | None = None
) -> dict:
    """`PieceModel`'s data: a linear model's score of each piece's embedding (those `keep` keeps)."""
    return {"bias": float(bias), "scores": {p: float(scores[i]) for p, i in vocab.items() if keep is None or keep(p)}}


def check_pieces(name: str, data: dict, texts: list[str], trained: np.ndarray) -> None:
    from classifiers.pieces import PieceModel

    model = PieceModel(data)
    check(name, np.array([model.logit(t) for t in texts]), trained)
