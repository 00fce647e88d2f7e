"""Fitting an app's router on its own traffic, and the measures that say whether to keep it.

The examples (`router.routings.Example`: the app's shadow comparisons and feedback) are split by
time: the fit sees the earlier `FIT_SHARE`, and the later ones judge it, as the traffic to come
would. The fit is a logistic regression of whether the cloud's answer was the better one on what the
router knew (the text prior's logit, the probe's score of the edge's reading, the request's
features), its weights pulled towards the router in use (`PULL`): with a few hundred examples a
free fit would chase noise, and a pull that holds it near a router that works costs nothing where
the data agree. It is kept only if it ranks the later examples better than the router in use by
more than the noise (APGR, paired: the whole 90% bootstrap interval of the difference above 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from classifiers.asks import FEATURES
from router.app_router import AppRouter, Combination, logit
from router.routings import Example

FIT_SHARE = 0.7  # the earlier examples fitted on; the later ones validate
PULL = 4.0  # L2 strength towards the current weights, per feature, in units of one example
DRAWS = 1000
MIN_EXAMPLES = 60  # fewer cannot say anything of a fit
# The request's features (15 weights) join the fit from this many examples: with a few hundred,
# fitted beside the prior and the reading, they learned noise that cost GSM8K's test fold 0.095
# (research.app_fit), where the two weights and a bias alone are what the data can support.
ASKS_FROM = 1000


def _design(examples: Sequence[Example], reading: bool, asks: bool) -> np.ndarray:
    rows = []
    for e in examples:
        row = [logit(e.prior)]
        if reading:
            row.append(e.reading if e.reading is not None else 0.0)
        if asks:
            row.extend(e.asks if e.asks is not None else [0.0] * len(FEATURES))
        rows.append(row)
    return np.array(rows, dtype=float)


def _start(combination: Combination, reading: bool, asks: bool) -> np.ndarray:
    start = [combination.prior]
    if reading:
        start.append(combination.reading)
    if asks:
        start.extend(combination.asks.get(name, 0.0) for name in FEATURES)
    return np.array(start + [combination.bias], dtype=float)


def pulled_logistic(x: np.ndarray, t: np.ndarray, towards: np.ndarray, pull: float, steps: int = 50) -> np.ndarray:
    """A logistic regression (the last weight the bias) on soft targets `t`, with the penalty
    `pull` * ||w - towards||^2 / 2 (the bias unpulled), by Newton's method to convergence, each step
    halved until the loss falls: from a start far from the data (a step whose prompts are all short
    and whose upper model is mostly better), full steps overshot and ran the bias to 1e11."""
    design = np.hstack([x, np.ones((len(x), 1))])
    penalty = np.full(len(towards), pull)
    penalty[-1] = 0.0

    def loss(w: np.ndarray) -> float:
        z = design @ w
        fitted = float(np.sum(t * np.logaddexp(0.0, -z) + (1 - t) * np.logaddexp(0.0, z)))
        return fitted + float(np.sum(penalty * (w - towards) ** 2)) / 2

    w = towards.copy()
    current = loss(w)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(design @ w, -500, 500)))
        gradient = design.T @ (p - t) + penalty * (w - towards)
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while scale > 1e-6 and loss(w - scale * step) > current:
            scale /= 2
        w = w - scale * step
        current = loss(w)
        if float(np.abs(scale * step).max()) < 1e-10:
            break
    return w


def _combination(w: np.ndarray, reading: bool, asks: bool) -> Combination:
    i = 1
    prior, read = float(w[0]), 0.0
    if reading:
        read, i = float(w[1]), 2
    named = {name: float(v) for name, v in zip(FEATURES, w[i : i + len(FEATURES)], strict=True)} if asks else {}
    return Combination(prior, read, float(w[-1]), named)


def weighs_asks(examples: int, current: AppRouter) -> bool:
    """Whether a fit on an app's `examples` weighs the request's features too."""
    return examples >= ASKS_FROM or current.needs_asks


def fit(examples: Sequence[Example], current: AppRouter, asks: bool = False) -> AppRouter:
    """A router fitted on `examples`, pulled towards `current`: its text combination on every
    example, its reading one (if `current` reads) on those the edge read, and with `asks` the
    request's features (`weighs_asks`). Without a reading or the features, only the calibration
    moves: one score's ranking is its own."""
    t = np.array([e.cloud_better for e in examples])
    text_x = _design(examples, False, asks)
    text = _combination(pulled_logistic(text_x, t, _start(current.text, False, asks), PULL), False, asks)
    read = current.read
    if read is not None:
        read_examples = [e for e in examples if e.reading is not None]
        if len(read_examples) >= MIN_EXAMPLES // 2:
            rt = np.array([e.cloud_better for e in read_examples])
            rx = _design(read_examples, True, asks)
            read = _combination(pulled_logistic(rx, rt, _start(read, True, asks), PULL), True, asks)
    return AppRouter(text, read, current.version, current.threshold, dict(current.fitted))


def scores(router: AppRouter, examples: Sequence[Example]) -> np.ndarray:
    return np.array([router.score(e.prior, e.reading, e.asks) for e in examples])


