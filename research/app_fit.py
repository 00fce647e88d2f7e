"""`edgeway router fit` as a deployment would run it, on each source: the app's router fitted on a
few hundred of one source's labelled requests, installed only if it ranks the later ones better
than the router in use, then scored on that source's test fold beside the cold-start router.

    python -m research.app_fit [--examples 300] [--locked]

The examples are development rows of the source, in a fixed random order standing for time, each
as a comparison would keep it: the text prior, the request's features, and for AlpacaEval the
probe's score of the edge's real logits (the small class: the bundled model reads). Without
`--locked`, the "later prompts" are the source's other development rows.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from classifiers.asks import features
from gateway.bench.curves import bootstrap
from gateway.bench.folds import RoutingRow, routing_rows
from research.prior import ANCHORS, SHIPPED, fitted_prior, matrix
from research.probe import labelled, readings
from research.protocol import Splits
from router import fitting
from router.app_router import AppRouter, Combination, sigmoid
from router.probe_fit import fit_probe, read_combination
from router.routings import Example


def _asks(r: RoutingRow) -> list[float]:
    return features(r.prompt, r.prompt, r.prompt.count(" ") + r.prompt.count("\n") + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--locked", action="store_true")
    args = parser.parse_args()
    splits = Splits.of(routing_rows("small"))
    dev = splits.development()
    coef, bias = fitted_prior(SHIPPED, dev, ANCHORS["small"])
    columns = SHIPPED.columns()

    def prior(rows: list[RoutingRow]) -> np.ndarray:
        return np.array([sigmoid(z) for z in matrix(rows)[:, columns] @ coef + bias])

    for kind in ("alpaca_eval", "mmlu", "gsm8k"):
        print("\n".join(measure_fit(splits, kind, prior, args.examples, args.locked)))


def measure_fit(
    splits: Splits, kind: str, prior: Callable[[list[RoutingRow]], np.ndarray], count: int, locked: bool
) -> list[str]:
    """Fit on `count` of the source's development rows (the app's traffic, in a fixed random order),
    judge on the later ones as the fit does, then score the rest (or the test fold)."""
    mine = [r for r in splits.development() if r.kind == kind]
    mine = [mine[i] for i in np.random.default_rng(0).permutation(len(mine))]
    cold, probe = AppRouter(), None
    if kind == "alpaca_eval":  # the edge reads: its probe fitted on rows the app never sends
        half = len(mine) // 2
        shipped, mine = mine[:half], mine[half:]
        weights, bias = fit_probe(readings(shipped), labelled(shipped))
        cold = AppRouter(read=Combination(*read_combination(labelled(shipped))))

        def probe(rows: list[RoutingRow]) -> np.ndarray:
            return readings(rows) @ weights + bias

    def examples(rows: list[RoutingRow]) -> list[Example]:
        p = prior(rows)
        r = probe(rows) if probe is not None else [None] * len(rows)
        return [
            Example(float(p[i]), r[i], _asks(row), row.target, row.weak, row.strong, float(i))
            for i, row in enumerate(rows)
        ]

    count = min(count, len(mine) * 2 // 3)  # a few rows stay for the development figure
    seen, rest = mine[:count], mine[count:]
    later = splits.locked(kind) if locked else rest
    early, judged = fitting.split(examples(seen))
    candidate = fitting.fit(early, cold, asks=fitting.weighs_asks(len(seen), cold))
    check = fitting.compare(candidate, cold, judged)
    installed = candidate if check.ahead else cold
    test = examples(later)
    routers = {"cold start": fitting.scores(cold, test), "fitted": fitting.scores(candidate, test)}
    alone, paired = bootstrap(later, routers, "cold start")
    verdict = "installed" if check.ahead else "not installed: the cold start stays"
    where = "test fold" if locked else "later development rows"
    return [
        f"{kind}: fitted on {len(early)}, judged on {len(judged)}: APGR {check.fitted:.3f} vs {check.current:.3f} "
        f"[{check.low:+.3f}, {check.high:+.3f}]: {verdict}",
        f"  {where} ({len(later)}): cold start {alone['cold start']}; fitted {alone['fitted']}, "
        f"minus cold start {paired['fitted']}; in use: {'fitted' if installed is candidate else 'cold start'}",
    ]


if __name__ == "__main__":
    main()
