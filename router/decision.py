"""A routing decision: which models to try, in order, and why.

A `Policy` turns signals into a `Decision`; the plain rules in `router.rules` are one, and the
policy files of `policies/` plug in behind the same interface.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from classifiers.signals import Signals
from router.request import ChatRequest


@dataclass(frozen=True)
class Decision:
    targets: tuple[str, ...]         # model names: the first is tried first, the rest are fallbacks
    rule: str                        # the rule that decided; sent as x-edgeway-rule
    reasons: tuple[str, ...] = ()    # the trail, in words, for explain and logs
    deny: str | None = None          # a refusal message; targets is then empty

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Policy(Protocol):
    def decide(self, signals: Signals, request: ChatRequest) -> Decision: ...


@dataclass(frozen=True)
class ModelInfo:
    name: str
    tier: str                        # "edge" | "cloud"
    context_window: int | None = None


@dataclass
class Catalog:
    """The models this gateway can use, edge ones first."""

    models: dict[str, ModelInfo] = field(default_factory=dict)

    def of_tier(self, tier: str) -> list[ModelInfo]:
        return [m for m in self.models.values() if m.tier == tier]
