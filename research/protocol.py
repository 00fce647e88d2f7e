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

from gateway.bench.curves import measure
from gateway.bench.folds import LOCKED, RoutingRow, folds_of

Scorer = Callable[[list[RoutingRow]], np.ndarray]
Fit = Callable[[list[RoutingRow]], Scorer]


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
