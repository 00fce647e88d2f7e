"""A request through the router's steps, in order: classify, decide, the response cache,
admit, execute.

Deciding is pure: `decide` reads the signals, the policy and the live state and returns what
would happen; it reserves nothing and counts nothing, so a dry run (`POST /v1/route`, `edgeway
explain`) can call it as often as it likes. The other steps are each a module's one job: the
response cache (`router.response_cache`), admission, which takes the request's share of the rate
limits and reserves its worst-case cost on its account (`router.admission`), and execution, the
targets in order with fallbacks, cascades and breakers (`router.execution`).

The privacy invariant: a decision with `cloud_allowed=False` never has a cloud target
(`router.narrowing.local_only` narrows every decision, and what runs after it only removes
targets), and `Execution.call` refuses to contact a cloud model for such a decision even if one
slipped in.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from classifiers.signals import Scorer, Signals
from router import tracing
from router.account import RequestAccount
from router.admission import Admission, some_target
from router.answer import Answer, ChunkStream
from router.auto import AutoRoutes
from router.cache import CacheStore, MemoryCache
from router.caller import Caller
from router.client_values import ClientValues
from router.decision import Catalog, Decision, LiveState, ModelInfo, SessionRoute
from router.deferral import Deferral, Parked
from router.egress import EgressLog
from router.errors import EdgewayError, Forbidden, ModelNotFound
from router.execution import Execution
from router.installed import InstalledRouters
from router.ledger import MemoryStore, Store
from router.modes import EMBEDDED, STREAMED, WHOLE, Mode, R
from router.narrowing import able, check_max_tokens, local_only, over_budget, within_latency_budget
from router.offload import off_loop
from router.pricing import Price
from router.request import ChatRequest
from router.response_cache import ResponseCache
from router.routed import Failure, Routed
from router.semantic import private_values
from router.sessions import Session, Sessions, SessionSource, continues, in_tool_loop, session_of
from router.thinking import Signers
from router.tier import Tier

log = logging.getLogger("edgeway.router")
INLINE_BYTES = 64 * 1024  # bodies up to this are scored on the event loop (well under a millisecond)


class Router:
    def __init__(
        self,
        models: dict[str, Tier],
        scorer: Scorer,
        prices: dict[str, Price] | None = None,
        store: Store | None = None,
        cache: CacheStore | None = None,
        routers: InstalledRouters | None = None,
        aliases: dict[str, str] | None = None,
        egress: EgressLog | None = None,
        readers: dict[str, Tier] | None = None,
    ) -> None:
        self.models = models
        self.readers = readers or {}  # edge models that read prompts for the apps' routers, never answer
        # a provider's id of a configured model (`gpt-4o-mini`, `openai/gpt-4o-mini`) -> its name:
        # an agent that names its provider's model (Codex's default) reaches the configured one
        self.aliases = {k: v for k, v in (aliases or {}).items() if k not in models}
        self.routers = routers or InstalledRouters()
        self.auto = AutoRoutes(models, self.routers, self.readers)
        self.cache: CacheStore = cache or MemoryCache()
        self.scorer = scorer
        self.client_values = ClientValues()  # what the log masker masks (gateway/masked_logs.py)
        self.prices = prices or {}
        self._store: Store = store or MemoryStore()  # the ledger: budgets, limits, rows
        self.execution = Execution(models)
        self.breakers = self.execution.breakers  # (read by /metrics)
        self.admission = Admission(models, self.prices, self._store)
        self.catalog = Catalog({name: ModelInfo(name, m.tier, m.context_window) for name, m in models.items()})
        # what embeds asks for the semantic cache: local, so an ask compared never leaves the machine
        embedder = next((m for m in models.values() if m.tier == "edge" and "embeddings" in m.capabilities), None)
        self.responses = ResponseCache(self.cache, embedder)
        self.sessions = Sessions(self.cache)  # which model served each conversation
        self.signers = Signers(self.cache)  # which model signed each thinking block it passed on
        # what left for a cloud model, request by request (with the installed routers' documents)
        self.egress = egress or EgressLog(self.routers.documents)

    # --- deciding: pure ---------------------------------------------------------------------
    def signals(self, request: ChatRequest) -> Signals:
        """What the request says of itself; its private values are noted for the log masker."""
        signals = self.scorer.signals(
            request.messages, max_tokens=request.max_tokens, metadata=request.metadata, body=request.as_sent
        )
        self.client_values.note(private_values(request, signals.privacy))
        return signals

    def live_state(self, caller: Caller) -> LiveState:
        waits = [m.capacity().wait_ms for m in self.models.values() if m.tier == "edge"]
        left = self._store.left(caller.name, caller.budget.caps) if caller.budget else None
        return LiveState(edge_queue_wait_ms=min(waits) if waits else 0.0, budget_left_usd=left)

    def admissible(self, request: ChatRequest, caller: Caller) -> ChatRequest:
        """The request as it may be served: a known model, within the app's caps, with the app's
        default max_tokens filled in (a new request; the one given is left as it was)."""
        if request.model in self.aliases:  # a configured model named by its provider's id
            request = dataclasses.replace(request, model=self.aliases[request.model])
        if request.model != "auto" and request.model not in self.models:
            raise ModelNotFound(
                f"The model {request.model!r} does not exist on this gateway; GET /v1/models lists "
                f"the models you can use.",
                param="model",
            )
        if caller.limits is not None:
            capped = caller.limits.check_request(len(request.messages), request.max_tokens)
            if capped != request.max_tokens:
                native = request.native
                if native is not None and capped is not None:  # what a provider of its API receives, capped too
                    native = dataclasses.replace(native, body=native.codec.capped(native.body, capped))
                body = {**request.body, "max_tokens": capped}
                return dataclasses.replace(request, max_tokens=capped, body=body, native=native)
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
        decision = dataclasses.replace(caller.policy.decide(signals, request, live), live=live)
        if decision.deny is not None:
            raise Forbidden(decision.deny, rule=decision.rule)
        if caller.budget is not None and live.budget_left_usd is not None and live.budget_left_usd <= 0:
            spent = self._store.exhausted(caller.name, caller.budget.caps)
            if spent is not None:
                decision = over_budget(decision, caller.budget, spent)
        decision = some_target(local_only(self.models, within_latency_budget(self.models, decision, request, live)))
        decision = able(self.models, request, decision)
        check_max_tokens(self.models, signals, decision)
        if request.model != "auto" and decision.targets[0] != request.model:
            why = f"the request named {request.model}; rule {decision.rule!r} sends it to {decision.targets[0]} first"
            decision = dataclasses.replace(decision, reasons=(*decision.reasons, why))
        if decision.auto is not None:
            decision = self._routed_by_session(request, caller, signals, decision)
        return signals, decision

    def _routed_by_session(
        self, request: ChatRequest, caller: Caller, signals: Signals, decision: Decision
    ) -> Decision:
        """An `auto` decision ordered by the app's router, then, where the request continues a
        session (`router.sessions`), the model that served it put first while it is still among
        the targets (the rest in the router's order, as its fallbacks); marked with the session."""
        ordered = self.auto.order(decision, signals, request, caller.name)
        session = session_of(request) if caller.session.affinity else None
        if session is None:
            return ordered
        served = self.sessions.model(caller.name, session)
        route = SessionRoute(session.source, session.key, served)
        if served is None or served not in ordered.targets:
            return dataclasses.replace(ordered, session=route)
        looping = in_tool_loop(request)  # an unfinished tool loop ends where it began, climb or not
        if not looping and self._above(ordered.targets[0], served, ordered):
            return dataclasses.replace(ordered, session=route)
        if not continues(request, session):
            return dataclasses.replace(ordered, session=route)
        auto = ordered.auto if ordered.auto is not None else decision.auto
        assert auto is not None
        why = "its tool loop" if looping else f"its session ({session.source})"
        return dataclasses.replace(
            ordered,
            targets=(served, *(t for t in ordered.targets if t != served)),
            auto=dataclasses.replace(auto, read_first=False),  # the edge need not read what stays put
            session=dataclasses.replace(route, kept=True),
            reasons=ordered.reasons + (f"{why} stays on {served}, which served it",),
        )

    def _above(self, chosen: str, served: str, decision: Decision) -> bool:
        """Whether the app's router chose a model above the session's (up its ladder; the cloud
        over the edge): a turn the session's model is not good enough for climbs, its cached prefix
        lost for quality. A move down, to save, never pays for the prefix it would lose (an agent's
        turn is mostly a cached prefix, read at a tenth of its price), so it is not made."""
        ladder = decision.auto.ladder if decision.auto is not None else ()
        if chosen in ladder and served in ladder:
            return ladder.index(chosen) > ladder.index(served)
        return self.models[chosen].tier == "cloud" and self.models[served].tier == "edge"

    def _served(self, caller: Caller, request: ChatRequest, decision: Decision, model: str) -> None:
        """`model` answered a request the app's router chose for: its session goes on there (for
        another `ttl_s` idle)."""
        if decision.session is not None:
            session = Session(SessionSource(decision.session.source), decision.session.key)
            self.sessions.served(caller.name, session, model, caller.session)

    def admit(
        self, caller: Caller, signals: Signals, decision: Decision, account: RequestAccount | None = None
    ) -> Decision:
        """Count the request against its app's rate limits and reserve its worst-case cost on its
        account (`account`; else one that only holds the reservation): `Admission.admit`."""
        books = account if account is not None else self.account("unrowed", caller.name)
        return self.admission.admit(caller, signals, decision, books)

    def account(self, request_id: str, app: str, **options: Any) -> RequestAccount:
        """A request's account, on this router's ledger and prices (router.account)."""
        estimate, egress = self.scorer.tokens.estimate, self.egress
        return RequestAccount(self._store, self.prices, estimate, self.auto, request_id, app, egress=egress, **options)

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
            request = self.signers.known(caller.name, request)  # a model reads only the thinking it signed
            signals = await self._signals_async(request)
            span.set_attributes(tracing.signal_attributes(signals))
        with tracing.step("edgeway.decide") as span:
            signals, decision = self.decide(request, caller, signals)
            span.set_attributes(tracing.decision_attributes(decision, signals))
        looked = await self.responses.look_up(caller, request, signals, decision)
        if looked is not None and looked.answer is not None:  # the cheapest route: nothing admitted or called
            served = self.models[decision.targets[0]]
            replayed = mode.replay(looked.answer)
            hit = Routed(signals, decision, served, replayed, cache="hit", similarity=looked.similarity)
            hit.requested = request.model if request.model not in ("auto", served.name) else None
            return hit
        # the reservation is held on the request's account; a caller that writes no row (a test, a
        # replay) gets one that only holds it, so that a failure gives it back the same way
        books = account if account is not None else self.account("unrowed", caller.name)
        decision = self.admit(caller, signals, decision, books)
        try:
            if decision.auto is not None and decision.auto.read_first:

                async def elsewhere(ordered: Decision) -> tuple[Tier, R, list[Failure]]:
                    return await self.execution.first_to_accept(
                        ordered, lambda m: self.execution.call(mode, m, request, signals, ordered, deferral, books)
                    )

                routed = await self.auto.read_first(mode, request, signals, decision, caller.name, elsewhere)
            elif mode.cascades and self.execution.cascades(decision):
                routed = await self.execution.cascade(mode, request, signals, decision, deferral, books)
            else:
                model, result, failures = await self.execution.first_to_accept(
                    decision, lambda m: self.execution.call(mode, m, request, signals, decision, deferral, books)
                )
                routed = Routed(signals, decision, model, result, failures)
        except Parked:  # the deferral holds the reservation until the answer is priced
            raise
        except EdgewayError as exc:  # no priced row will settle the reservation
            books.release()
            if exc.model in self.models:  # a model refused it (or failed), under the decision's rule
                books.refused_by(self.models[exc.model], decision.rule)
                exc.rule = exc.rule or decision.rule  # (said as x-edgeway-rule, as a denial's is)
            raise
        except BaseException:
            books.release()
            raise
        self._served(caller, request, decision, routed.model.name)
        answered_by = routed.model.name
        routed.result = mode.signed(routed.result, lambda seals: self.signers.noted(caller.name, answered_by, seals))
        if request.model not in ("auto", routed.model.name):  # said, not silently overridden
            routed.requested = request.model
        if looked is not None and routed.model.name == decision.targets[0]:
            # (an answer of a fallback or an escalation is not the keyed model's: not kept)
            routed.result = mode.remember(routed.result, self.responses.keeper(looked, request, signals))
            routed.cache = "miss"
        return routed

    async def explain(self, request: ChatRequest, caller: Caller) -> tuple[Signals, Decision]:
        """What would happen to this request, with the signals it would be decided on: every stage
        a served request runs before a model is called, the edge's reading included where the
        app's router reads first (`AutoRoutes.dry_read`: the edge reads the prompt and stops). No
        cloud model is called, nothing is charged, no row is written. `POST /v1/route` and
        `edgeway explain` both answer with this."""
        signals, decision = await self.decide_async(request, caller)
        return signals, await self.auto.dry_read(request, caller.name, signals, decision)