def ranked(examples: Sequence[Example]) -> list[Example]:
    """The examples whose both tiers' quality is known: those a ranking can be measured on."""
    return [e for e in examples if e.edge is not None and e.cloud is not None]


def apgr(router_scores: np.ndarray, edge: np.ndarray, cloud: np.ndarray) -> float:
    """RouteLLM's APGR: the quality gap recovered as more of the requests, the highest scored
    first, go to the cloud, averaged over every cloud share (0.5 = a random router). Tied scores are
    split evenly. Undefined (nan) where the cloud recovers nothing."""
    gap = float(cloud.mean() - edge.mean())
    if gap <= 0:
        return math.nan
    order = np.argsort(-router_scores, kind="stable")
    s = router_scores[order]
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True]) + 1
    gained = np.cumsum((cloud - edge)[order])[ends - 1] / len(s)
    shares, pgr = np.r_[0.0, ends / len(s)], np.r_[0.0, gained] / gap
    return float(np.sum((pgr[1:] + pgr[:-1]) / 2 * np.diff(shares)))


@dataclass(frozen=True)
class Validation:
    """The fitted router against the one in use, on the same later examples."""

    examples: int
    fitted: float  # its APGR
    current: float
    difference: float
    low: float  # the difference's 90% bootstrap interval
    high: float

    @property
    def ahead(self) -> bool:
        """Ahead beyond the noise: the whole interval above 0 (a gain inside it is not a gain)."""
        return self.low > 0


def compare(fitted: AppRouter, current: AppRouter, later: Sequence[Example], draws: int = DRAWS) -> Validation:
    rows = ranked(later)
    edge, cloud = np.array([e.edge for e in rows], dtype=float), np.array([e.cloud for e in rows], dtype=float)
    a, b = scores(fitted, rows), scores(current, rows)
    rng = np.random.default_rng(0)
    found = []
    for _ in range(draws):
        i = rng.integers(0, len(rows), len(rows))
        d = apgr(a[i], edge[i], cloud[i]) - apgr(b[i], edge[i], cloud[i])
        if not math.isnan(d):
            found.append(d)
    mine, theirs = apgr(a, edge, cloud), apgr(b, edge, cloud)
    low, high = (float(np.percentile(found, 5)), float(np.percentile(found, 95))) if found else (math.nan, math.nan)
    return Validation(len(rows), mine, theirs, mine - theirs, low, high)


def split(examples: Sequence[Example]) -> tuple[list[Example], list[Example]]:
    """The earlier `FIT_SHARE` to fit on and the later rest to judge by."""
    ordered = sorted(examples, key=lambda e: e.ts)
    cut = int(round(len(ordered) * FIT_SHARE))
    return ordered[:cut], ordered[cut:]


@dataclass(frozen=True)
class Threshold:
    value: float
    edge_share: float  # the share of requests below it: on the step's lower model (the edge)
    quality: float  # the share of examples that keep an answer as good as the cloud's

    def usd_per_1k(self, lower_usd: float, upper_usd: float) -> float:
        """What 1,000 requests cost at this threshold, each model at its cost per request."""
        return 1000 * (self.edge_share * lower_usd + (1 - self.edge_share) * upper_usd)


def curve(router: AppRouter, examples: Sequence[Example]) -> list[Threshold]:
    """Every threshold that splits the examples differently, from all cloud to all edge: each
    example below it goes to the edge (and keeps its quality when the cloud was not better), each
    above it to the cloud. Examples are a sample of the app's traffic, so the share below predicts
    the edge share."""
    found = sorted(zip(scores(router, examples), (e.cloud_better for e in examples), strict=True))
    n = len(found)
    points = [Threshold(0.0, 0.0, 1.0)]
    lost = 0.0
    for i in range(1, n + 1):
        lost += found[i - 1][1]
        if i < n and found[i][0] == found[i - 1][0]:
            continue
        value = 1.0 if i == n else (found[i - 1][0] + found[i][0]) / 2
        points.append(Threshold(round(float(value), 4), i / n, 1 - lost / n))
    return points


def threshold_for(router: AppRouter, examples: Sequence[Example], target: float) -> Threshold:
    """The threshold that keeps `target` quality at the largest edge share."""
    return keeping(curve(router, examples), target)


def keeping(points: Sequence[Threshold], target: float) -> Threshold:
    """Of a `curve`, the threshold that keeps `target` quality at the largest edge share."""
    return [t for t in points if t.quality >= target][-1]


def costing(points: Sequence[Threshold], usd_per_1k: float, lower_usd: float, upper_usd: float) -> Threshold:
    """Of a `curve`, the threshold that keeps the most quality at no more than `usd_per_1k` for
    1,000 requests (the largest edge share among equals); all on the lower model where nothing
    costs so little."""
    within = [t for t in points if t.usd_per_1k(lower_usd, upper_usd) <= usd_per_1k]
    if not within:
        return points[-1]
    best = max(t.quality for t in within)
    return [t for t in within if t.quality == best][-1]
