"""Where a request went: the model that answered, its result and the decision that sent it there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic

from classifiers.signals import Signals
from router.decision import Decision
from router.modes import R
from router.tier import Tier, TierKind


@dataclass(frozen=True)
class Failure:
    """A target that failed before another answered: which model, and why (its error's status and
    code, the gateway's own words: nothing a provider wrote)."""

    model: str
    status: int
    code: str | None

    def __str__(self) -> str:
        return f"{self.model}: {self.status} {self.code or 'error'}"


@dataclass
class Routed(Generic[R]):
    """Where a request went: the model that answered, its result and the decision that sent it there."""

    signals: Signals
    decision: Decision
    model: Tier
    result: R
    failures: list[Failure] = field(default_factory=list)  # the targets that failed before `model` answered
    escalated: str | None = None  # why a cascade went from the edge to the cloud
    cache: str | None = None  # "hit" or "miss" for an app that caches; None otherwise
    similarity: float | None = None  # a semantic hit's: how close its ask was to the cached one
    requested: str | None = None  # the model the request named, where another answered it

    @property
    def route(self) -> TierKind:
        return self.model.tier

    @property
    def fallback(self) -> str | None:
        """What failed before a fallback answered (`x-edgeway-fallback`), None where the first did."""
        return "; ".join(str(f) for f in self.failures) or None
