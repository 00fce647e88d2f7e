"""One request's bookkeeping, from the reservation to the ledger row: `RequestAccount`.

The router opens an account for each request it is given (`Router.account`), on its ledger and
prices. The account holds
what the router reserved of the app's budget, learns what answered, settles the usage (the
provider's count, or one estimated from what the client was given), prices it, writes the
request's one row, gives back a reservation no row settles, and offers the answered request for a
shadow comparison. The gateway keeps the transport and the telemetry: it tells the account when
the request was parsed, routed, began answering and ended, and reads the row it wrote.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, Protocol

from opentelemetry.context import Context

from classifiers.privacy.known import Known
from classifiers.signals import Signals
from router.answer import Answer, ChunkStream, Usage
from router.budget import Caps, Shortfall
from router.cloud.validate import delivered_text
from router.decision import Decision
from router.egress import Call, EgressLog, record_of
from router.ledger import RowKind, Store, UsageRow
from router.pricing import Price, cost_of
from router.request import ChatRequest
from router.routed import Routed
from router.routings import RoutingRecord
from router.served import Offers, ServedRequest, ShadowPolicy
from router.tier import Tier

Prompt = Callable[[ChatRequest, Signals], str | None]  # what of the prompt the row keeps (masked), if any
log = logging.getLogger("edgeway.router")
PROMPT_SLACK = 4  # a provider's prompt count may be this many times the scan's estimate
PROMPT_ALLOWANCE = 2048  # and this many tokens more (its own template, tools), for each media part too


class Recorder(Protocol):
    """Keeps what the app's router knew of each request an `auto` rule decided (router.auto)."""

    def record(self, request_id: str, app: str, routed: Routed[Any], request: ChatRequest) -> None: ...

    def routing_record(
        self, request_id: str, app: str, route: str, signals: Signals, decision: Decision, request: ChatRequest
    ) -> RoutingRecord | None: ...

    def keep(self, record: RoutingRecord) -> None: ...


