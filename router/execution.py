"""Running a decided, admitted request over its targets: each in order until one answers (the
fallbacks), through a cloud model's retries and circuit breaker, masked where the decision
redacts, parked where a deferral takes it, or as a cascade (the edge first, the cloud below its
confidence threshold).

The privacy invariant's last guard is here: `call` refuses to contact a cloud model for a
decision with `cloud_allowed=False`, even if one slipped in.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping

from classifiers.privacy.known import Known
from classifiers.signals import Signals
from router import tracing
from router.answer import Answer
from router.decision import Decision
from router.deferral import Deferral
from router.egress import Call, Purpose, Witness, failed
from router.errors import EdgewayError, InvalidRequest, NoCapacity
from router.modes import WHOLE, Mode, R
from router.redaction import Redaction
from router.request import ChatRequest
from router.resilience import Breaker, RetryPolicy
from router.resilience import guarded as run_guarded
from router.routed import Failure, Routed
from router.thinking import readable_by
from router.tier import Tier

log = logging.getLogger("edgeway.router")


class Execution:
    def __init__(self, models: Mapping[str, Tier]) -> None:
        self.models = models
        guarded_models = {name: m.resilience for name, m in models.items() if m.resilience is not None}
        self.retries = {name: RetryPolicy(attempts=r.retries) for name, r in guarded_models.items()}
        self.breakers = {
            name: Breaker(name, r.circuit_failures, r.circuit_cooldown_s) for name, r in guarded_models.items()
        }

    def cascades(self, decision: Decision) -> bool:
        return decision.cascade is not None and self.models[decision.targets[0]].tier == "edge"

    async def call(
        self,
        mode: Mode[R],
        model: Tier,
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        deferral: Deferral | None = None,
        witness: Witness | None = None,
        purpose: Purpose | None = None,
    ) -> R:
        """`model`'s answer to `request` (masked where the decision redacts), each call to a cloud
        model told to `witness` (the request's account: the egress audit) as `purpose` (by
        default the answer, or a fallback where `model` is not the decision's first target)."""
        if model.tier == "cloud" and not decision.cloud_allowed:  # unreachable by construction; the last guard
            raise NoCapacity(f"Policy rule {decision.rule!r} keeps this request on the edge.", retry_after=5)
        request = readable_by(request, model)  # never another model's signed thinking
        redacted = model.tier == "cloud" and decision.redact and bool(signals.privacy)
        redaction = Redaction(request, signals.privacy) if redacted else None
        sent = redaction.request if redaction is not None else request
        why = purpose or (Purpose.ANSWER if model.name == decision.targets[0] else Purpose.FALLBACK)

        def told(outcome: str, purpose: Purpose | None = None) -> None:
            if witness is not None:
                witness.sent_to(Call(model, sent, request, signals, decision, purpose or why, redacted, outcome))

        if deferral is not None and model.tier == "cloud" and deferral.takes(model, sent):
            told("parked", Purpose.BATCH)
            raise await deferral.park(model, sent, request, signals, decision, redaction)
        attempts = itertools.count(1)

        async def attempt() -> R:
            number = next(attempts)
            with tracing.attempt(model.name, model.tier, request, number, **{"edgeway.redacted": redacted}) as span:
                return mode.traced(await mode.call(model, sent), span)

        try:
            result = await self.guarded(model, attempt)
        except EdgewayError as exc:  # it may have reached the provider all the same
            told(failed(exc))
            exc.model = model.name  # (the request's row names the model that refused it)
            raise
        told("sent")
        return mode.restore(result, redaction) if redaction is not None else result

    async def guarded(self, model: Tier, call: Callable[[], Awaitable[R]]) -> R:
        if model.name not in self.breakers:
            return await call()
        return await run_guarded(self.breakers[model.name], self.retries[model.name], call)

    async def cascade(
        self,
        mode: Mode[R],
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        deferral: Deferral | None,
        witness: Witness | None = None,
    ) -> Routed[R]:
        """The edge answers first, in full (a stream is held back); below the confidence threshold
        the cloud model answers instead. If the escalation fails, the edge answer stands."""
        edge, escalation = self.models[decision.targets[0]], decision.cascade
        assert escalation is not None  # cascades() checked
        answer: Answer | None
        try:
            with tracing.attempt(edge.name, edge.tier, request, 1, **{"edgeway.cascade": "edge first"}) as span:
                answer = WHOLE.traced(await edge.complete(request, confidence=True), span)
        except EdgewayError as exc:
            log.warning("cascade %s: the edge failed (%s); escalating", Known(decision.rule), exc.message)
            answer = None
        if answer is not None and (answer.confidence is None or answer.confidence >= escalation.below):
            return Routed(signals, decision, edge, mode.replay(answer))
        why = (
            f"edge confidence {answer.confidence:.3f} < {escalation.below}"
            if answer is not None and answer.confidence is not None
            else "the edge could not answer"
        )
        cloud = self.models[escalation.target]
        try:
            result = await self.call(mode, cloud, request, signals, decision, deferral, witness, Purpose.ESCALATION)
        except EdgewayError as exc:
            if answer is None:
                raise
            log.warning(
                "cascade %s: escalating to %s failed (%s); the edge answer stands",
                decision.rule,
                cloud.name,
                exc.message,
            )
            return Routed(signals, decision, edge, mode.replay(answer), [Failure(cloud.name, exc.status, exc.code)])
        return Routed(signals, decision, cloud, result, escalated=why)

    async def first_to_accept(
        self, decision: Decision, start: Callable[[Tier], Awaitable[R]]
    ) -> tuple[Tier, R, list[Failure]]:
        failures: list[Failure] = []
        said: list[str] = []
        for position, name in enumerate(decision.targets):
            model = self.models[name]
            try:
                return model, await start(model), failures
            except EdgewayError as exc:
                failures.append(Failure(name, exc.status, exc.code))
                said.append(f"{name}: {exc.message}")
                left = len(decision.targets) - position - 1
                log.warning(
                    "rule %s: %s failed (%s); %d fallback(s) left", Known(decision.rule), Known(name), exc.message, left
                )
                if left == 0 or not _worth_another_tier(exc):
                    if len(said) > 1:
                        exc.message = "Every model this request may use failed: " + " | ".join(said)
                    raise
        raise AssertionError("a decision always has targets")  # decide() refuses an empty one


def _worth_another_tier(exc: EdgewayError) -> bool:
    """Another tier may succeed where this one failed, unless the client must fix the request."""
    if isinstance(exc, InvalidRequest):
        return exc.code in ("context_length_exceeded", "unsupported_content")
    return True
