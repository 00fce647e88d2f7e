"""The edge's reading as a router: a linear probe on what the edge model computed while reading the
prompt (`research.readings`), alone and combined with the text prior as the gateway combines them
(`router.app_router`), measured by `research.protocol` on the rows the edge has read.

    python -m research.reading [--edge-class small|mid] [--locked]

The probe is a ridge regression of what routing buys, less its source's mean (what makes a prompt
harder than others of its kind), on the standardized reading, each source weighing the same. The
combination is a logistic regression of what routing buys on the prior's logit and the probe's
score, fitted on probe scores each from a probe that did not see the row (four inner folds), with
an intercept per source (dropped when scoring, as the prior's are).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache

import numpy as np

from gateway.bench.curves import bootstrap
from gateway.bench.folds import KINDS, RoutingRow, hashed_fold, routing_rows
from research.prior import BASELINES, SHIPPED, fit_prior, fitted_prior, matrix
from research.protocol import Fit, Scorer, Splits, apgr
from research.readings import row_readings

INNER_FOLDS = 4


@cache
def _readings() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return row_readings(routing_rows())


def reading_matrix(rows: list[RoutingRow], which: str) -> np.ndarray:
    found = _readings()
    index = {"mean": 0, "last": 1}[which]
    return np.stack([found[r.prompt][index] for r in rows])


def source_weights(rows: list[RoutingRow]) -> np.ndarray:
    kinds = [r.kind for r in rows]
    count = {k: kinds.count(k) for k in set(kinds)}
    return np.array([len(rows) / (len(count) * count[k]) for k in kinds])


def centered_targets(rows: list[RoutingRow]) -> np.ndarray:
    """What routing buys, less its source's mean."""
    t = np.array([r.target for r in rows])
    kinds = np.array([r.kind for r in rows])
    for k in set(kinds):
        t[kinds == k] -= t[kinds == k].mean()
    return t


@dataclass(frozen=True)
class ProbeConfig:
    which: str = "mean"  # mean | last
    alpha: float = 1000.0  # ridge penalty, on standardized readings


def probe_weights(config: ProbeConfig, train: list[RoutingRow]) -> tuple[np.ndarray, float]:
    """The probe's weights on the raw reading, and its bias (so that a source's mean scores 0)."""
    x = reading_matrix(train, config.which)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    z, w, y = (x - mean) / scale, source_weights(train), centered_targets(train)
    coef = np.linalg.solve(z.T @ (z * w[:, None]) + config.alpha * np.eye(z.shape[1]), z.T @ (w * y))
    raw = coef / scale
    return raw, -float(raw @ mean)


def fit_probe(config: ProbeConfig) -> Fit:
    def fit(train: list[RoutingRow]) -> Scorer:
        raw, bias = probe_weights(config, train)
        return lambda rows: reading_matrix(rows, config.which) @ raw + bias

    return fit


def inner_probe_scores(config: ProbeConfig, train: list[RoutingRow]) -> np.ndarray:
    """Each training row's probe score from a probe trained on the other inner folds."""
    fold = np.array([hashed_fold(r.group, INNER_FOLDS) for r in train])
    out = np.zeros(len(train))
    for k in range(INNER_FOLDS):
        held = np.flatnonzero(fold == k)
        rest = [train[i] for i in np.flatnonzero(fold != k)]
        raw, bias = probe_weights(config, rest)
        out[held] = reading_matrix([train[i] for i in held], config.which) @ raw + bias
    return out


def combination(prior_logits: np.ndarray, probe: np.ndarray, rows: list[RoutingRow]) -> tuple[float, float]:
    """The (prior, reading) weights of the logistic combination, with source intercepts."""
    from research.fitting import logistic_regression

    sources = sorted({r.kind for r in rows})
    dummies = np.array([[r.kind == s for s in sources] for r in rows], dtype=float)
    x = np.hstack([prior_logits[:, None], probe[:, None], dummies])
    t, w = np.array([r.target for r in rows]), source_weights(rows)
    model = logistic_regression(1e4)
    model.fit(np.vstack([x, x]), np.r_[np.ones(len(t)), np.zeros(len(t))], sample_weight=np.r_[w * t, w * (1 - t)])
    return float(model.coef_[0][0]), float(model.coef_[0][1])


def fit_combined(config: ProbeConfig) -> Fit:
    """The gateway's router: the prior's logit and the probe's score, combined."""

    def fit(train: list[RoutingRow]) -> Scorer:
        coef, bias = fitted_prior(SHIPPED, train)
        columns = SHIPPED.columns()
        prior_of = lambda rows: matrix(rows)[:, columns] @ coef + bias  # noqa: E731
        prior_weight, reading_weight = combination(prior_of(train), inner_probe_scores(config, train), train)
        raw, probe_bias = probe_weights(config, train)
        reading_of = lambda rows: reading_matrix(rows, config.which) @ raw + probe_bias  # noqa: E731
        return lambda rows: prior_weight * prior_of(rows) + reading_weight * reading_of(rows)

    return fit


# Every configuration tried, each source's development figures (in-source, left out): see the
# module's output; none was chosen by a test fold.
CONFIGURATIONS: dict[str, Fit] = {
    "text prior (shipped)": fit_prior(SHIPPED),
    "probe, mean reading": fit_probe(ProbeConfig("mean")),
    "probe, last position": fit_probe(ProbeConfig("last")),
    "prior + probe, mean reading": fit_combined(ProbeConfig("mean")),
    "prior + probe, last position": fit_combined(ProbeConfig("last")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test folds, once per change")
    parser.add_argument("--only", nargs="*", help="the configurations to measure (default: all)")
    args = parser.parse_args()
    read = _readings()
    splits = Splits.of(routing_rows()).restricted(lambda r: r.prompt in read)
    fits = {name: fit for name, fit in CONFIGURATIONS.items() if not args.only or name in args.only}
    if args.locked:
        for kind in KINDS:
            routers: dict[str, np.ndarray] = {}
            rows: list[RoutingRow] = []
            for name, fit in {**fits, **BASELINES}.items():
                rows, routers[name] = splits.test(kind, fit)
            alone, paired = bootstrap(rows, routers, "prompt length")
            print(f"\n{kind} test fold, {len(rows)} prompts read")
            for name in routers:
                print(f"  {name}: {alone[name]}  minus length {paired.get(name, '-')}")
        return
    header = " | ".join(f"{k} in | {k} out" for k in KINDS)
    print(f"| router | {header} | mean |")
    for name, fit in {**fits, **BASELINES}.items():
        cells = []
        for kind in KINDS:
            cells.append(apgr(*splits.in_source(kind, fit)))
            cells.append(apgr(*splits.leave_source_out(kind, fit)))
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {np.mean(cells):.3f} |", flush=True)


if __name__ == "__main__":
    main()
