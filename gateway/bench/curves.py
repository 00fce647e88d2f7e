"""RouteLLM's measures of a router: the quality it recovers as it sends more to the cloud (PGR,
its area APGR) and the cloud share that recovering a given part of the gap costs (CPT)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gateway.bench.folds import RoutingRow


def pgr_curve(scores: np.ndarray, weak: np.ndarray, strong: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cloud share and PGR at every cut; tied scores are split evenly (a random tie-break's mean).
    Vectorized: the validation folds' weight search measures a few thousand curves."""
    n = len(scores)
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True]) + 1  # where each run of tied scores ends
    base = weak.mean()
    quality = base + np.cumsum((strong - weak)[order])[ends - 1] / n
    gap = strong.mean() - base
    return np.r_[0.0, ends / n], (np.r_[base, quality] - base) / gap


def apgr(shares: np.ndarray, pgr: np.ndarray) -> float:
    return float(np.trapezoid(pgr, shares))


_ROUNDING = 1e-9  # far below one prompt's share of a gap, far above a sum's rounding


def cpt(shares: np.ndarray, pgr: np.ndarray, target: float) -> float:
    """The smallest cloud share whose PGR reaches `target`, interpolated between cuts. A PGR that
    lands on the target exactly (80% of 80 gains is 64 of them) reaches it, whichever way the sums
    round: read without the margin, GSM8K's CPT(80%) moved by 0.9 points with the order of a sum."""
    reached = np.flatnonzero(pgr[1:] >= target - _ROUNDING)
    if not len(reached):
        return 1.0
    k = int(reached[0]) + 1
    if pgr[k] == pgr[k - 1]:
        return float(shares[k])
    t = (target - pgr[k - 1]) / (pgr[k] - pgr[k - 1])
    return float(shares[k - 1] + max(0.0, t) * (shares[k] - shares[k - 1]))


@dataclass(frozen=True)
class Measure:
    apgr: float
    cpt50: float
    cpt80: float


def measure(scores: np.ndarray, weak: np.ndarray, strong: np.ndarray) -> Measure:
    shares, pgr = pgr_curve(scores, weak, strong)
    return Measure(apgr(shares, pgr), cpt(shares, pgr, 0.5), cpt(shares, pgr, 0.8))


def random_measure(weak: np.ndarray, strong: np.ndarray, seeds: int = 200) -> Measure:
    runs = [measure(np.random.default_rng(seed).random(len(weak)), weak, strong) for seed in range(seeds)]
    return Measure(*(float(np.mean([getattr(m, f) for m in runs])) for f in ("apgr", "cpt50", "cpt80")))


DRAWS = 1000  # bootstrap draws


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def bootstrap(
    rows: Sequence[RoutingRow], routers: dict[str, np.ndarray], against: str, draws: int = DRAWS
) -> tuple[dict[str, Interval], dict[str, Interval]]:
    """Each router's APGR with its 90% interval, and its paired difference against `against`,
    resampling whole groups (an MMLU subject's questions go together)."""
    groups = sorted({r.group for r in rows})
    index = {g: i for i, g in enumerate(groups)}
    members: list[list[int]] = [[] for _ in groups]
    for i, r in enumerate(rows):
        members[index[r.group]].append(i)
    weak, strong = np.array([r.weak for r in rows]), np.array([r.strong for r in rows])
    rng = np.random.default_rng(0)
    samples: dict[str, list[float]] = {name: [] for name in routers}
    for _ in range(draws):
        picked = np.concatenate([members[g] for g in rng.integers(0, len(groups), len(groups))]).astype(int)
        if (strong[picked] - weak[picked]).sum() <= 0:
            continue  # a resample where the cloud buys nothing has no curve
        for name, scores in routers.items():
            samples[name].append(measure(scores[picked], weak[picked], strong[picked]).apgr)
    values = {name: measure(scores, weak, strong).apgr for name, scores in routers.items()}
    alone = {name: _interval(values[name], np.array(s)) for name, s in samples.items()}
    base = np.array(samples[against])
    paired = {
        name: _interval(values[name] - values[against], np.array(s) - base)
        for name, s in samples.items()
        if name != against
    }
    return alone, paired


def _interval(value: float, draws: np.ndarray) -> Interval:
    return Interval(value, float(np.percentile(draws, 5)), float(np.percentile(draws, 95)))
