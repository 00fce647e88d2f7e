"""A routing decision: which models to try, in order, what may happen on the way, and why.

A `Policy` turns signals, the request and live state into a `Decision`; the plain rules in
`router.rules` are one, and an app's policy file (`router.policy_rules`) is another.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from classifiers.signals import Signals
from policies.schema import EdgeReading
from router.request import ChatRequest
from router.tier import TierKind


@dataclass(frozen=True)
class Escalation:
    """Answer on the edge first; go to `target` when the edge's confidence is below `below`."""

    target: str
    below: float


class StepScorer(StrEnum):
    """What scores a step of a ladder: `P(the upper model's answer is better than the lower's)`."""

    APP_ROUTER = "app_router"  # from an edge model to a cloud one: the app's router (text prior, edge reading)
    PROMPT_LENGTH = "prompt_length"  # any other pair: the prompt's length, until a prior for the pair is fitted


@dataclass(frozen=True)
class Step:
    """One step of a ladder's climb: from `lower` to `upper`, taken when `score >= threshold`."""

    lower: str
    upper: str
    scorer: StepScorer
    score: float
    threshold: float
    router_version: int = 0  # of the router that scored it (0: cold start, the prior alone)

    @property
    def climbed(self) -> bool:
        return self.score >= self.threshold


@dataclass(frozen=True)
class AutoRoute:
    """A rule with `route: auto`: the app's router puts the edge or the cloud first, by its score
    against the threshold; where `read_first`, once the edge model has read the prompt."""

    edge_reading: EdgeReading
    band: tuple[float, float]
    threshold: float  # the policy's (a fitted router's own replaces it)
    text_score: float | None = None  # the score from the text alone
    read_first: bool = False  # the edge reads the prompt before the order is known
    router_version: int = 0  # of the app's router that scored it (0: cold start)
    reading: float | None = None  # the probe's score of the edge's reading, once it read
    ladder: tuple[str, ...] = ()  # the rule's ladder, cheapest first, as narrowed: empty for the edge-cloud pair
    thresholds: tuple[tuple[str, float], ...] = ()  # each step's, by the model it climbs from, where set
    climb: tuple[Step, ...] = ()  # the steps scored, bottom up: the last one not climbed is where it stopped
    reading_tokens: int | None = None  # the edge reads at most the prompt's last this many tokens (None: all)
    reader: str | None = None  # the edge model that reads (`router.reader`); None: the edge model of the step


@dataclass(frozen=True)
class SessionRoute:
    """The session a request belongs to (router.sessions), and whether it kept the request on the
    model that served the session's last turn."""

    source: str  # what told which session: the header, the API's own key, or the first turns
    key: str  # its digest
    served_by: str | None = None  # the model that served its last turn, if one is known
    kept: bool = False  # the request goes there first


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
    auto: AutoRoute | None = None  # the rule's route is `auto`: targets[0] is the edge, targets[1] the cloud
    score: float | None = None  # the number the app's router compared with its threshold, once known
    session: SessionRoute | None = None  # the conversation it belongs to, where the router chose the model
    live: LiveState = field(default_factory=lambda: LiveState())  # the live state it was decided in

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
