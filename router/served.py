"""A request as its client got it answered, and what an app's policy says of comparing it: what
a request's account offers for a shadow comparison (`router.shadow`) once it has written its row,
and the one method of the shadow it offers it to (`Offers`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from opentelemetry.context import Context

from classifiers.signals import Signals
from router.answer import Answer, ChunkStream
from router.cloud.validate import delivered_text
from router.decision import Decision
from router.request import ChatRequest
from router.routed import Routed
from router.tier import TierKind


@dataclass(frozen=True)
class ShadowPolicy:
    sample: float  # the share of eligible requests compared
    judge: str  # a cloud model
    daily_usd: float
    edge: str  # what answers in the shadow of a cloud answer
    cloud: str  # what answers in the shadow of an edge answer


@dataclass(frozen=True)
class ServedRequest:
    """A request as the client got it answered: what a comparison starts from."""

    request_id: str
    app: str
    request: ChatRequest
    signals: Signals
    decision: Decision
    tier: TierKind
    model: str  # the model that answered
    answer: str  # the text the client was given

    @classmethod
    def of(
        cls,
        request_id: str,
        app: str,
        request: ChatRequest,
        routed: Routed[Answer] | Routed[ChunkStream],
        streamed: str,
    ) -> ServedRequest:
        """`routed` as its client got it: a whole answer's text, or what the stream delivered."""
        result = routed.result
        answer = delivered_text(result.body) if isinstance(result, Answer) else streamed
        model = routed.model
        return cls(request_id, app, request, routed.signals, routed.decision, model.tier, model.name, answer)


class Offers(Protocol):
    """Where a request's account offers it for a comparison (`router.shadow.Shadower`)."""

    def sampled(self, policy: ShadowPolicy | None) -> ShadowPolicy | None: ...

    def start(self, served: ServedRequest, policy: ShadowPolicy, parent: Context | None = None) -> None: ...
