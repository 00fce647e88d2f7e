"""The routing rows and how they are split: what the complexity model learns from, by source, and
the folds that keep every MMLU subject, GSM8K question and AlpacaEval instruction (with its
near-duplicates) on one side.

What routing buys is the label: for MMLU and GSM8K, the strong model right where the weak one was
wrong (a prompt both miss gains nothing from the cloud); for AlpacaEval, GPT-4-turbo's answer
preferred over the edge's (the 1B model's preference against it, subtracted from one). Quality
for the curves: MMLU and GSM8K, correctness (weak: Mixtral-8x7B, strong: GPT-4); AlpacaEval, the
preference against GPT-4-turbo of the 1B model (the edge) and 0.5 for GPT-4-turbo itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.bench.classify import DATA, require_data

ALPACA_EVAL_EDGE = "FuseChat-Llama-3.2-1B-Instruct"  # AlpacaEval's stand-in for a small edge model
# AlpacaEval's stand-ins for a mid-size edge model, Mixtral-8x7B's class (the exams' weak model):
# the 7B-14B instruction-tuned models of 2023-2024 among its 21, fixed before any was measured
MID_MODELS = (
    "OpenHermes-2.5-Mistral-7B",
    "FuseChat-Llama-3.1-8B-Instruct",
    "FuseChat-Qwen-2.5-7B-Instruct",
    "FuseChat-Gemma-2-9B-Instruct",
    "Qwen-14B-Chat",
    "vicuna-13b-v1.5",
    "wizardlm-13b",
)
LABELS = {"small": (ALPACA_EVAL_EDGE,), "mid": MID_MODELS}  # by edge class
KINDS = ("mmlu", "gsm8k", "alpaca_eval")


@dataclass(frozen=True)
class RoutingRow:
    prompt: str
    kind: str  # mmlu | gsm8k | alpaca_eval | template
    group: str  # what must not cross a fold: the MMLU subject, else the prompt itself
    weak: float  # the edge tier's answer quality
    strong: float  # the cloud tier's
    target: float  # P(the cloud is worth it), what the model learns


def read_jsonl(name: str) -> list[dict[str, Any]]:
    """The rows of one of the repository's data files (research/data, in a checkout)."""
    require_data()
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def routing_rows(edge_class: str = "small") -> list[RoutingRow]:
    """Every row, AlpacaEval's labeled for `edge_class` (the exams have Mixtral's labels alone)."""
    rows = []
    for r in read_jsonl("routellm_train.jsonl"):
        kind = "mmlu" if r["source"].startswith("mmlu/") else "gsm8k"
        group = r["source"] if kind == "mmlu" else r["prompt"]
        gained = float(r["strong_correct"] and not r["weak_correct"])
        rows.append(RoutingRow(r["prompt"], kind, group, float(r["weak_correct"]), float(r["strong_correct"]), gained))
    for r in read_jsonl("alpaca_eval_dev.jsonl"):
        edge = float(sum(r["win_vs_gpt4"][m] for m in LABELS[edge_class]) / len(LABELS[edge_class]))
        rows.append(RoutingRow(r["prompt"], "alpaca_eval", opening(r["prompt"]), edge, 0.5, 1.0 - edge))
    for r in read_jsonl("traffic_labeled.jsonl"):  # coverage only: trained on, never scored
        rows.append(RoutingRow(r["prompt"], "template", r["prompt"], 0.0, 1.0, float(r["needs_cloud"])))
    return rows


OPENING = 40


def opening(text: str) -> str:
    """What near-duplicates share: nine AlpacaEval instructions are one template ("I like to host
    guests at my home from time to time, ..." and a dish), three PUPA prompts one test log; the
    first 40 characters, in lower case and single spaces, keep each family in one fold."""
    return " ".join(text.lower().split())[:OPENING]


def hashed_fold(key: str, folds: int) -> int:
    """A stable fold for `key`: the same on every machine and in every run."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % folds


def split_of(text: str, test_share: float = 0.2) -> str:
    """A stable split of the template rows by content: the same prompt is always on the same side."""
    bucket = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if bucket < test_share else "train"


def mmlu_folds(rows: Sequence[RoutingRow], folds: int) -> list[int]:
    """Subjects dealt round-robin by size, so each fold holds about a fifth of the questions."""
    sizes: dict[str, int] = {}
    for r in rows:
        sizes[r.group] = sizes.get(r.group, 0) + 1
    order = sorted(sizes, key=lambda g: (-sizes[g], g))
    fold_of = {g: i % folds for i, g in enumerate(order)}
    return [fold_of[r.group] for r in rows]


def fold_assignment(mine: Sequence[RoutingRow], kind: str, folds: int) -> list[int]:
    return mmlu_folds(mine, folds) if kind == "mmlu" else [hashed_fold(r.group, folds) for r in mine]


FOLDS = 5
LOCKED = 0  # each source's test fold: fixed before any choice was made on these data


def folds_of(rows: Sequence[RoutingRow]) -> dict[int, int]:
    """id(row) -> its fold, for every real row (the template rows have none)."""
    out: dict[int, int] = {}
    for kind in KINDS:
        mine = [r for r in rows if r.kind == kind]
        for r, f in zip(mine, fold_assignment(mine, kind, FOLDS), strict=True):
            out[id(r)] = f
    return out
