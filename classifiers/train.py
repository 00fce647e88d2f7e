"""Rebuild every trained artifact in `classifiers/models/` from the data in `classifiers/data/`.

    python -m classifiers.train

Deterministic: the same data and library versions give the same bytes (checked by the tests).
Held-out rows (see `split_of`) are never trained on; `python -m classifiers.evaluate` scores them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

from classifiers.complexity import MODEL_PATH as COMPLEXITY_PATH
from classifiers.complexity import complexity_text
from classifiers.privacy.contextual import MODEL_PATH as SPANS_PATH
from classifiers.privacy.contextual import SPAN_TYPES, SpanModel
from classifiers.tokens import MODEL_PATH as TOKENS_PATH
from classifiers.tokens import token_features

DATA = Path(__file__).resolve().parent / "data"
PRESIDIO_TYPES = {"PERSON": "PERSON", "ORGANIZATION": "ORGANIZATION", "STREET_ADDRESS": "STREET_ADDRESS"}


def split_of(text: str, test_share: float = 0.2) -> str:
    """A stable split by content: the same prompt is always on the same side."""
    bucket = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if bucket < test_share else "train"


def read_jsonl(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# --- complexity ---------------------------------------------------------------------------
def complexity_rows() -> list[dict]:
    """Prompt, label (1 = the edge tier is not enough) and the measured outcomes where known."""
    rows = [
        {
            "prompt": r["prompt"],
            "label": int(not r["weak_correct"]),
            "source": r["source"],
            "weak_correct": r["weak_correct"],
            "strong_correct": r["strong_correct"],
        }
        for r in read_jsonl("routellm_train.jsonl")
    ]
    rows += [
        {
            "prompt": r["prompt"],
            "label": int(r["needs_cloud"]),
            "source": r["source"],
            "weak_correct": not r["needs_cloud"],
            "strong_correct": True,
        }
        for r in read_jsonl("traffic_labeled.jsonl")
    ]
    for row in rows:
        row["split"] = split_of(row["prompt"])
    return rows


def train_complexity(rows: list[dict]) -> bytes:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    train = [r for r in rows if r["split"] == "train"]
    # Lowercasing happens in complexity_text, not in ONNX (its StringNormalizer needs OS locales).
    # Binary term weights: as good as sublinear ones on the held-out split (APGR 0.577 / 0.687
    # against 0.575 / 0.683) and cheaper to score: no logarithm over the 8,000-wide vector.
    pipeline = Pipeline(
        [
            (
                "tfidf",
                TfidfVectorizer(
                    lowercase=False,
                    token_pattern=r"\b\w\w+\b",
                    ngram_range=(1, 2),
                    min_df=3,
                    max_features=8000,
                    binary=True,
                    dtype=np.float32,
                ),
            ),
            ("logreg", LogisticRegression(C=0.5, max_iter=3000)),  # C chosen on a validation split of train
        ]
    )
    pipeline.fit([complexity_text(r["prompt"]) for r in train], [r["label"] for r in train])
    onnx_model = convert_sklearn(
        pipeline,
        initial_types=[("text", StringTensorType([None, 1]))],
        options={id(pipeline.steps[1][1]): {"zipmap": False}},
        target_opset=17,
    )
    _idf_in_the_vectorizer(onnx_model)
    _check_scores(onnx_model, pipeline, [complexity_text(r["prompt"]) for r in train[:500]])
    onnx_model.producer_version = ""  # keep the bytes independent of the converter's patch release
    onnx_model.graph.name = "edgeway_complexity"  # skl2onnx names the graph with a random uuid
    # ... and lists opsets in set order, which changes with Python's hash seed
    opsets = sorted((o.domain, o.version) for o in onnx_model.opset_import)
    del onnx_model.opset_import[:]
    for domain, version in opsets:
        onnx_model.opset_import.add(domain=domain, version=version)
    return onnx_model.SerializeToString()


def _check_scores(model, pipeline, texts: list[str]) -> None:
    """The exported model scores what the trained one does (to float32 rounding)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    exported = session.run(["probabilities"], {"text": np.array([[t] for t in texts], dtype=object)})[0][:, 1]
    trained = pipeline.predict_proba(texts)[:, 1]
    if np.abs(exported - trained).max() > 1e-5:
        raise AssertionError(f"the ONNX model is off by {np.abs(exported - trained).max():.2e}")


