"""Running a request: decide, admit, then each target in order until one answers.

Deciding is pure: `decide` reads the signals, the policy and the live state and returns what
would happen; it reserves nothing and counts nothing, so a dry run (`POST /v1/route`, `edgeway
explain`) can call it as often as it likes. Admitting (`admit`) is the separate step that takes
the request's share of the rate limits and reserves its worst-case cost; the row's real cost
settles the reservation, and `release` gives it back when no row will.

The privacy invariant lives here: a decision with `cloud_allowed=False` never has a cloud target
(`router.narrowing.local_only` narrows every decision, and what runs after it only removes
targets), and `_call` refuses to contact a cloud model for such a decision even if one slipped in.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from classifiers.privacy.known import Known
from classifiers.signals import Scorer, Signals
from router import semantic, tracing
from router.account import RequestAccount
from router.answer import Answer, ChunkStream
from router.auto import AutoRoutes
from router.budget import AppBudget
from router.cache import CachePolicy, CacheStore, MemoryCache, cacheable, key_of, pack, unpack
from router.decision import Catalog, Decision, LiveState, ModelInfo, Policy
from router.deferral import Deferral, Parked
from router.errors import EdgewayError, Forbidden, InvalidRequest, ModelNotFound, NoCapacity, RateLimited
from router.installed import InstalledRouters
from router.ledger import MemoryStore, Store, StoreUnavailable
from router.limits import Limits
from router.modes import EMBEDDED, STREAMED, WHOLE, Mode, R
from router.narrowing import able, check_max_tokens, local_only, over_budget, within_latency_budget
from router.offload import off_loop
from router.pricing import ESTIMATED_ANSWER_TOKENS, FREE, Price
from router.redaction import Redaction
from router.request import ChatRequest
from router.resilience import Breaker, RetryPolicy, guarded
from router.routed import Routed
from router.tier import Tier

log = logging.getLogger("edgeway.router")
INLINE_BYTES = 64 * 1024  # bodies up to this are scored on the event loop (well under a millisecond)


@dataclass(frozen=True)
class Caller:
    """Who asks, and what they route by: read per request, so a reloaded policy applies at once."""

    app: str
    policy: Policy
    budget: AppBudget | None = None
    limits: Limits | None = None
    cache: CachePolicy | None = None


class Router:
    def __init__(
        self,
        models: dict[str, Tier],
        scorer: Scorer,
        prices: dict[str, Price] | None = None,
        store: Store | None = None,
        cache: CacheStore | None = None,
        routers: InstalledRouters | None = None,
    ) -> None:
        self.models = models
        self.routers = routers or InstalledRouters()
        self.auto = AutoRoutes(models, self.routers)
        self.cache: CacheStore = cache or MemoryCache()
        self.scorer = scorer
        self.prices = prices or {}
        self._store: Store = store or MemoryStore()  # the ledger: budgets, limits, rows
        guarded_models = {name: m.resilience for name, m in models.items() if m.resilience is not None}
        self.retries = {name: RetryPolicy(attempts=r.retries) for name, r in guarded_models.items()}
        self.breakers = {
            name: Breaker(name, r.circuit_failures, r.circuit_cooldown_s) for name, r in guarded_models.items()
        }
        self.catalog = Catalog({name: ModelInfo(name, m.tier, m.context_window) for name, m in models.items()})
        # what embeds asks for the semantic cache: local, so an ask compared never leaves the machine
        self.embedder = next((m for m in models.values() if m.tier == "edge" and "embeddings" in m.capabilities), None)

    # --- deciding: pure ---------------------------------------------------------------------
    def signals(self, request: ChatRequest) -> Signals:
        return self.scorer.signals(
            request.messages, max_tokens=request.max_tokens, metadata=request.metadata, body=request.body
        )

    def live_state(self, caller: Caller) -> LiveState:
        waits = [m.capacity().wait_ms for m in self.models.values() if m.tier == "edge"]
        left = self._store.left(caller.app, caller.budget.caps) if caller.budget else None
        return LiveState(edge_queue_wait_ms=min(waits) if waits else 0.0, budget_left_usd=left)

    def admissible(self, request: ChatRequest, caller: Caller) -> ChatRequest:
        """The request as it may be served: a known model, within the app's caps, with the app's
        default max_tokens filled in (a new request; the one given is left as it was)."""
        if request.model != "auto" and request.model not in self.models:
            raise ModelNotFound(
                f"The model {request.model!r} does not exist on this gateway; GET /v1/models lists "
                f"the models you can use.",
                param="model",
            )
        if caller.limits is not None:
            capped = caller.limits.check_request(len(request.messages), request.max_tokens)
            if capped != request.max_tokens:
                return dataclasses.replace(request, max_tokens=capped, body={**request.body, "max_tokens": capped})
        return request

    async def decide_async(self, request: ChatRequest, caller: Caller) -> tuple[Signals, Decision]:
        """`decide`, with a large request's signals computed on a worker thread: scanning
        megabytes takes a second, which the event loop (and every other request) must not wait."""
        request = self.admissible(request, caller)
        return self.decide(request, caller, await self._signals_async(request))

    async def signals_async(self, request: ChatRequest, caller: Caller) -> Signals:
        """The request's signals once it is admissible (a known model, within the app's caps)."""
        return await self._signals_async(self.admissible(request, caller))

    async def _signals_async(self, request: ChatRequest) -> Signals:
        if request.body_bytes <= INLINE_BYTES:
            return self.signals(request)
        return await off_loop(lambda: self.signals(request))

    def decide(self, request: ChatRequest, caller: Caller, signals: Signals | None = None) -> tuple[Signals, Decision]:
        """What would happen to this request now. Raises the refusals a client must hear (unknown
        model, over a limit, denied by policy, over budget under `deny`, no model may serve).
        With `signals`, `request` is the admissible one they were read from."""
        if signals is None:
            request = self.admissible(request, caller)
            signals = self.signals(request)
        live = self.live_state(caller)
        decision = caller.policy.decide(signals, request, live)
        if decision.deny is not None:
            raise Forbidden(decision.deny)
        if caller.budget is not None and live.budget_left_usd is not None and live.budget_left_usd <= 0:
            decision = over_budget(decision, caller.budget)
        decision = local_only(self.models, within_latency_budget(self.models, decision, request, live))
        if not decision.targets:
            raise NoCapacity(
                f"No model may serve this request now ({decision.rule}: {'; '.join(decision.reasons)}).",
                retry_after=5,
            )
        decision = able(self.models, request, decision)
        check_max_tokens(self.models, signals, decision)
        if decision.auto is not None:
            decision = self.auto.order(decision, signals, request, caller.app)
        return signals, decision

    def estimate(self, decision: Decision, signals: Signals) -> float:
        """The most this request may cost: its first cloud target at the requested max_tokens."""
        cloud = next((t for t in decision.targets if self.models[t].tier == "cloud"), None)
        if decision.cascade is not None:
            cloud = cloud or decision.cascade.target
        if cloud is None:
            return 0.0
        return self.prices.get(cloud, FREE).cost(signals.prompt_tokens, signals.max_tokens or ESTIMATED_ANSWER_TOKENS)

    # --- admitting: counts and reserves -------------------------------------------------------
    def admit(
        self, caller: Caller, signals: Signals, decision: Decision, account: RequestAccount | None = None
    ) -> Decision:
        """Count the request against its app's rate limits and reserve its worst-case cost on its
        account (`account`; else one that only holds the reservation).

        Raises RateLimited over a rate limit. When a racing request spent the budget meanwhile,
        the decision becomes local-only (or the request is refused, under `deny`)."""
        if caller.limits is not None:
            tokens = signals.prompt_tokens + (signals.max_tokens or ESTIMATED_ANSWER_TOKENS)
            wait = self._store.take(caller.app, tokens, caller.limits)
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
        books = account if account is not None else self.account("unrowed", caller.app)
        try:
            admitted = books.admit(caller.budget.caps, estimate)
        except StoreUnavailable:
            return _some_target(self._admit_alone(books, caller.budget, decision, estimate))
        if not admitted:
            return _some_target(local_only(self.models, over_budget(decision, caller.budget)))
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
            if books.admit_alone(budget.caps, estimate):
                return dataclasses.replace(decision, reserved_usd=estimate)
            return local_only(self.models, over_budget(decision, budget))  # this replica's share is spent
        why = "budget store unreachable: edge only"
        return local_only(
            self.models, dataclasses.replace(decision, cloud_allowed=False, reasons=decision.reasons + (why,))
        )

    def account(self, request_id: str, app: str, **options: Any) -> RequestAccount:
        """A request's account, on this router's ledger and prices (router.account)."""
        return RequestAccount(
            self._store, self.prices, self.scorer.tokens.estimate, self.auto, request_id, app, **options
        )

    # --- running ------------------------------------------------------------------------------
    # `account` (router.account.RequestAccount) holds the request's reservation, which it settles in
    # the request's row; without one (a caller that writes no row) a failed request's is given back
    # all the same, by an account that writes nothing.
    async def complete(
        self,
        request: ChatRequest,
        caller: Caller,
        account: RequestAccount | None = None,
        deferral: Deferral | None = None,
    ) -> Routed[Answer]:
        """A whole answer; with `deferral`, a cloud call it takes is parked instead (raises Parked)."""
        return await self._run(WHOLE, request, caller, account, deferral)

    async def embed(
        self, request: ChatRequest, caller: Caller, account: RequestAccount | None = None
    ) -> Routed[Answer]:
        return await self._run(EMBEDDED, request, caller, account)

    async def stream(
        self, request: ChatRequest, caller: Caller, account: RequestAccount | None = None
    ) -> Routed[ChunkStream]:
        """Open a stream on the first target that accepts; fallbacks apply until then only."""
        return await self._run(STREAMED, request, caller, account)

    async def _run(
        self,
        mode: Mode[R],
        request: ChatRequest,
        caller: Caller,
        account: RequestAccount | None,
        deferral: Deferral | None = None,
    ) -> Routed[R]:
        with tracing.step("edgeway.classify") as span:
            request = self.admissible(request, caller)  # what is served, from here on
            signals = await self._signals_async(request)
            span.set_attributes(tracing.signal_attributes(signals))
        with tracing.step("edgeway.decide") as span:
            signals, decision = self.decide(request, caller, signals)
            span.set_attributes(tracing.decision_attributes(decision, signals))
        key = None
        if caller.cache is not None and cacheable(request, caller.cache):
            key = key_of(caller.app, decision.targets[0], request)
            found, similarity = self.cache.get(caller.app, key), None
            if found is None and caller.cache.semantic:
                found, similarity = await semantic.similar(
                    self.cache, self.embedder, caller.app, caller.cache, decision.targets[0], request, signals.privacy
                )
            if found is not None:  # the cheapest route of all: nothing admitted, nothing called
                served = self.models[decision.targets[0]]
                replayed = mode.replay(unpack(found))
                return Routed(signals, decision, served, replayed, cache="hit", similarity=similarity)
        # the reservation is held on the request's account; a caller that writes no row (a test, a
        # replay) gets one that only holds it, so that a failure gives it back the same way
        books = account if account is not None else self.account("unrowed", caller.app)
        decision = self.admit(caller, signals, decision, books)
        try:
            if decision.auto is not None and decision.auto.read_first:

                async def elsewhere(ordered: Decision) -> tuple[Tier, R, list[str]]:
                    return await self._first_to_accept(
                        ordered, lambda m: self._call(mode, m, request, signals, ordered, deferral)
                    )

                routed = await self.auto.read_first(mode, request, signals, decision, caller.app, elsewhere)
            elif mode.cascades and self._cascades(decision):
                routed = await self._cascade(mode, request, signals, decision, deferral)
            else:
                model, result, failures = await self._first_to_accept(
                    decision, lambda m: self._call(mode, m, request, signals, decision, deferral)
                )
                routed = Routed(signals, decision, model, result, failures)
        except Parked:  # the deferral holds the reservation until the answer is priced
            raise
        except BaseException:  # no priced row will settle the reservation
            books.release()
            raise
        if key is not None and caller.cache is not None and routed.model.name == decision.targets[0]:
            # (an answer of a fallback or an escalation is not the keyed model's: not kept)
            policy, app, exact = caller.cache, caller.app, key
            record = (
                semantic.record(app, decision.targets[0], request, exact, signals.privacy) if policy.semantic else None
            )

            def keep(answer: Answer) -> None:
                self.cache.put(app, exact, pack(answer), policy.ttl_s)
                if record is not None:  # what a request in other words may match
                    self.cache.put(app, *record, policy.ttl_s)

            routed.result = mode.remember(routed.result, keep)
            routed.cache = "miss"
        return routed

    async def read_score(self, request: ChatRequest, caller: Caller, signals: Signals, decision: Decision) -> Decision:
        """A dry run's reading, where the app's router reads first (`AutoRoutes.dry_read`)."""
        return await self.auto.dry_read(request, caller.app, signals, decision)

    def _cascades(self, decision: Decision) -> bool:
        return decision.cascade is not None and self.models[decision.targets[0]].tier == "edge"

    async def _call(
        self,
        mode: Mode[R],
        model: Tier,
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        deferral: Deferral | None = None,
    ) -> R:
        if model.tier == "cloud" and not decision.cloud_allowed:  # unreachable by construction; the last guard
            raise NoCapacity(f"Policy rule {decision.rule!r} keeps this request on the edge.", retry_after=5)
        redacted = model.tier == "cloud" and decision.redact and bool(signals.privacy)
        redaction = Redaction(request, signals.privacy) if redacted else None
        sent = redaction.request if redaction is not None else request
        if deferral is not None and model.tier == "cloud" and deferral.takes(model, sent):
            raise await deferral.park(model, sent, request, signals, decision, redaction)
        attempts = itertools.count(1)

        async def attempt() -> R:
            number = next(attempts)
            with tracing.attempt(model.name, model.tier, request, number, **{"edgeway.redacted": redacted}) as span:
                return mode.traced(await mode.call(model, sent), span)

        result = await self._guarded(model, attempt)
        return mode.restore(result, redaction) if redaction is not None else result

    async def _guarded(self, model: Tier, call: Callable[[], Awaitable[R]]) -> R:
        if model.name not in self.breakers:
            return await call()
        return await guarded(self.breakers[model.name], self.retries[model.name], call)

    async def _cascade(
        self, mode: Mode[R], request: ChatRequest, signals: Signals, decision: Decision, deferral: Deferral | None
    ) -> Routed[R]:
        """The edge answers first, in full (a stream is held back); below the confidence threshold
        the cloud model answers instead. If the escalation fails, the edge answer stands."""
        edge, escalation = self.models[decision.targets[0]], decision.cascade
        assert escalation is not None  # _cascades() checked
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
            result = await self._call(mode, cloud, request, signals, decision, deferral)
        except EdgewayError as exc:
            if answer is None:
                raise
            log.warning(
                "cascade %s: escalating to %s failed (%s); the edge answer stands",
                decision.rule,
                cloud.name,
                exc.message,
            )
            return Routed(signals, decision, edge, mode.replay(answer), [f"{cloud.name}: {exc.message}"])
        return Routed(signals, decision, cloud, result, escalated=why)

    async def _first_to_accept(
        self, decision: Decision, start: Callable[[Tier], Awaitable[R]]
    ) -> tuple[Tier, R, list[str]]:
        failures: list[str] = []
        for position, name in enumerate(decision.targets):
            model = self.models[name]
            try:
                return model, await start(model), failures
            except EdgewayError as exc:
                failures.append(f"{name}: {exc.message}")
                left = len(decision.targets) - position - 1
                log.warning(
                    "rule %s: %s failed (%s); %d fallback(s) left", Known(decision.rule), Known(name), exc.message, left
                )
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


def _some_target(decision: Decision) -> Decision:
    """A decision that admission narrowed to no target at all (a cloud-only rule, over budget and
    kept local) is a refusal the client hears, not an empty plan."""
    if not decision.targets:
        raise NoCapacity(
            f"No model may serve this request now ({decision.rule}: {'; '.join(decision.reasons)}).", retry_after=5
        )
    return decision
