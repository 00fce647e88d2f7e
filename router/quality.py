"""What the shadow comparisons say: quality retained beside the edge share, and the complexity
threshold that keeps a target quality at the largest edge share. Pure arithmetic on rows.

"As good" is the judge's verdict edge better or tie. Intervals are Wilson score intervals at
95%: they hold up at the small counts a new deployment has, where the normal one does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from router.comparisons import Comparison

Z = 1.96  # 95%
BUCKETS = 5  # complexity 0-0.2, 0.2-0.4, ...
MARGIN = 0.05  # `router fit` wants the quality interval about this wide on each side


@dataclass(frozen=True)
class Share:
    hits: int
    of: int
    low: float | None
    high: float | None

    @property
    def value(self) -> float | None:
        return self.hits / self.of if self.of else None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "value": self.value}


def wilson(hits: int, of: int, z: float = Z) -> Share:
    if of == 0:
        return Share(0, 0, None, None)
    p = hits / of
    centre = (p + z * z / (2 * of)) / (1 + z * z / of)
    half = z * math.sqrt(p * (1 - p) / of + z * z / (4 * of * of)) / (1 + z * z / of)
    return Share(hits, of, max(0.0, centre - half), min(1.0, centre + half))


def judged(comparisons: Sequence[Comparison]) -> list[Comparison]:
    return [c for c in comparisons if c.verdict != "unjudged"]


def as_good(comparisons: Sequence[Comparison]) -> Share:
    """The share of judged comparisons where the edge was as good as the cloud."""
    rows = judged(comparisons)
    return wilson(sum(c.verdict in ("edge", "tie") for c in rows), len(rows))


def retained(edge_share: float, edge_as_good: Share) -> dict[str, float | None]:
    """Quality retained against all-cloud: every cloud-served answer is the cloud's, and an
    edge-served one is as good as the cloud's with the measured probability."""

    def at(p: float | None) -> float | None:
        return None if p is None else 1 - edge_share * (1 - p)

    return {"value": at(edge_as_good.value), "low": at(edge_as_good.low), "high": at(edge_as_good.high)}


def by_complexity(comparisons: Sequence[Comparison]) -> list[dict[str, Any]]:
    """The app's own calibration curve: how often the edge is as good, by complexity."""
    rows = judged(comparisons)
    out = []
    for i in range(BUCKETS):
        low, high = i / BUCKETS, (i + 1) / BUCKETS
        inside = [c for c in rows if low <= c.complexity < high or (i == BUCKETS - 1 and c.complexity >= 1)]
        out.append({"from": low, "to": high, **as_good(inside).as_dict()})
    return out


@dataclass(frozen=True)
class Fit:
    """`edgeway router fit`'s answer: route to the edge below `threshold`."""

    judged: int
    needed: int  # judged comparisons wanted for an interval of +-MARGIN at the target
    threshold: float | None  # None: not enough comparisons, or no threshold keeps the target
    edge_share: Share
    quality: Share  # comparisons that would keep a cloud-quality answer under this threshold

    @property
    def more_needed(self) -> int:
        return max(0, self.needed - self.judged)


def needed_for(target: float, margin: float = MARGIN) -> int:
    return math.ceil(Z * Z * target * (1 - target) / (margin * margin))


def fit(comparisons: Sequence[Comparison], target: float) -> Fit:
    """The largest complexity threshold whose predicted quality (the share of comparisons that
    keep an answer as good as the cloud's: those above it by the cloud, those below it when the
    edge was as good) is at least `target`. Comparisons are a sample of the app's cloud-eligible
    traffic, whichever tier served them, so the share below a threshold predicts the edge share."""
    rows = sorted(judged(comparisons), key=lambda c: c.complexity)
    n, needed = len(rows), needed_for(target)
    if n < needed:
        return Fit(n, needed, None, wilson(0, 0), wilson(0, 0))
    best: Fit | None = None
    lost = 0  # of the comparisons below the candidate threshold, those the cloud won
    for i in range(n + 1):  # a threshold just above the i-th lowest complexity sends i to the edge
        if i > 0 and rows[i - 1].verdict == "cloud":
            lost += 1
        if i < n and i > 0 and rows[i].complexity == rows[i - 1].complexity:
            continue  # a threshold cannot split equal complexities
        if (n - lost) / n >= target:
            threshold = 1.0 if i == n else (rows[i - 1].complexity + rows[i].complexity) / 2 if i else 0.0
            best = Fit(n, needed, round(threshold, 4), wilson(i, n), wilson(n - lost, n))
    return best or Fit(n, needed, None, wilson(0, n), wilson(n, n))
