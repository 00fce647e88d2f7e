"""Running a decision: signals, policy, then each target in order until one answers."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable, TypeVar

from classifiers.signals import Scorer, Signals
from router.answer import Answer, ChunkStream, Tier
from router.decision import Catalog, Decision, ModelInfo, Policy
from router.errors import EdgewayError, Forbidden, InvalidRequest, NoCapacity
from router.request import ChatRequest

log = logging.getLogger("edgeway.router")
T = TypeVar("T")


@dataclass
class Routed:
    """Where a request went: the model that answered and the decision that sent it there."""

    signals: Signals
    decision: Decision
    model: Tier
    failures: list[str] = field(default_factory=list)

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
    def __init__(self, models: dict[str, Tier], scorer: Scorer) -> None:
        self.models = models
        self.scorer = scorer
        self.catalog = Catalog({name: ModelInfo(name, m.tier, getattr(m, "n_ctx", None))
                                for name, m in models.items()})

    def signals(self, request: ChatRequest) -> Signals:
        return self.scorer.signals(request.messages, max_tokens=request.max_tokens, metadata=request.metadata)

    def decide(self, request: ChatRequest, policy: Policy) -> tuple[Signals, Decision]:
        signals = self.signals(request)
        decision = policy.decide(signals, request)
        if decision.deny is not None:
            raise Forbidden(decision.deny)
        if not decision.targets:
            raise NoCapacity(f"No model may serve this request ({decision.rule}: {'; '.join(decision.reasons)}).",
                             retry_after=5)
        return signals, decision

    async def complete(self, request: ChatRequest, policy: Policy) -> RoutedAnswer:
        signals, decision = self.decide(request, policy)
        model, answer, failures = await self._first_to_accept(decision, lambda m: m.complete(request))
        return RoutedAnswer(signals, decision, model, failures, answer=answer)

    async def stream(self, request: ChatRequest, policy: Policy) -> RoutedStream:
        """Open a stream on the first target that accepts; fallbacks apply until then only."""
        signals, decision = self.decide(request, policy)
        model, stream, failures = await self._first_to_accept(decision, lambda m: m.stream(request))
        return RoutedStream(signals, decision, model, failures, stream=stream)

    async def _first_to_accept(self, decision: Decision, start: Callable[[Tier], Awaitable[T]],
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


def _worth_another_tier(exc: EdgewayError) -> bool:
    """Another tier may succeed where this one failed, unless the client must fix the request."""
    if isinstance(exc, InvalidRequest):
        return exc.code in ("context_length_exceeded", "unsupported_content")
    return True
