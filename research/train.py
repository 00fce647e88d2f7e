"""Rebuild every trained artifact in `classifiers/models/` from the data in `research/data/`.

    python -m research.train

Deterministic: the same data and pinned library versions give the same models (to 1e-8 across
CPUs, checked by the tests). Every real row is trained on; the privacy thresholds are read from
research/chosen.json, where `python -m research.select` writes what it chooses on validation
folds; the complexity prior's configuration is `research.prior.SHIPPED`, chosen on the
development folds; the figures come from `python -m research.prior`, `python -m research.reading`
and `python -m research.crossval_privacy`. Template rows held out by `split_of` are never trained on;
`python -m research.evaluate` scores them as a regression check.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from classifiers.asks import FEATURES
from classifiers.complexity import EdgeClass, model_path
from classifiers.privacy.context import MODEL_PATH as CONTEXT_PATH
from classifiers.privacy.contextual import MODEL_PATH as SPANS_PATH
from classifiers.privacy.places import MODEL_PATH as PLACES_PATH
from classifiers.privacy.uncased import MODEL_PATH as NAMES_PATH
from classifiers.tokens import MODEL_PATH as TOKENS_PATH
from classifiers.tokens import token_features
from edge_runtime.config import EdgeModelConfig
from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import BUNDLED_PROBES, Probe, ReadingKind, gguf_digest
from gateway.bench.folds import routing_rows, split_of
from research import chosen
from research.data import DATA, read_jsonl
from research.data.real_privacy import private_prompts, public_prompts
from research.fitting import encoded
from research.gazetteer import person_names, place_names
from research.prior import ANCHORS, SHIPPED, fitted_prior
from research.privacy_model import privacy_rows, span_rows, train_context, train_spans
from research.wordlists import common_words, english_words, lowercase_words, vocabulary_words
from router.probe_fit import Labelled, fit_probe, probe_set, read_combination


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


# The edge model whose tokenizer the token estimate is fitted to: the one `edge_runtime` serves by default.
EDGE_MODEL = EdgeModelConfig().gguf


def train_complexity(edge_class: EdgeClass) -> bytes:
    """The text prior for `edge_class` (`research.prior.SHIPPED`), on every real row (the test folds
    too, once their figures are taken) and the template traffic."""
    columns = SHIPPED.columns()
    coef, bias = fitted_prior(SHIPPED, routing_rows(str(edge_class)), ANCHORS[str(edge_class)])
    names = [FEATURES[i] for i in columns]
    return encoded(
        {"edge_class": str(edge_class), "features": names, "weights": [float(w) for w in coef], "bias": bias}
    )


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


def train_probe() -> Path:
    """The bundled edge model's probe (the small class), as `edgeway router probe` fits one, on its
    logits for the probe set (`research.probe.logits_of`: read once, then from research/cache)."""
    from research.probe import GGUF, logits_of

    prompts = probe_set("small")
    found = logits_of(tuple(sorted(p.prompt for p in prompts)), GGUF)
    rows = [Labelled(p.source, p.target, p.prompt) for p in prompts]
    weights, bias = fit_probe(np.stack([found[p.prompt] for p in prompts]), rows)
    digest = gguf_digest(resolve_gguf(GGUF))
    return Probe(ReadingKind.LAST, weights, bias, digest, "small", read_combination(rows)).save(BUNDLED_PROBES)


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
    for edge_class in EdgeClass:
        model_path(edge_class).write_bytes(train_complexity(edge_class))
    PLACES_PATH.write_bytes(train_places())  # before the privacy thresholds, which the places' findings move
    NAMES_PATH.write_bytes(train_names(PLACES_PATH.read_bytes()))  # and the names'
    spans, context = train_privacy()
    SPANS_PATH.write_text(spans)
    CONTEXT_PATH.write_bytes(context)
    TOKENS_PATH.write_text(json.dumps(train_token_estimate(token_texts(complexity, privacy, "train")), indent=1) + "\n")
    probe = train_probe()
    priors = [model_path(edge_class) for edge_class in EdgeClass]
    for path in (*priors, PLACES_PATH, NAMES_PATH, SPANS_PATH, CONTEXT_PATH, TOKENS_PATH, probe):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print(f"wrote {path.relative_to(DATA.parent.parent)} ({path.stat().st_size:,} bytes, sha256 {digest})")


if __name__ == "__main__":
    main()
