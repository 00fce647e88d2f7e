"""Rebuild every trained artifact in `classifiers/models/` from the data in `research/data/`.

    python -m research.train

Deterministic: the same data and pinned library versions give the same models (to 1e-8 across
CPUs, checked by the tests). Every real row is trained on; the hyperparameters (the terms'
weights, the calibration, the privacy thresholds) are read from research/chosen.json, where
`python -m research.select` writes what it chooses on validation folds; the figures come from
`python -m research.crossval`. Template rows held out by `split_of` are never trained on;
`python -m research.evaluate` scores them as a regression check.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from classifiers.complexity import MODEL_PATH as COMPLEXITY_PATH
from classifiers.complexity import complexity_text
from classifiers.privacy.context import MODEL_PATH as CONTEXT_PATH
from classifiers.privacy.contextual import MODEL_PATH as SPANS_PATH
from classifiers.privacy.places import MODEL_PATH as PLACES_PATH
from classifiers.privacy.uncased import MODEL_PATH as NAMES_PATH
from classifiers.tokens import MODEL_PATH as TOKENS_PATH
from classifiers.tokens import token_features
from research import chosen
from research.complexity_terms import EDGE_MODEL, complexity_pieces, complexity_words, pieces_data
from research.data import DATA, read_jsonl
from research.data.real_privacy import private_prompts, public_prompts
from research.fitting import WORDS, encoded, sparse_model
from research.folds import routing_rows, split_of
from research.gazetteer import person_names, place_names
from research.privacy_model import privacy_rows, span_rows, train_context, train_spans
from research.wordlists import common_words, english_words, lowercase_words, vocabulary_words


def complexity_rows() -> list[dict]:
    """Prompt, label (1 = the edge tier is not enough), source and split: the texts the token
    estimate is fitted and measured on."""
    rows = [
        {"prompt": r["prompt"], "label": int(not r["weak_correct"]), "source": r["source"]}
        for r in read_jsonl("routellm_train.jsonl")
    ]
    rows += [
        {"prompt": r["prompt"], "label": int(r["needs_cloud"]), "source": r["source"]}
        for r in read_jsonl("traffic_labeled.jsonl")
    ]
    for row in rows:
        row["split"] = split_of(row["prompt"])
    return rows


def train_complexity() -> bytes:
    """On every real row and the template traffic, with the weights and calibration of
    research/chosen.json."""
    rows = routing_rows()
    weights, scale, shift = chosen.complexity()
    pipeline = complexity_words(rows)
    texts = [complexity_text(r.prompt) for r in rows]
    extra = {
        "length_weight": weights.length,
        "ask_weight": weights.ask,
        "pieces_weight": weights.pieces,
        "scale": scale,
        "shift": shift,
    }
    data = sparse_model(pipeline, WORDS, texts, extra)
    data["pieces"] = pieces_data(complexity_pieces(rows), texts)
    return encoded(data)


def train_token_estimate(texts: list[str]) -> dict:
    from llama_cpp import Llama

    from edge_runtime.gguf import resolve_gguf

    vocab = Llama(model_path=str(resolve_gguf(EDGE_MODEL)), vocab_only=True, verbose=False)
    x = np.array([token_features(t) for t in texts])
    y = np.array([len(vocab.tokenize(t.encode("utf-8"), add_bos=False, special=False)) for t in texts])
    coefficients, *_ = np.linalg.lstsq(x, y, rcond=None)
    return {
        "tokenizer": "SmolLM2-135M-Instruct",
        "features": ["bias", "words", "digits", "symbols", "non_ascii_bytes", "newlines", "chars"],
        "coefficients": [round(float(c), 5) for c in coefficients],
    }


def token_texts(complexity: list[dict], privacy: list[dict], split: str) -> list[str]:
    texts = [r["prompt"] for r in complexity if r["split"] == split]
    texts += [r["text"] for r in privacy if r["split"] == split]
    return texts


def train_privacy() -> tuple[str, bytes]:
    """The span model and the private-context gate (both as JSON), on every real prompt, with the
    thresholds of research/chosen.json."""
    private, public = private_prompts(), public_prompts()
    spans = train_spans(span_rows(private, public))
    spans.update(chosen.privacy_thresholds().as_dict())
    context = train_context([p.text for p in private], public)
    return json.dumps(spans, sort_keys=True, separators=(",", ":")) + "\n", context


def train_places() -> bytes:
    return place_names(frozenset(common_words()), vocabulary_words(), lowercase_words(2))


def train_names(places: bytes) -> bytes:
    return person_names(english_words(), frozenset(json.loads(places)["names"]))


def main() -> None:
    complexity = complexity_rows()
    privacy = privacy_rows()
    COMPLEXITY_PATH.parent.mkdir(parents=True, exist_ok=True)
    COMPLEXITY_PATH.write_bytes(train_complexity())
    PLACES_PATH.write_bytes(train_places())  # before the privacy thresholds, which the places' findings move
    NAMES_PATH.write_bytes(train_names(PLACES_PATH.read_bytes()))  # and the names'
    spans, context = train_privacy()
    SPANS_PATH.write_text(spans)
    CONTEXT_PATH.write_bytes(context)
    TOKENS_PATH.write_text(json.dumps(train_token_estimate(token_texts(complexity, privacy, "train")), indent=1) + "\n")
    for path in (COMPLEXITY_PATH, PLACES_PATH, NAMES_PATH, SPANS_PATH, CONTEXT_PATH, TOKENS_PATH):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print(f"wrote {path.relative_to(DATA.parent.parent)} ({path.stat().st_size:,} bytes, sha256 {digest})")


if __name__ == "__main__":
    main()
