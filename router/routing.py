"""Running a decision: signals, policy, budget, then each target in order until one answers.

The privacy invariant lives here: a decision with `cloud_allowed=False` never has a cloud target,
and `_call` refuses to contact a cloud model for such a decision even if one slipped in.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from classifiers.signals import Scorer, Signals
from router.answer import Answer, ChunkStream, Tier, Usage
from router.budget import Caps, seconds_to_midnight
from router.decision import Catalog, Decision, LiveState, ModelInfo, Policy
from router.errors import EdgewayError, Forbidden, InvalidRequest, ModelNotFound, NoCapacity, RateLimited
from router.ledger import MemoryStore, Store
from router.limits import Limits
from router.pricing import FREE, Price
from router.redaction import Redaction
from router.request import ChatRequest
from router.resilience import Breaker, RetryPolicy, guarded

log = logging.getLogger("edgeway.router")
T = TypeVar("T")
ESTIMATED_ANSWER_TOKENS = 1024  # reserved for a request that names no max_tokens


@dataclass(frozen=True)
class AppBudget:
    caps: Caps
    on_exhausted: str = "edge"  # "edge" | "deny"


@dataclass
class Routed:
    """Where a request went: the model that answered and the decision that sent it there."""

    signals: Signals
    decision: Decision
    model: Tier
    failures: list[str] = field(default_factory=list)
    escalated: str | None = None  # why a cascade went from the edge to the cloud

    @property
    def route(self) -> str:
        return self.model.tier


@dataclass
class RoutedAnswer(Routed):
    answer: Answer | None = None


@dataclass
class RoutedStream(Routed):
    stream: ChunkStream | None = None


class Router:
    def __init__(
        self,
        models: dict[str, Tier],
        scorer: Scorer,
        prices: dict[str, Price] | None = None,
        store: Store | None = None,
    ) -> None:
        self.models = models
        self.scorer = scorer
        self.prices = prices or {}
        self.store = store or MemoryStore()
        clouds = {name: m.config for name, m in models.items() if m.tier == "cloud"}
        self.retries = {name: RetryPolicy(attempts=c.retries) for name, c in clouds.items()}
        self.breakers = {name: Breaker(name, c.circuit_failures, c.circuit_cooldown_s) for name, c in clouds.items()}
        self.catalog = Catalog({name: ModelInfo(name, m.tier, getattr(m, "n_ctx", None)) for name, m in models.items()})

    # --- deciding -------------------------------------------------------------------------
    def signals(self, request: ChatRequest) -> Signals:
        return self.scorer.signals(request.messages, max_tokens=request.max_tokens, metadata=request.metadata)

    def live_state(self, app: str, budget: AppBudget | None) -> LiveState:
        waits = [m.engine.wait_ms() for m in self.models.values() if m.tier == "edge" and hasattr(m, "engine")]
        left = self.store.left(app, budget.caps) if budget else None
        return LiveState(edge_queue_wait_ms=min(waits) if waits else 0.0, budget_left_usd=left)

    def decide(
        self,
        request: ChatRequest,
        app: str,
        policy: Policy,
        budget: AppBudget | None = None,
        limits: Limits | None = None,
    ) -> tuple[Signals, Decision]:
        if request.model != "auto" and request.model not in self.models:
            raise ModelNotFound(
                f"The model {request.model!r} does not exist on this gateway; GET /v1/models lists "
                f"the models you can use.",
                param="model",
            )
        if limits is not None:
            capped = limits.check_request(len(request.messages), request.max_tokens)
            if capped != request.max_tokens:
                request.max_tokens = capped
                request.body = {**request.body, "max_tokens": capped}
        signals = self.signals(request)
        live = self.live_state(app, budget)
        decision = policy.decide(signals, request, live)
        if decision.deny is not None:
            raise Forbidden(decision.deny)
        if budget is not None and live.budget_left_usd is not None and live.budget_left_usd <= 0:
            decision = self._over_budget(decision, budget)
        decision = self._local_only(self._within_latency_budget(decision, signals, live))
        if not decision.targets:
            raise NoCapacity(
                f"No model may serve this request now ({decision.rule}: {'; '.join(decision.reasons)}).", retry_after=5
            )
        if limits is not None:
            tokens = signals.prompt_tokens + (signals.max_tokens or ESTIMATED_ANSWER_TOKENS)
            wait = self.store.take(app, tokens, limits)
            if wait is not None:
                raise RateLimited(
                    f"This app's rate limit ({limits.requests_per_minute or '-'} requests, "
                    f"{limits.tokens_per_minute or '-'} tokens per minute) is reached.",
                    retry_after=wait,
                )
        if budget is not None:
            estimate = self._estimate(decision, signals)
            if not self.store.admit(app, budget.caps, estimate):  # spent meanwhile, by a request racing this one
                decision = self._local_only(self._over_budget(decision, budget))
            else:
                decision = dataclasses.replace(decision, reserved_usd=estimate)
        return signals, decision

    def _within_latency_budget(self, decision: Decision, signals: Signals, live: LiveState) -> Decision:
        """With an x-edgeway-latency-budget-ms the edge queue would miss, try the cloud first, if
        this request may go there and its decision has a cloud target at all."""
        try:
            budget_ms = float(signals.metadata.get("latency-budget-ms", ""))
        except ValueError:
            return decision
        targets = decision.targets
        if (
            not decision.cloud_allowed
            or not targets
            or self.models[targets[0]].tier != "edge"
            or live.edge_queue_wait_ms <= budget_ms
        ):
            return decision
        clouds = tuple(t for t in targets if self.models[t].tier == "cloud")
        if not clouds:
            return decision
        return dataclasses.replace(
            decision,
            targets=clouds + tuple(t for t in targets if t not in clouds),
            reasons=decision.reasons
            + (f"edge wait {live.edge_queue_wait_ms:.0f} ms > latency budget {budget_ms:.0f} ms: cloud first",),
        )

    def _local_only(self, decision: Decision) -> Decision:
        if decision.cloud_allowed:
            return decision
        # Whatever a policy said, a request kept local has only local targets.
        return dataclasses.replace(
            decision, cascade=None, targets=tuple(t for t in decision.targets if self.models[t].tier == "edge")
        )

    def _estimate(self, decision: Decision, signals: Signals) -> float:
        """The most this request may cost: its first cloud target at the requested max_tokens."""
        cloud = next((t for t in decision.targets if self.models[t].tier == "cloud"), None)
        if decision.cascade is not None:
            cloud = cloud or decision.cascade.target
        if cloud is None:
            return 0.0
        return self.prices.get(cloud, FREE).cost(signals.prompt_tokens, signals.max_tokens or ESTIMATED_ANSWER_TOKENS)

    def release(self, app: str, decision: Decision) -> None:
        """Give back a reservation for a request that ended without a usage row's charge."""
        if decision.reserved_usd:
            self.store.charge(app, -decision.reserved_usd)

    def _over_budget(self, decision: Decision, budget: AppBudget) -> Decision:
        if budget.on_exhausted == "deny":
            raise RateLimited(
                "This app's budget is exhausted until the next period.",
                code="budget_exhausted",
                retry_after=seconds_to_midnight(time.time()),
            )
        return dataclasses.replace(
            decision, cloud_allowed=False, reasons=decision.reasons + ("budget exhausted: edge only",)
        )

    # --- running --------------------------------------------------------------------------
    async def complete(
        self,
        request: ChatRequest,
        app: str,
        policy: Policy,
        budget: AppBudget | None = None,
        limits: Limits | None = None,
    ) -> RoutedAnswer:
        return await self._run("complete", request, app, policy, budget, limits)

    async def stream(
        self,
        request: ChatRequest,
        app: str,
        policy: Policy,
        budget: AppBudget | None = None,
        limits: Limits | None = None,
    ) -> RoutedStream:
        """Open a stream on the first target that accepts; fallbacks apply until then only."""
        return await self._run("stream", request, app, policy, budget, limits)

    async def _run(
        self, how: str, request: ChatRequest, app: str, policy: Policy, budget: AppBudget | None, limits: Limits | None
    ) -> Any:
        signals, decision = self.decide(request, app, policy, budget, limits)
        try:
            if self._cascades(decision):
                return await self._cascade(request, signals, decision, how)
            model, result, failures = await self._first_to_accept(
                decision, lambda m: self._call(m, how, request, signals, decision)
            )
            if how == "stream":
                return RoutedStream(signals, decision, model, failures, stream=result)
            return RoutedAnswer(signals, decision, model, failures, answer=result)
        except BaseException:
            self.release(app, decision)  # no usage row will settle this reservation
            raise

    def _cascades(self, decision: Decision) -> bool:
        return decision.cascade is not None and self.models[decision.targets[0]].tier == "edge"

    async def _call(self, model: Tier, how: str, request: ChatRequest, signals: Signals, decision: Decision) -> Any:
        if model.tier != "cloud":
            return await getattr(model, how)(request)
        if not decision.cloud_allowed:  # unreachable by construction (decide); kept as the last guard
            raise NoCapacity(f"Policy rule {decision.rule!r} keeps this request on the edge.", retry_after=5)
        breaker, retry = self.breakers[model.name], self.retries[model.name]
        if not (decision.redact and signals.privacy):
            return await guarded(breaker, retry, lambda: getattr(model, how)(request))
        redaction = Redaction(request, signals.privacy)
        if how == "complete":
            answer = await guarded(breaker, retry, lambda: model.complete(redaction.request))
            answer.body = redaction.restore_answer(answer.body)
            return answer
        restorer = redaction.stream_restorer()
        stream = await guarded(breaker, retry, lambda: model.stream(redaction.request))
        return MappedStream(stream, restorer.restore_chunk)

    async def _cascade(self, request: ChatRequest, signals: Signals, decision: Decision, how: str) -> Any:
        """The edge answers first, in full (a stream is held back); below the confidence threshold
        the cloud model answers instead. If the escalation fails, the edge answer stands."""
        edge, escalation = self.models[decision.targets[0]], decision.cascade
        routed = RoutedStream if how == "stream" else RoutedAnswer
        try:
            answer = await edge.complete(request, confidence=True)
        except EdgewayError as exc:
            log.warning("cascade %s: the edge failed (%s); escalating", decision.rule, exc.message)
            answer = None

        def edge_result(failures: list[str]) -> Routed:
            if how == "stream":
                return RoutedStream(signals, decision, edge, failures, stream=ReplayedAnswer(answer))
            return RoutedAnswer(signals, decision, edge, failures, answer=answer)

        if answer is not None and (answer.confidence is None or answer.confidence >= escalation.below):
            return edge_result([])
        why = (
            f"edge confidence {answer.confidence:.3f} < {escalation.below}"
            if answer is not None
            else "the edge could not answer"
        )
        cloud = self.models[escalation.target]
        try:
            result = await self._call(cloud, how, request, signals, decision)
        except EdgewayError as exc:
            if answer is None:
                raise
            log.warning(
                "cascade %s: escalating to %s failed (%s); the edge answer stands",
                decision.rule,
                cloud.name,
                exc.message,
            )
            return edge_result([f"{cloud.name}: {exc.message}"])
        if how == "stream":
            return routed(signals, decision, cloud, escalated=why, stream=result)
        return routed(signals, decision, cloud, escalated=why, answer=result)

    async def _first_to_accept(
        self,
        decision: Decision,
        start: Callable[[Tier], Awaitable[T]],
    ) -> tuple[Tier, T, list[str]]:
        failures: list[str] = []
        for position, name in enumerate(decision.targets):
            model = self.models[name]
            try:
                return model, await start(model), failures
            except EdgewayError as exc:
                failures.append(f"{name}: {exc.message}")
                left = len(decision.targets) - position - 1
                log.warning("rule %s: %s failed (%s); %d fallback(s) left", decision.rule, name, exc.message, left)
                if left == 0 or not _worth_another_tier(exc):
                    if len(failures) > 1:
                        exc.message = "Every model this request may use failed: " + " | ".join(failures)
                    raise
        raise AssertionError("a decision always has targets")  # decide() refuses an empty one

    def cost(self, model: str, usage: Usage, seconds: float = 0.0) -> float:
        """What this usage of `model` cost, in USD (the ledger's one source of prices)."""
        return self.prices.get(model, FREE).cost(usage.prompt_tokens, usage.completion_tokens, seconds)


def _worth_another_tier(exc: EdgewayError) -> bool:
    """Another tier may succeed where this one failed, unless the client must fix the request."""
    if isinstance(exc, InvalidRequest):
        return exc.code in ("context_length_exceeded", "unsupported_content")
    return True


class MappedStream:
    """A chunk stream with `change` applied to every chunk."""

    def __init__(self, inner: ChunkStream, change: Callable[[dict], dict]) -> None:
        self._inner = inner
        self._change = change

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._inner:
            yield self._change(chunk)

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReplayedAnswer:
    """A whole answer sent as a stream: what a held-back cascade on the edge streams."""

    def __init__(self, answer: Answer) -> None:
        self.usage = answer.usage
        self._answer = answer

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        body = self._answer.body
        base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}
        choice = body["choices"][0]
        yield {
            **base,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
            ],
        }
        yield {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": choice["message"]["content"]},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        }
        yield {
            **base,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}],
        }

    async def aclose(self) -> None:
        return None