class RequestAccount:
    def __init__(
        self,
        store: Store,
        prices: Mapping[str, Price],
        estimate_tokens: Callable[[str], int],
        recorder: Recorder | None,  # None: a row with no routing to record (a shadow's, a judge's)
        request_id: str,
        app: str,
        *,
        kind: RowKind = RowKind.REQUEST,
        reference: str | None = None,
        prompt: Prompt | None = None,
        shadows: Offers | None = None,
        shadow: ShadowPolicy | None = None,
        egress: EgressLog | None = None,
    ) -> None:
        self._store, self._prices, self._estimate_tokens, self._recorder = store, prices, estimate_tokens, recorder
        # no reference, no counterfactual: the row says so rather than that nothing was saved
        self.row = UsageRow(request_id=request_id, app=app, kind=kind, counterfactual_usd=0.0 if reference else None)
        self.started = time.perf_counter()
        self._prompt_tokens: int | None = None  # the scan's count, once routed: for usage a model did not count
        self.delivered: list[str] = []  # what a stream gave the client, for usage a provider did not count
        self._reference = reference  # the app's default cloud model: the counterfactual's price
        self._prompt = prompt
        self._shadows = shadows
        self._shadow = shadow
        self._reserved = 0.0
        self._batched = False  # answered through the provider's batch API: priced at its batch price
        self._parked_routing: RoutingRecord | None = None  # a parked line's, kept once it is answered
        self._estimate: Usage | None = None
        self._routed: tuple[Routed[Answer] | Routed[ChunkStream], ChatRequest] | None = None
        self.anomaly: str | None = None  # a usage count no answer could have had, charged at its bound
        self._completion_bound: int | None = None  # max_tokens x n, once routed; None: no bound
        self._media = 0  # parts the scan cannot count (images, audio, files), once routed
        self._egress = egress  # where each cloud call of this request is recorded (router.egress)
        self._sent = 0  # cloud calls recorded so far

    @property
    def ended(self) -> bool:
        return bool(self.row.latency_ms)

    # --- what the router tells it ------------------------------------------------------------
    def reserve(self, usd: float) -> None:
        """Hold `usd`, already taken from the budget, as this request's reservation."""
        self._reserved = usd

    def reserve_within(self, caps: Caps, usd: float) -> Shortfall | None:
        """Reserve `usd` of the budget this row's kind spends from (a shadow comparison's own, for
        one), if every cap has room for it, and return None; else the cap without room. Raises
        StoreUnavailable where the spend is shared and cannot be read."""
        short = self._store.reserve(self.row.account, caps, usd)
        if short is None:
            self._reserved = usd
        return short

    def reserve_alone(self, caps: Caps, usd: float) -> Shortfall | None:
        """While the shared spend cannot be read (`store_outage: local`): reserve `usd` from this
        replica's share of what was left (`Store.reserve_alone`); else the share without room."""
        short = self._store.reserve_alone(self.row.account, caps, usd)
        if short is None:
            self._reserved = usd
        return short

    def release(self) -> None:
        """Give back the reservation of a request that will write no priced row."""
        if self._reserved:
            self._store.charge(self.row.account, -self._reserved, self.row.ts)  # the day it was reserved
            self._reserved = 0.0

    def answered_by(self, model: Tier, rule: str) -> None:
        """What answered, for a row that is no routed request of the app's (a shadow answer, a
        judgement): priced at `model`'s price."""
        self.row.route, self.row.model, self.row.rule = model.tier, model.name, rule

    def refused_by(self, model: Tier, rule: str) -> None:
        """`model` refused the request (or failed it) under `rule`, and no other answered: the
        row says which and where, as an answered one does."""
        self.row.route, self.row.model, self.row.rule = model.tier, model.name, rule

    def sent_to(self, call: Call) -> None:
        """A call to a model: one to a cloud model (the edge is on the premises) is recorded in
        the egress audit, masked as it left (`router.egress`)."""
        if self._egress is None or call.model.tier != "cloud":
            return
        self._sent += 1
        request_id, app, number = self.row.request_id, self.row.app, self._sent
        self._egress.record(lambda: record_of(call, request_id, app, number))

    # --- what the gateway tells it -----------------------------------------------------------
    def parsed(self, chat: ChatRequest) -> None:
        self.row.stream = chat.stream

    def routed(self, routed: Routed[Answer] | Routed[ChunkStream], chat: ChatRequest) -> None:
        self._routed = (routed, chat)
        self.row.route, self.row.model, self.row.rule = routed.route, routed.model.name, routed.decision.rule
        self.row.cache = routed.cache
        auto = routed.decision.auto
        if auto is not None and auto.ladder:  # a ladder's counterfactual: every request on its top model
            self._reference = auto.ladder[-1]
        self._prompt_tokens = routed.signals.prompt_tokens
        self._bounds(chat, routed.signals)
        if self._prompt is not None:
            self.row.prompt = self._prompt(chat, routed.signals)

    def _bounds(self, chat: ChatRequest, signals: Signals) -> None:
        self._completion_bound = (
            0
            if chat.inputs is not None
            # embeddings answer no tokens
            else (chat.max_tokens * chat.n if chat.max_tokens is not None else None)
        )
        self._media = media_parts(signals)

    def first_token(self) -> None:
        if self.row.ttft_ms is None:
            self.row.ttft_ms = (time.perf_counter() - self.started) * 1e3

    def settled(self, usage: Usage, delivered: str | None = None) -> Usage:
        """The usage to charge and report: the model's count, or one made once from what was
        delivered (`delivered`, else the stream's pieces) when the model gave none that holds.
        A count no answer to this request could have (`bound`) is charged at the bound."""
        if usage.measured:
            return self._bounded(usage)
        if self._prompt_tokens is None:
            return usage
        if self._estimate is None:
            text = "".join(self.delivered) if delivered is None else delivered
            tokens = self._estimate_tokens(text)
            self._estimate = Usage(self._prompt_tokens, tokens, measured=False)
        return self._estimate

    def settle_answer(self, answer: Answer) -> None:
        """A whole answer's usage as charged (`settled`: the model's count, or one made from the
        answer's text, bounded), written into the answer too: what is charged is what is said."""
        settled = self.settled(answer.usage, None if answer.usage.measured else delivered_text(answer.body))
        if settled is not answer.usage:
            answer.usage, answer.body["usage"] = settled, settled.as_openai()

    def bound(self) -> tuple[int, int | None] | None:
        """The most a provider may count for this request, (prompt, completion): its prompt at
        `PROMPT_SLACK` times the scan's estimate plus `PROMPT_ALLOWANCE` (tokenizers differ; a
        provider's template, images and files count what the scan cannot), and `max_tokens` for
        each of its `n` answers (None: no bound). None before it is routed."""
        if self._prompt_tokens is None:
            return None
        return PROMPT_SLACK * self._prompt_tokens + PROMPT_ALLOWANCE * (1 + self._media), self._completion_bound

    def _bounded(self, usage: Usage) -> Usage:
        bound = self.bound()
        if bound is None:
            return usage
        most_prompt, most_completion = bound
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        if prompt <= most_prompt and (most_completion is None or completion <= most_completion):
            return usage
        self.anomaly = (
            f"the provider counted {prompt} prompt and {completion} completion tokens where the request could "
            f"have {most_prompt} and {'any' if most_completion is None else most_completion} at most"
        )
        log.warning("request %s: %s; charged at that bound", Known(self.row.request_id), self.anomaly)
        capped = completion if most_completion is None else min(completion, most_completion)
        kept = min(prompt, most_prompt)
        read = min(usage.cache_read_tokens, kept)
        written = min(usage.cache_write_tokens, kept - read)
        hour = min(usage.cache_write_1h_tokens, written)
        return Usage(kept, capped, cache_read_tokens=read, cache_write_tokens=written, cache_write_1h_tokens=hour)

    # --- a request answered later (router.deferral) ------------------------------------------
    def suspend(self, model: str, rule: str, chat: ChatRequest, signals: Signals, decision: Decision) -> dict[str, Any]:
        """The account of a request parked for `model`'s batch API, as data to resume it from when
        the answer comes (in this process or another); its reservation goes with it, and what the
        app's router knew of it where an `auto` rule decided (kept once it is answered, as a live
        request's is). This object writes no row after it."""
        self.row.route, self.row.model, self.row.rule = "cloud", model, rule
        self._prompt_tokens = signals.prompt_tokens
        if self._prompt is not None:
            self.row.prompt = self._prompt(chat, signals)
        routing = (
            None
            if self._recorder is None
            else self._recorder.routing_record(self.row.request_id, self.row.app, "cloud", signals, decision, chat)
        )
        state = {
            "row": self.row.as_dict(),
            "reserved": self._reserved,
            "prompt_tokens": signals.prompt_tokens,
            "completion_bound": None if chat.max_tokens is None else chat.max_tokens * chat.n,
            "media": media_parts(signals),
            "reference": self._reference,
            "routing": None if routing is None else asdict(routing),
        }
        return state  # (the router neither settles nor gives back the reservation of a parked request)

    def resume(self, state: dict[str, Any]) -> None:
        """Take over a suspended account (`suspend`): its row so far, its reservation, and the
        time it has run (the row's latency counts from when the request arrived)."""
        self.row = UsageRow(**state["row"])
        self._reserved = float(state["reserved"])
        self._reference = state["reference"]
        self._batched = True
        self._prompt_tokens = int(state["prompt_tokens"])
        self._completion_bound, self._media = state.get("completion_bound"), int(state.get("media", 0))
        routing = state.get("routing")  # (absent from a line parked before routing records were kept)
        self._parked_routing = None if routing is None else RoutingRecord.of(routing)
        self.started -= max(0.0, time.time() - self.row.ts)

    # --- the end -----------------------------------------------------------------------------
    def finish(
        self, usage: Usage, status: int = 200, error: str | None = None, trace: Context | None = None
    ) -> UsageRow:
        """Price the usage, write the row (settling the reservation), and for an answered request
        record its routing and offer it for a shadow comparison (`trace`: its parent span)."""
        row = self.row
        seconds = time.perf_counter() - self.started
        row.latency_ms, row.status, row.error = seconds * 1e3, status, error
        usage = self.settled(usage)
        row.prompt_tokens, row.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        row.cache_read_tokens, row.cache_write_tokens = usage.cache_read_tokens, usage.cache_write_tokens
        busy = seconds if row.route == "edge" else 0.0
        row.cost_usd = 0.0 if row.cache == "hit" else self._cost(row.model, usage, busy)
        if row.cache != "hit" and (usage.cache_read_tokens or usage.cache_write_tokens):
            uncached = Usage(usage.prompt_tokens, usage.completion_tokens)
            row.prompt_cache_saved_usd = self._cost(row.model, uncached, busy) - row.cost_usd
        if self._reference:
            row.counterfactual_usd = self._cost(self._reference, usage)
        if row.model in self._prices and not self._prices[row.model].known:
            row.priced, row.counterfactual_usd = False, row.cost_usd  # what it cost is not known: no saving
        self._write()
        if status == 200 and row.cache != "hit" and self._routed is not None and self._recorder is not None:
            self._recorder.record(row.request_id, row.app, *self._routed)
            self._offer(trace)
        elif status == 200 and self._parked_routing is not None and self._recorder is not None:
            self._recorder.keep(self._parked_routing)
        return row

    def abort(self, status: int, error: str | None) -> UsageRow:
        """The row of a request that ended without usage: refused, failed or left before routing."""
        row = self.row
        row.latency_ms, row.status, row.error = (time.perf_counter() - self.started) * 1e3, status, error
        self._write()
        return row

    def _write(self) -> None:
        self._store.append(self.row, reserved=self._reserved)
        self._reserved = 0.0

    def _cost(self, model: str, usage: Usage, seconds: float = 0.0) -> float:
        return cost_of(self._prices, model, usage, seconds, batched=self._batched)

    def _offer(self, trace: Context | None) -> None:
        shadows = self._shadows
        policy = None if shadows is None else shadows.sampled(self._shadow)
        if shadows is None or policy is None or self._routed is None:
            return
        routed, chat = self._routed
        served = ServedRequest.of(self.row.request_id, self.row.app, chat, routed, "".join(self.delivered))
        shadows.start(served, policy, trace)


def media_parts(signals: Signals) -> int:
    """The request's images, audio and files: what the scan cannot count the tokens of."""
    return sum(1 for f in signals.privacy if f.type == "UNSCANNED" and f.detector == "media")
