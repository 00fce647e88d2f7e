"""The privacy models' training: the span model (`classifiers.privacy.contextual`) on the template
rows and real prompts, and the private-context gate (`classifiers.privacy.context`), a words term
and a pieces term over WordLlama's static embeddings, on real private prompts against real public
ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np

from classifiers.privacy.context import context_pieces_text, context_text
from classifiers.privacy.contextual import SPAN_TYPES, SURE, SpanModel
from gateway.bench.folds import split_of
from research.data import read_jsonl
from research.data.real_privacy import PrivatePrompt, exam_questions
from research.fitting import (
    ASCII_WORDS,
    check_pieces,
    encoded,
    folded_pieces,
    logistic_regression,
    mean_embedding,
    sparse_model,
    tfidf_logreg,
)
from research.wordlists import acronyms, common_words, wordllama


@dataclass(frozen=True)
class Thresholds:
    threshold: float  # a candidate is a finding in a private-looking text from here
    confident: float  # and in a text that does not read plainly public from here
    context: float  # a text looks private from here, for the names, links and words in capitals
    place_context: float  # and for the places
    sure_context: float = 0.0  # and for the confident ones: a word problem's "Mrs. Cruz" is a name for sure
    sure: float = SURE  # an address anywhere from here, a name beside other personal data (fixed)

    def as_dict(self) -> dict[str, float]:
        return {
            "threshold": self.threshold,
            "confident": self.confident,
            "context": self.context,
            "place_context": self.place_context,
            "sure_context": self.sure_context,
            "sure": self.sure,
        }


PRESIDIO_TYPES = {"PERSON": "PERSON", "ORGANIZATION": "ORGANIZATION", "STREET_ADDRESS": "STREET_ADDRESS"}


# Chosen out of fold once line breaks read as spaces (2026-12-03; python -m research.crossval):
# the held-out curve at 3 / 3.5 / 4 / 5% flagged, and recall / flagged through the fold choice, at
# C 0.03 67.7 / 69.1 / 70.2 / 72.5% (63.3% / 4.2%), 0.05 67.9 / 69.7 / 70.9 / 73.4% (64.4% / 3.7%),
# 0.1 68.1 / 69.5 / 70.4 / 72.7% (65.1% / 3.5%), 0.3 65.8 / 67.4 / 68.8 / 71.6% (64.2% / 5.0%),
# 1 63.5 / 64.7 / 65.8 / 68.1% (60.7% / 4.0%). (0.3 and 0.9 were alike while line breaks were read.)
PIECES_C = 0.1


def piece_model(texts: list[str], labels: list[int], weights: list[float]) -> dict:
    """A logistic regression on each text's mean piece embedding, folded into one score per piece
    (`classifiers.pieces`), checked to score `texts` as scikit-learn does."""
    vocab, embedding = wordllama()
    longest = max(len(p) for p in vocab)
    x = np.stack([mean_embedding(t, vocab, embedding, longest) for t in texts])
    logreg = logistic_regression(PIECES_C).fit(x, labels, sample_weight=weights)
    folded = folded_pieces(vocab, embedding @ logreg.coef_[0], logreg.intercept_[0])
    check_pieces("the piece model", folded, texts, logreg.decision_function(x))
    return folded


def privacy_rows() -> list[dict]:
    rows = []
    for r in read_jsonl("presidio_synth_v2.jsonl"):
        spans = [{**s, "type": PRESIDIO_TYPES.get(s["type"], s["type"])} for s in r["spans"]]
        rows.append({"text": r["text"], "spans": spans, "split": split_of(r["text"]), "source": "presidio"})
    rows += [{**r, "source": "edgeway"} for r in read_jsonl("privacy_prompts.jsonl")]
    return rows


def real_span_rows(private: list[PrivatePrompt], public: list[str], typer: dict) -> list[dict]:
    """Real prompts as span-model rows: a candidate on one of PUPA's private units is personal
    data of the type that `typer` (a model trained on the template rows alone) gives it, as PUPA's
    units have no type; every candidate in a public instruction is none."""
    model = SpanModel.untrained(typer["common"])
    weights, bias = typer["weights"], np.array(typer["bias"])
    rows = []
    for p in private:
        spans = []
        for kind, start, end in model.candidates(p.text):
            if any(start < e and s < end for s, e in p.units):
                score = bias + sum(
                    (np.array(weights[f]) for f in model.features(p.text, kind, start, end) if f in weights),
                    np.zeros(len(bias)),
                )
                spans.append({"type": SPAN_TYPES[1 + int(np.argmax(score[1:]))], "start": start, "end": end})
        rows.append({"text": p.text, "spans": spans, "split": "train", "source": "pupa"})
    rows += [{"text": t, "spans": [], "split": "train", "source": "alpaca_eval"} for t in public]
    return rows


@cache
def template_spans() -> tuple[list[dict], dict]:
    """The template rows' training split, and a span model trained on it alone (it types PUPA's
    units): the same for every fold and for the shipped model, so made once."""
    rows = [r for r in privacy_rows() if r["split"] == "train"]
    return rows, train_spans(rows)


def span_rows(private: list[PrivatePrompt], public: list[str]) -> list[dict]:
    """Everything the span model trains on: the template rows' training split and the real rows."""
    templates, typer = template_spans()
    return templates + real_span_rows(private, public, typer)


