"""What narrows a policy's decision before anything is admitted: the targets that honor the
request, a max_tokens some target can hold, the latency budget, an exhausted budget, and a
request kept local. Each reads the decision and the models and returns a decision, or raises the
refusal the client must hear; none counts, reserves or calls anything."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping

from classifiers.signals import Signals
from policies.needs import Need
from router.budget import AppBudget, Shortfall, usd
from router.decision import Decision, LiveState
from router.errors import InvalidRequest, RateLimited
from router.request import ChatRequest
from router.tier import Tier

Tiers = Mapping[str, Tier]
LARGEST_WINDOW = 2_000_000  # what a model whose context window nobody told us may hold, at most


def able(models: Tiers, request: ChatRequest, decision: Decision) -> Decision:
    """Only the targets that honor everything the request asks for: a model that would drop
    `tools` or `response_format` and answer in prose is not an answer."""
    if not request.needs:
        return decision
    candidates = decision.targets
    if decision.cascade is not None and decision.cloud_allowed:
        candidates += (decision.cascade.target,)  # the rule lets the request reach it
    honoring = tuple(dict.fromkeys(t for t in candidates if _honors(models[t], request)))
    if honoring == decision.targets:
        return decision
    if not honoring:
        missing = sorted(
            request.needs - {Need.OWN_API} - set().union(*(models[t].capabilities for t in decision.targets))
        )
        asked = "embeddings" if Need.EMBEDDINGS in missing else ", ".join(Need(m).field for m in missing)
        if not missing:  # what the request's own API carries, and no target takes that API
            missing, asked = (
                [Need.OWN_API],
                f"what only a provider of the {request.api} API takes ({request.native_only})",
            )
        raise InvalidRequest(
            f"This request asks for {asked}, which no model it may use here provides "
            f"({', '.join(decision.targets)}; rule {decision.rule!r}).",
            param=Need(missing[0]).field,
            code="unsupported_parameter",
        )
    dropped = [t for t in decision.targets if t not in honoring]
    return dataclasses.replace(
        decision,
        targets=honoring,
        # the cascade escalates from its first target: gone if that one cannot serve the request
        cascade=decision.cascade if honoring[0] == decision.targets[0] else None,
        reasons=decision.reasons + (f"{', '.join(dropped)} cannot honor {', '.join(sorted(request.needs))}",),
    )


def _honors(model: Tier, request: ChatRequest) -> bool:
    """Whether `model` honors all the request asks: what only its own API carries, where it takes
    the request in that API."""
    if Need.OWN_API in request.needs and request.api not in model.apis:
        return False
    return request.needs - {Need.OWN_API} <= model.capabilities


def check_max_tokens(models: Tiers, signals: Signals, decision: Decision) -> None:
    """A max_tokens no target can produce is refused before anything is reserved for it."""
    if signals.max_tokens is None:
        return
    largest = max(models[t].context_window or LARGEST_WINDOW for t in decision.targets)
    if signals.max_tokens > largest:
        raise InvalidRequest(
            f"max_tokens {signals.max_tokens} is more than any model this request may use can hold "
            f"(the largest context window among {list(decision.targets)} is {largest} tokens).",
            param="max_tokens",
            code="max_tokens_too_large",
        )


def within_latency_budget(models: Tiers, decision: Decision, request: ChatRequest, live: LiveState) -> Decision:
    """With an x-edgeway-latency-budget-ms the edge queue would miss, try the cloud first, if
    this request may go there and its decision has a cloud target at all."""
    budget_ms = request.hints.latency_budget_ms
    targets = decision.targets
    if (
        budget_ms is None
        or not decision.cloud_allowed
        or not targets
        or models[targets[0]].tier != "edge"
        or live.edge_queue_wait_ms <= budget_ms
    ):
        return decision
    clouds = tuple(t for t in targets if models[t].tier == "cloud")
    if not clouds:
        return decision
    auto = decision.auto
    if auto is not None and auto.ladder:  # the ladder is climbed from its first cloud model
        auto = dataclasses.replace(auto, ladder=tuple(t for t in auto.ladder if models[t].tier == "cloud"))
    return dataclasses.replace(
        decision,
        auto=auto,
        targets=clouds + tuple(t for t in targets if t not in clouds),
        reasons=decision.reasons
        + (f"edge wait {live.edge_queue_wait_ms:.0f} ms > latency budget {budget_ms:.0f} ms: cloud first",),
    )


def local_only(models: Tiers, decision: Decision) -> Decision:
    if decision.cloud_allowed:
        return decision
    # Whatever a policy said, a request kept local has only local targets.
    return dataclasses.replace(
        decision, cascade=None, targets=tuple(t for t in decision.targets if models[t].tier == "edge")
    )


def over_budget(decision: Decision, budget: AppBudget, short: Shortfall) -> Decision:
    """A cap without room for the request (`short`): under `deny` the client hears which cap, what
    is spent of it and when it resets (and Retry-After); under `edge`, only local targets remain."""
    if budget.on_exhausted == "deny":
        raise RateLimited(
            short.message(), code="budget_exhausted", retry_after=short.seconds_left(time.time()), rule=decision.rule
        )
    why = f"{short.period} budget of {usd(short.cap_usd)} has no room: edge only"
    return dataclasses.replace(decision, cloud_allowed=False, reasons=decision.reasons + (why,))
