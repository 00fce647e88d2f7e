"""How a routing model is measured so that the figures keep predicting unseen traffic.

Every real source is split into five folds by group (MMLU by subject, dealt round-robin by size;
GSM8K and AlpacaEval by prompt, near-duplicates together). Fold `LOCKED` of each source is the
test fold: it was fixed before any choice was made on these data, nothing is ever chosen by it,
and its figure is reported once per change, beside the baselines run in the same process. Every
choice (features, weights, penalties) is made on the other four folds alone:

- in-source: each development fold scored by a model trained on the other development folds of
  its source and every development row of the other sources (and the template rows);
- leave one source out: each source's development rows scored by a model that saw none of that
  source, the case of a deployment whose traffic is like none of the training data.

The locked report gives each router's APGR on each source's test fold with a bootstrap interval
(MMLU resampled by subject, the rest by prompt), and each router's paired difference against the
best baseline: a gain inside that interval is not a gain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from research.folds import KINDS, RoutingRow, fold_assignment
from research.metrics import measure

FOLDS = 5
LOCKED = 0  # each source's test fold
DRAWS = 1000  # bootstrap draws

Scorer = Callable[[list[RoutingRow]], np.ndarray]
Fit = Callable[[list[RoutingRow]], Scorer]


def folds_of(rows: Sequence[RoutingRow]) -> dict[int, int]:
    """id(row) -> its fold, for every real row (the template rows have none)."""
    out: dict[int, int] = {}
    for kind in KINDS:
        mine = [r for r in rows if r.kind == kind]
        for r, f in zip(mine, fold_assignment(mine, kind, FOLDS), strict=True):
            out[id(r)] = f
    return out


@dataclass(frozen=True)
class Splits:
    """The rows, by what they may be used for."""

    rows: list[RoutingRow]
    fold: dict[int, int]

    @classmethod
    def of(cls, rows: list[RoutingRow]) -> Splits:
        return cls(rows, folds_of(rows))

    def restricted(self, keep: Callable[[RoutingRow], bool]) -> Splits:
        """The rows `keep` keeps, in the folds they had among all the rows (a subject's fold does
        not move when only some of its questions are kept)."""
        return Splits([r for r in self.rows if keep(r)], self.fold)

    def locked(self, kind: str) -> list[RoutingRow]:
        return [r for r in self.rows if r.kind == kind and self.fold[id(r)] == LOCKED]

    def development(self) -> list[RoutingRow]:
        """Every row a choice may look at: the templates and the real rows outside the test folds."""
        return [r for r in self.rows if self.fold.get(id(r), -1) != LOCKED]

    def in_source(self, kind: str, fit: Fit) -> tuple[list[RoutingRow], np.ndarray]:
        """The development rows of `kind`, each scored by a model that never saw its fold."""
        dev = self.development()
        mine = [r for r in dev if r.kind == kind]
        scores = np.zeros(len(mine))
        for k in sorted({self.fold[id(r)] for r in mine}):
            held = [i for i, r in enumerate(mine) if self.fold[id(r)] == k]
            train = [r for r in dev if not (r.kind == kind and self.fold[id(r)] == k)]
            scores[held] = fit(train)([mine[i] for i in held])
        return mine, scores

    def leave_source_out(self, kind: str, fit: Fit) -> tuple[list[RoutingRow], np.ndarray]:
        """The development rows of `kind`, scored by a model that saw no row of `kind`."""
        dev = self.development()
        mine = [r for r in dev if r.kind == kind]
        return mine, fit([r for r in dev if r.kind != kind])(mine)

    def test(self, kind: str, fit: Fit, leave_source_out: bool = False) -> tuple[list[RoutingRow], np.ndarray]:
        """The test fold of `kind`, scored by a model trained on every development row (of the
        other sources only, with `leave_source_out`)."""
        train = [r for r in self.development() if not (leave_source_out and r.kind == kind)]
        mine = self.locked(kind)
        return mine, fit(train)(mine)

    def tests(self, kind: str, fits: dict[str, Fit]) -> tuple[list[RoutingRow], dict[str, np.ndarray]]:
        """The test fold of `kind`, and each router's scores of it (`test`, in-source)."""
        scored = {name: self.test(kind, fit) for name, fit in fits.items()}
        return self.locked(kind), {name: scores for name, (_, scores) in scored.items()}


def apgr(rows: Sequence[RoutingRow], scores: np.ndarray) -> float:
    weak, strong = np.array([r.weak for r in rows]), np.array([r.strong for r in rows])
    return measure(scores, weak, strong).apgr


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
