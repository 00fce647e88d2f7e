"""Fitting a GGUF's probe: a linear model of what routing buys on the edge model's reading of each
prompt of a labelled set, and how its score combines with the text prior's logit.

The reading is the next-token logits at the prompt's last position (`edge_runtime.reading`,
`LAST`): what the edge computes anyway before its first token. The probe is a ridge regression on
them (centered) of what routing buys, less its source's mean (what makes a prompt harder than
others of its kind), each source weighing the same, solved in its dual form (prompts by prompts:
a vocabulary of 128k logits is no bigger a problem than one of 49k). The penalty is `RIDGE` times
the mean squared norm of a centered reading, so that one setting suits every model's logit scale.
The edge scores a reading with one dot product over the logits. (Whitening the logits' principal
components first ranked held-out prompts no better than length: every direction then counts the
same, and the penalty no longer prefers the ones the readings spread along.)

Where the edge read a prompt, the probe's score decides (`read_combination`). Everything is numpy:
`edgeway router probe` runs where edgeway is installed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge_runtime.reading import Probe, ReadingKind, read_last_logits

RIDGE = 0.1  # the penalty, relative to a reading's mean squared norm; chosen on the development folds
Array = np.ndarray[Any, np.dtype[Any]]


@dataclass(frozen=True)
class Labelled:
    """One prompt of a probe set: its source (a fold and an intercept of its own) and what routing
    buys on it for the edge class being fitted (0..1)."""

    source: str
    target: float
    group: str  # what must not cross an inner fold: the prompt, or its MMLU subject


def _weights(rows: Sequence[Labelled]) -> Array:
    sources = [r.source for r in rows]
    count = {s: sources.count(s) for s in set(sources)}
    return np.array([len(rows) / (len(count) * count[s]) for s in sources])


def _centered(rows: Sequence[Labelled]) -> Array:
    t = np.array([r.target for r in rows], dtype=float)
    sources = np.array([r.source for r in rows])
    for s in set(sources):
        t[sources == s] -= t[sources == s].mean()
    return t


def fit_probe(readings: Array, rows: Sequence[Labelled], ridge: float = RIDGE) -> tuple[Array, float]:
    """Weights over the reading's dimensions, and a bias that scores the set's mean reading 0."""
    mean = readings.mean(axis=0, dtype=np.float64)
    root = np.sqrt(_weights(rows))
    x = (np.asarray(readings, dtype=np.float64) - mean) * root[:, None]
    gram = x @ x.T
    alpha = ridge * float(np.trace(gram)) / len(gram)
    dual = np.linalg.solve(gram + alpha * np.eye(len(gram)), root * _centered(rows))
    weights = x.T @ dual
    return weights.astype(np.float32), -float(weights @ mean)


def read_combination(rows: Sequence[Labelled]) -> tuple[float, float, float]:
    """(prior, reading, bias) of `router.app_router.Combination` for a request the edge read: the
    probe predicts what routing buys less its source's mean, so P(the cloud is better) is about the
    set's mean plus the probe's score; as a logistic, to first order around that mean. The text
    prior's weight is 0: where the edge read, its reading decides (on the small class's development
    folds the probe alone ranked AlpacaEval at 0.625, a logistic combination of both at 0.588, the
    text score shifted by the probe at 0.573, their weights fitted on inner-fold probe scores
    swinging from fold to fold, once to a negative reading weight)."""
    base = min(max(float(np.mean([r.target for r in rows])), 0.01), 0.99)
    return 0.0, 1.0 / (base * (1.0 - base)), math.log(base / (1.0 - base))


SET = Path(__file__).resolve().parent / "data" / "probe_set.jsonl"


@dataclass(frozen=True)
class SetPrompt:
    source: str
    prompt: str
    target: float


def probe_set(edge_class: str, limit: int | None = None) -> list[SetPrompt]:
    """The shipped prompts labelled for `edge_class`, each source's in turn (`limit`: at most that
    many, the same share of each source)."""
    rows = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    found = [
        SetPrompt(r["source"], r["prompt"], float(r["targets"][edge_class])) for r in rows if edge_class in r["targets"]
    ]
    if limit is not None and limit < len(found):
        step = len(found) / limit
        found = [found[int(i * step)] for i in range(limit)]
    return found


def fit_for_gguf(
    gguf: Path,
    edge_class: str,
    prompts: Sequence[SetPrompt],
    tokens: Sequence[list[int]],
    digest: str,
    progress: Callable[[int], None] | None = None,
) -> Probe:
    """The probe of one GGUF: its readings of `prompts` (`tokens`: each with the model's chat
    template applied), the ridge regression and its combination."""
    readings = read_last_logits(gguf, list(tokens), progress=progress)
    rows = [Labelled(p.source, p.target, p.prompt) for p in prompts]
    weights, bias = fit_probe(readings, rows)
    return Probe(ReadingKind.LAST, weights, bias, digest, edge_class, read_combination(rows))
