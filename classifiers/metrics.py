"""RouteLLM's measures of a router: the quality it recovers as it sends more to the cloud (PGR,
its area APGR) and the cloud share that recovering a given part of the gap costs (CPT)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def pgr_curve(scores: np.ndarray, weak: np.ndarray, strong: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cloud share and PGR at every cut; tied scores are split evenly (a random tie-break's mean)."""
    n = len(scores)
    order = np.argsort(-scores, kind="stable")
    gain = (strong - weak)[order]
    s = scores[order]
    shares, quality = [0.0], [weak.mean()]
    i = 0
    while i < n:
        j = i
        while j < n and s[j] == s[i]:
            j += 1
        shares.append(j / n)
        quality.append(quality[-1] + gain[i:j].sum() / n)
        i = j
    gap = strong.mean() - weak.mean()
    return np.array(shares), (np.array(quality) - weak.mean()) / gap


def apgr(shares: np.ndarray, pgr: np.ndarray) -> float:
    return float(np.trapezoid(pgr, shares))


def cpt(shares: np.ndarray, pgr: np.ndarray, target: float) -> float:
    """The smallest cloud share whose PGR reaches `target`, interpolated between cuts."""
    for k in range(1, len(shares)):
        if pgr[k] >= target:
            if pgr[k] == pgr[k - 1]:
                return float(shares[k])
            t = (target - pgr[k - 1]) / (pgr[k] - pgr[k - 1])
            return float(shares[k - 1] + max(0.0, t) * (shares[k] - shares[k - 1]))
    return 1.0


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
