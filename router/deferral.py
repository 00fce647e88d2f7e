"""Answers that come later: a batch line the policy sends to a cloud model whose provider has a
batch API is parked there instead of called now (gateway/provider_lines.py sends it and settles
it when the provider answers).

The router decides, admits and checks the line exactly as a live request; only the last step,
the call, is deferred: `_call` hands the request as it would have been sent (masked where the rule
redacts) to the request's `Deferral`, which keeps what settling needs and raises `Parked`. The
request's account is suspended, not ended: its reservation stays held until the answer is priced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from classifiers.signals import Signals
from router.decision import Decision
from router.request import ChatRequest
from router.tier import Tier

if TYPE_CHECKING:
    from router.redaction import Redaction


class Parked(Exception):  # noqa: N818 (an outcome, not a failure: the request is answered later)
    """The request was handed to its deferral; its answer, row and price come when it settles."""

    def __init__(self, model: str) -> None:
        super().__init__(f"parked for {model}'s batch API")
        self.model = model


class Deferral(Protocol):
    """What may answer a request later instead of a cloud model now (one request's)."""

    def takes(self, model: Tier, request: ChatRequest) -> bool:
        """Whether this request's call to `model` is deferred."""

    async def park(
        self,
        model: Tier,
        sent: ChatRequest,
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        redaction: Redaction | None,
    ) -> Parked:
        """Keep what settling needs (`sent`: the request as the provider gets it, masked where
        the rule redacts; `request`: as the client sent it) and the outcome to raise."""
