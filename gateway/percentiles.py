"""Nearest-rank percentiles: the dashboard's latency figures and every benchmark's."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The value at rank ceil-ish q * n of the sorted values (no interpolation); values must not be empty."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