def _idf_in_the_vectorizer(model) -> None:
    """skl2onnx writes binary TF-IDF as counts, two Casts to 0/1 and a Mul by the idf vector: three
    passes over an 8,000-wide vector per request. ONNX's TfIdfVectorizer does that itself in mode
    IDF (each n-gram present gives its weight), so the weights move into it and the three go."""
    import onnx
    from onnx import numpy_helper

    graph = model.graph
    vectorizer = next(n for n in graph.node if n.op_type == "TfIdfVectorizer")
    casts = [n for n in graph.node if n.op_type == "Cast"]
    mul = next(n for n in graph.node if n.op_type == "Mul")
    idf = next(numpy_helper.to_array(i) for i in graph.initializer if i.name in mul.input)
    attributes = {a.name: a for a in vectorizer.attribute}
    indexes = onnx.helper.get_attribute_value(attributes["ngram_indexes"])
    for name, value in (("mode", "IDF"), ("weights", [float(idf[i]) for i in indexes])):
        vectorizer.attribute.remove(attributes[name])
        vectorizer.attribute.append(onnx.helper.make_attribute(name, value))
    for node in graph.node:
        node.input[:] = [vectorizer.output[0] if x == mul.output[0] else x for x in node.input]
    for node in casts + [mul]:
        graph.node.remove(node)
    for initializer in [i for i in graph.initializer if i.name in mul.input]:
        graph.initializer.remove(initializer)


# --- personal data spans ------------------------------------------------------------------
def privacy_rows() -> list[dict]:
    rows = []
    for r in read_jsonl("presidio_synth_v2.jsonl"):
        spans = [{**s, "type": PRESIDIO_TYPES.get(s["type"], s["type"])} for s in r["spans"]]
        rows.append({"text": r["text"], "spans": spans, "split": split_of(r["text"]), "source": "presidio"})
    rows += [{**r, "source": "edgeway"} for r in read_jsonl("privacy_prompts.jsonl")]
    return rows


def common_words() -> list[str]:
    """Words seen often in lower case in ordinary prompts: capitalized, they are rarely names."""
    counts: Counter[str] = Counter()
    for r in read_jsonl("routellm_train.jsonl"):
        counts.update(w for w in re.findall(r"\b[a-z][a-z']+\b", r["prompt"]))
    return sorted(w for w, n in counts.items() if n >= 15)


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
    from sklearn.linear_model import LogisticRegression

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
    model = LogisticRegression(C=0.5, max_iter=5000)
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
        "weights": weights,
    }


# --- token estimate -----------------------------------------------------------------------
def train_token_estimate(texts: list[str]) -> dict:
    from llama_cpp import Llama

    from edge_runtime.gguf import resolve_gguf

    vocab = Llama(model_path=str(resolve_gguf("bundled:smollm2-135m")), vocab_only=True, verbose=False)
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


def main() -> None:
    complexity = complexity_rows()
    privacy = privacy_rows()
    COMPLEXITY_PATH.parent.mkdir(parents=True, exist_ok=True)
    COMPLEXITY_PATH.write_bytes(train_complexity(complexity))
    SPANS_PATH.write_text(json.dumps(train_spans(privacy), sort_keys=True, separators=(",", ":")) + "\n")
    TOKENS_PATH.write_text(json.dumps(train_token_estimate(token_texts(complexity, privacy, "train")), indent=1) + "\n")
    for path in (COMPLEXITY_PATH, SPANS_PATH, TOKENS_PATH):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print(f"wrote {path.relative_to(DATA.parent.parent)} ({path.stat().st_size:,} bytes, sha256 {digest})")


if __name__ == "__main__":
    main()
