"""An app's policy file as the router's Policy: facts in, Decision out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from classifiers.signals import Signals
from policies.conditions import Facts
from policies.policy import AppPolicy
from router.budget import AppBudget, Caps
from router.cache import CachePolicy
from router.decision import AutoRoute, Decision, Escalation, LiveState
from router.limits import Limits
from router.request import ChatRequest
from router.served import ShadowPolicy
from router.sessions import SessionPolicy


def facts_of(signals: Signals, request: ChatRequest, live: LiveState) -> Facts:
    return Facts(
        complexity_of=lambda: signals.complexity,
        prompt_tokens=signals.prompt_tokens,
        max_tokens=signals.max_tokens,
        pii=signals.pii_types,
        model=request.model,
        language=signals.language,
        tags=request.hints.tags,
        needs=request.needs,
        latency_budget_ms=request.hints.latency_budget_ms,
        edge_queue_wait_ms=live.edge_queue_wait_ms,
        budget_left_usd=live.budget_left_usd,
    )


class PolicyRules:
    """Decides with whatever policy `current()` returns now, so a reload applies to the next request."""

    def __init__(self, current: Callable[[], AppPolicy]) -> None:
        self.current = current

    def snapshot(self) -> PolicyRules:
        """These rules as the policy is now: later reloads do not reach them."""
        policy = self.current()
        return PolicyRules(lambda: policy)

    def budget(self) -> AppBudget | None:
        spec = self.current().spec.budget
        if spec is None:
            return None
        return AppBudget(Caps(spec.daily_usd, spec.monthly_usd), spec.on_exhausted, spec.store_outage)

    def shadow(self) -> ShadowPolicy | None:
        policy = self.current()
        spec, models = policy.spec.shadow, policy.models
        edge = policy.spec.defaults.edge or next(iter(models.edge), None)
        cloud = policy.spec.defaults.cloud or next(iter(models.cloud), None)
        if spec is None or edge is None or cloud is None:
            return None
        return ShadowPolicy(spec.sample, spec.judge, spec.daily_usd, edge, cloud)

    def cache(self) -> CachePolicy | None:
        spec = self.current().spec.cache
        return None if spec is None else CachePolicy(spec.ttl_s, spec.sampled, spec.semantic, spec.min_similarity)

    def session(self) -> SessionPolicy:
        spec = self.current().spec.session
        return SessionPolicy(spec.affinity, spec.ttl_s)

    def limits(self) -> Limits | None:
        spec = self.current().spec.limits
        return (
            None
            if spec is None
            else Limits(spec.requests_per_minute, spec.tokens_per_minute, spec.max_messages, spec.max_tokens)
        )

    def decide(self, signals: Signals, request: ChatRequest, live: LiveState) -> Decision:
        policy = self.current()
        verdict = policy.evaluate(facts_of(signals, request, live))
        escalation, auto = None, None
        if verdict.auto:
            spec = policy.spec.router
            auto = AutoRoute(
                spec.edge_reading,
                spec.band,
                spec.threshold,
                ladder=verdict.ladder,
                thresholds=verdict.thresholds,
                reading_tokens=spec.reading_tokens,
                reader=spec.reader,
            )
        if verdict.cascade is not None:
            target = policy.cascade_target(verdict.cascade, request.model)
            if target is not None:
                escalation = Escalation(target, verdict.cascade.when_confidence_below)
        return Decision(
            targets=verdict.targets,
            rule=verdict.rule,
            reasons=verdict.reasons,
            deny=verdict.deny,
            cloud_allowed=verdict.cloud_allowed,
            redact=verdict.redact,
            cascade=escalation,
            trace=tuple(dataclasses.asdict(t) for t in verdict.trace),
            auto=auto,
        )