# A template row counts a fiftieth of a real prompt in the gate: coverage, not the signal.
# Out of fold (python -m research.crossval), PUPA recall / public prompts flagged: at 0.05
# 58.4% / 4.5%, at 0.02 61.4% / 4.2%, at 0.01 61.7% / 4.7%; below 0.02 Presidio's one-liners
# ("Megan lives on Via Tasso 129") read ever more public.
CONTEXT_COVERAGE_WEIGHT = 0.02
# Exam questions (every fifth MMLU / GSM8K question, `exam_questions`) are real public questions
# that name people and places ("Mrs. Cruz bought 3 pies"), and count a tenth of a prompt: at a
# fiftieth, as the template rows, the gate read GSM8K word problems as private as PUPA's finance
# homework. Out of fold, PUPA recall / AlpacaEval / GSM8K / MMLU flagged (the questions no gate
# trained on), the thresholds `sure_context` included chosen each time: at 0.02 72.3% / 4.7% /
# 16.0% / 6.3%, at 0.05 71.6% / 3.7% / 12.4% / 3.5%, at 0.1 72.7% / 3.5% / 4.2% / 1.5%, at 0.2
# 67.7% / 4.2% / 4.2% / 1.2% (before the days, months and verbs became common words).
EXAM_WEIGHT = 0.1
CONTEXT_C, CONTEXT_FEATURES = 2.0, 20000


def train_context(private: list[str], public: list[str]) -> bytes:
    """The private-context gate (`classifiers.privacy.context`): real private prompts against real
    public ones, the template rows' training split for coverage (with personal data or not)."""
    templates = [(r["text"], int(bool(r["spans"]))) for r in privacy_rows() if r["split"] == "train"]
    exams = [q for questions in exam_questions(trained=True).values() for q in questions]
    raw = private + public + [t for t, _ in templates] + exams
    labels = [1] * len(private) + [0] * len(public) + [label for _, label in templates] + [0] * len(exams)
    weights = [1.0] * (len(private) + len(public)) + [CONTEXT_COVERAGE_WEIGHT] * len(templates)
    weights += [EXAM_WEIGHT] * len(exams)
    texts = [context_text(t) for t in raw]
    pipeline = tfidf_logreg(texts, labels, CONTEXT_C, CONTEXT_FEATURES, weights, ASCII_WORDS)
    words = sparse_model(pipeline, ASCII_WORDS, texts)
    return encoded({"words": words, "pieces": piece_model([context_pieces_text(t) for t in raw], labels, weights)})


def span_label(start: int, end: int, spans: list[dict]) -> str:
    overlap: Counter[str] = Counter()
    for s in spans:
        if s["type"] in SPAN_TYPES:
            overlap[s["type"]] += max(0, min(end, s["end"]) - max(start, s["start"]))
    if not overlap:
        return "O"
    kind, chars = overlap.most_common(1)[0]
    return kind if chars * 2 >= end - start else "O"


def train_spans(rows: list[dict]) -> dict:
    from sklearn.feature_extraction import DictVectorizer

    common = frozenset(common_words())
    scanner = SpanModel.untrained(common)
    samples, labels = [], []
    for r in rows:
        if r["split"] != "train":
            continue
        for kind, start, end in scanner.candidates(r["text"]):
            samples.append({f: 1 for f in scanner.features(r["text"], kind, start, end)})
            labels.append(SPAN_TYPES.index(span_label(start, end, r["spans"])))
    vectorizer = DictVectorizer(sort=True)
    x = vectorizer.fit_transform(samples)
    model = logistic_regression(0.5)
    model.fit(x, labels)
    assert list(model.classes_) == list(range(len(SPAN_TYPES)))
    weights = {
        name: [round(float(w), 4) for w in model.coef_[:, i]]
        for i, name in enumerate(vectorizer.feature_names_)
        if np.abs(model.coef_[:, i]).max() >= 0.01
    }
    return {
        "types": list(SPAN_TYPES),
        "bias": [round(float(b), 4) for b in model.intercept_],
        "threshold": 0.5,
        "common": sorted(common),
        "acronyms": acronyms(),
        "weights": weights,
    }
