"""A routing decision: which models to try, in order, what may happen on the way, and why.

A `Policy` turns signals, the request and live state into a `Decision`; the plain rules in
`router.rules` are one, and an app's policy file (`router.policy_rules`) is another.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from classifiers.signals import Signals
from router.request import ChatRequest
from router.tier import TierKind


@dataclass(frozen=True)
class Escalation:
    """Answer on the edge first; go to `target` when the edge's confidence is below `below`."""

    target: str
    below: float


@dataclass(frozen=True)
class Decision:
    targets: tuple[str, ...]  # model names: the first is tried first, the rest are fallbacks
    rule: str  # the rule that decided; sent as x-edgeway-rule
    reasons: tuple[str, ...] = ()  # the trail, in words, for explain and logs
    deny: str | None = None  # a refusal message; targets is then empty
    cloud_allowed: bool = True  # False: nothing about this request may reach a cloud model
    redact: bool = False  # mask private data before a cloud model sees the prompt
    cascade: Escalation | None = None
    trace: tuple[dict[str, Any], ...] = ()  # every rule looked at: matched or not, on which values
    reserved_usd: float = 0.0  # budget held for this request until its cost is known

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LiveState:
    """What the router knows right now that a policy may test."""

    edge_queue_wait_ms: float = 0.0
    budget_left_usd: float | None = None


class Policy(Protocol):
    def decide(self, signals: Signals, request: ChatRequest, live: LiveState) -> Decision: ...


@dataclass(frozen=True)
class ModelInfo:
    name: str
    tier: TierKind
    context_window: int | None = None


@dataclass
class Catalog:
    """The models this gateway can use, edge ones first."""

    models: dict[str, ModelInfo] = field(default_factory=dict)

    def of_tier(self, tier: TierKind) -> list[ModelInfo]:
        return [m for m in self.models.values() if m.tier == tier]
