"""Admitting a decided request: its share of the app's rate limits, and the reservation of its
worst-case cost on its account, from the app's budget (or, while the shared store is away, as the
app's `store_outage` says). A dry run never admits."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from classifiers.signals import Signals
from router.account import RequestAccount
from router.budget import AppBudget
from router.caller import Caller
from router.decision import Decision
from router.errors import NoCapacity, RateLimited
from router.ledger import Store, StoreUnavailable
from router.narrowing import local_only, over_budget
from router.pricing import ESTIMATED_ANSWER_TOKENS, FREE, Price
from router.tier import Tier


class Admission:
    def __init__(self, models: Mapping[str, Tier], prices: Mapping[str, Price], store: Store) -> None:
        self.models, self.prices, self._store = models, prices, store

    def estimate(self, decision: Decision, signals: Signals) -> float:
        """The most this request may cost: its first cloud target at the requested max_tokens, its
        prompt at the dearest of the input and cache-write prices (`Price.worst_case`)."""
        cloud = next((t for t in decision.targets if self.models[t].tier == "cloud"), None)
        if decision.cascade is not None:
            cloud = cloud or decision.cascade.target
        if cloud is None:
            return 0.0
        price = self.prices.get(cloud, FREE)
        return price.worst_case(signals.prompt_tokens, signals.max_tokens or ESTIMATED_ANSWER_TOKENS)

    def admit(self, caller: Caller, signals: Signals, decision: Decision, books: RequestAccount) -> Decision:
        """Count the request against its app's rate limits and reserve its worst-case cost on its
        account (`books`).

        Raises RateLimited over a rate limit. When a racing request spent the budget meanwhile,
        the decision becomes local-only (or the request is refused, under `deny`)."""
        if caller.limits is not None:
            tokens = signals.prompt_tokens + (signals.max_tokens or ESTIMATED_ANSWER_TOKENS)
            wait = self._store.take(caller.name, tokens, caller.limits)
            if wait is not None:
                limits = caller.limits
                raise RateLimited(
                    f"This app's rate limit ({limits.requests_per_minute or '-'} requests, "
                    f"{limits.tokens_per_minute or '-'} tokens per minute) is reached.",
                    retry_after=wait,
                )
        if caller.budget is None:
            return decision
        estimate = self.estimate(decision, signals)
        try:
            short = books.reserve_within(caller.budget.caps, estimate)
        except StoreUnavailable:
            return some_target(self._admit_alone(books, caller.budget, decision, estimate))
        if short is not None:  # its worst case does not fit in what is left: nothing of it may spend
            return some_target(local_only(self.models, over_budget(decision, caller.budget, short)))
        return dataclasses.replace(decision, reserved_usd=estimate)

    def _admit_alone(self, books: RequestAccount, budget: AppBudget, decision: Decision, estimate: float) -> Decision:
        """The shared store that counts the app's spend cannot be reached: its `store_outage` says
        whether what would spend is refused, sent to the edge, or spent from this replica's share."""
        if estimate <= 0:  # nothing of this request spends
            return decision
        if budget.outage == "deny":
            raise NoCapacity(
                "The store that counts this app's budget cannot be reached; its policy refuses cloud "
                "requests until it is back.",
                retry_after=5,
                code="budget_store_unavailable",
            )
        if budget.outage == "local":
            short = books.reserve_alone(budget.caps, estimate)
            if short is None:
                return dataclasses.replace(decision, reserved_usd=estimate)
            return local_only(self.models, over_budget(decision, budget, short))  # this replica's share is spent
        why = "budget store unreachable: edge only"
        return local_only(
            self.models, dataclasses.replace(decision, cloud_allowed=False, reasons=decision.reasons + (why,))
        )


def some_target(decision: Decision) -> Decision:
    """A decision that admission narrowed to no target at all (a cloud-only rule, over budget and
    kept local) is a refusal the client hears, not an empty plan."""
    if not decision.targets:
        raise NoCapacity(
            f"No model may serve this request now ({decision.rule}: {'; '.join(decision.reasons)}).", retry_after=5
        )
    return decision
