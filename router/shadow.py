"""Shadow comparisons: the other tier answers a sample of requests too, and a judge compares.

For a sampled request that its rule let reach the cloud, after the client has its answer and off
the request path, the tier that did not serve answers the same request (the app's default cloud
model if the edge served, its edge model if the cloud did); a cloud judge compares the two
answers in both orders (router/judge.py), and the verdict becomes a `Comparison` in the store.
A request a ladder routed is compared with the model of the step next to the one that served it
(the next one up, or from the top the one below): between an edge and a cloud model that is a
`Comparison` as above; between two cloud models, a `StepComparison`, which fits that step.
The shadow answer and the judge are charged as their own kind of ledger row ("shadow",
"judge") against the policy's `shadow.daily_usd`, never against the app's budget or requests.

A request kept local (by a fail-closed rule, `allow_cloud: false`, a budget spent under
`on_exhausted: edge`) or redacted is never shadowed: nothing of it goes anywhere it did not go.
Comparisons run a few at a time, each once the gateway has had a quiet moment (no new request for
QUIET_S, or after MAX_WAIT_S of traffic without one): the other tier's answer costs CPU that the
requests being served would otherwise have, on a machine whose edge shares its cores. When more
are waiting the sample is skipped, not queued without end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Protocol

from opentelemetry.context import Context

from classifiers import Scorer
from classifiers.privacy.known import Known
from router import tracing
from router.account import RequestAccount
from router.answer import Answer, Usage
from router.app_router import request_features
from router.budget import Caps
from router.cloud.validate import delivered_text
from router.comparisons import Comparison, Comparisons, StepComparison
from router.egress import Call, EgressLog, Purpose, failed
from router.errors import EdgewayError
from router.judge import JUDGE_MAX_TOKENS, judge_body, question_of, said, verdict
from router.ladder import adjacent
from router.ledger import RowKind, Store, StoreUnavailable
from router.modes import WHOLE
from router.pricing import ESTIMATED_ANSWER_TOKENS, FREE, Price, cost_of
from router.request import ChatRequest, parse_chat_request
from router.served import ServedRequest, ShadowPolicy
from router.thinking import Signers, readable_by
from router.tier import Tier

log = logging.getLogger("edgeway.shadow")
QUIET_S = 0.25  # no request started for this long: a lull for the edge to work in
MAX_WAIT_S = 10.0  # under steady traffic, a comparison waits at most this long for one


def why_not(served: ServedRequest, other: Tier | None) -> str | None:
    """Why this request may not be compared (None: it may). Pure."""
    decision, request = served.decision, served.request
    if not decision.cloud_allowed:
        return "kept local"
    if decision.redact and served.signals.privacy:
        return "redacted"
    if request.inputs is not None:
        return "embeddings"
    if other is None:
        return "no model of the other tier"
    if not request.text_only and other.tier == "edge":
        return "media the edge cannot read"
    if request.needs - other.capabilities:
        return f"the {other.tier} cannot honor {', '.join(sorted(request.needs))}"
    if not served.answer.strip():
        return "no text answer"
    return None


class Compared(Protocol):
    """What a comparison reads of the router (`router.routing.Router`): its models, their prices,
    its token estimate, where what leaves is recorded, and who signed each thinking block."""

    @property
    def models(self) -> Mapping[str, Tier]: ...

    @property
    def prices(self) -> Mapping[str, Price]: ...

    @property
    def scorer(self) -> Scorer: ...

    @property
    def egress(self) -> EgressLog: ...

    @property
    def signers(self) -> Signers: ...


class Shadower:
    def __init__(
        self,
        router: Compared,
        comparisons: Comparisons,
        store: Store,
        *,
        draw: Callable[[], float] = random.random,
        running: int = 2,
        waiting: int = 16,
    ) -> None:
        self.router, self.comparisons, self.draw = router, comparisons, draw
        self.store = store  # the ledger the router's requests are on: shadow rows and the shadow budget
        self.stats: Counter[str] = Counter()  # compared, failed, and every reason a sample was skipped
        self._slots = asyncio.Semaphore(running)
        self._room = running + waiting
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_request = 0.0  # time.monotonic() of the latest request the gateway started

    def traffic(self) -> None:
        """A request started (the gateway calls this for each): comparisons wait for quiet."""
        self._last_request = time.monotonic()

    async def _quiet(self) -> None:
        give_up = time.monotonic() + MAX_WAIT_S
        while time.monotonic() - self._last_request < QUIET_S and time.monotonic() < give_up:
            await asyncio.sleep(QUIET_S)

    def consider(self, served: ServedRequest, policy: ShadowPolicy | None, parent: Context | None = None) -> None:
        """Sample the request and, if it may be compared, start comparing it in the background."""
        drawn = self.sampled(policy)
        if drawn is not None:
            self.start(served, drawn, parent)

    def sampled(self, policy: ShadowPolicy | None) -> ShadowPolicy | None:
        """The policy, if a request is drawn for a comparison and there is room for one: the
        gateway asks this first, so a request not drawn costs a random number and no more."""
        if policy is None or self.draw() >= policy.sample:
            return None
        if len(self._tasks) >= self._room:
            self.stats["skipped: busy"] += 1
            return None
        return policy

    def start(self, served: ServedRequest, policy: ShadowPolicy, parent: Context | None = None) -> None:
        """Compare a sampled request in the background, if it may be compared at all."""
        other = self._other(served, policy)
        reason = why_not(served, other)
        if reason is None and self.router.models.get(policy.judge) is None:
            reason = "no judge"
        if reason is not None or other is None:
            self.stats[f"skipped: {reason}"] += 1
            return
        task = asyncio.get_running_loop().create_task(self._guarded(served, policy, other, parent))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def in_flight(self) -> int:
        """Comparisons running or waiting for a slot."""
        return len(self._tasks)

    def _other(self, served: ServedRequest, policy: ShadowPolicy) -> Tier | None:
        """What answers beside the served model: on a ladder, the model of the step next to it (up,
        or down from the top); else the policy's model of the other tier."""
        auto = served.decision.auto
        if auto is not None and auto.ladder and (beside := adjacent(auto.ladder, served.model)) is not None:
            return self.router.models.get(beside)
        model = self.router.models.get(policy.cloud if served.tier == "edge" else policy.edge)
        return model if model is not None and model.tier != served.tier else None

    async def drain(self) -> None:
        """Wait for the comparisons under way (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _guarded(self, served: ServedRequest, policy: ShadowPolicy, other: Tier, parent: Context | None) -> None:
        async with self._slots:
            await self._quiet()  # the client's answer goes out first, and the next requests' answers
            try:
                with tracing.step("edgeway.shadow", parent, **{"edgeway.shadow.of": served.tier}) as span:
                    found = await self.compare(served, policy, other)
                    if found is not None:
                        span.set_attributes(
                            {"edgeway.shadow.verdict": found.verdict, "edgeway.shadow.model": other.name}
                        )
            except EdgewayError as exc:
                self.stats["failed"] += 1
                log.warning("shadow comparison of %s failed: %s", Known(served.request_id), exc.message)
            except Exception:
                self.stats["failed"] += 1
                log.exception("shadow comparison of %s broke", Known(served.request_id))

    async def compare(
        self, served: ServedRequest, policy: ShadowPolicy, other: Tier
    ) -> Comparison | StepComparison | None:
        """Answer on the other model, judge both orders, keep the comparison (of the edge and the
        cloud, or of a ladder's step between two cloud models); None when the shadow budget has
        no room for it today."""
        router, judge = self.router, self.router.models[policy.judge]
        question = question_of(served.request)
        # the shadow answer's row holds the comparison's worst case (its judgements' too), of the
        # shadow budget, and settles it; the judgements' row is charged what they cost
        answering = self._account(served, RowKind.SHADOW, other)
        try:
            short = answering.reserve_within(
                Caps(policy.daily_usd, None), self._estimate(served, other, judge, question)
            )
        except StoreUnavailable:  # the shadow budget cannot be counted: no comparison until it can
            self.stats["skipped: budget store unreachable"] += 1
            return None
        if short is not None:
            self.stats["skipped: shadow budget spent"] += 1
            return None
        # the other model reads the conversation without the thinking the served one signed
        asked = readable_by(router.signers.known(served.app, _whole(served.request)), other)
        try:
            shadow = await self._answer(other, asked)
        except BaseException as exc:
            answering.release()  # nothing was spent of what was held
            self._told(answering, other, asked, served, Purpose.SHADOW, failed(exc))
            raise
        self._told(answering, other, asked, served, Purpose.SHADOW, "sent")
        answering.finish(shadow.usage)
        texts = {served.model: served.answer, other.name: delivered_text(shadow.body)}
        lower, upper = _lower_and_upper(served, other)  # the edge and the cloud, or a step's two
        judging = self._account(served, RowKind.JUDGE, judge)
        asks = [judge_request(judge, question, texts[lower], texts[upper])]
        asks.append(judge_request(judge, question, texts[upper], texts[lower]))
        for ask in asks:  # told before they go: a judgement that fails may have reached its provider
            self._told(judging, judge, ask, served, Purpose.JUDGE, "sent")
        orders = await asyncio.gather(*(self._answer(judge, ask) for ask in asks))
        judged = Usage(sum(a.usage.prompt_tokens for a in orders), sum(a.usage.completion_tokens for a in orders))
        judging.finish(judged)
        said_lower_first, said_upper_first = (said(delivered_text(a.body)) for a in orders)
        found = verdict(said_lower_first, said_upper_first)  # "edge": the first of the pair, lower
        if other.tier == served.tier:
            step = StepComparison(
                request_id=served.request_id,
                app=served.app,
                rule=served.decision.rule,
                lower=lower,
                upper=upper,
                served=served.model,
                verdict={"edge": "lower", "cloud": "upper"}.get(found, found),
                prompt_tokens=served.signals.prompt_tokens,
                judge_model=judge.name,
                judge_tokens=judged.prompt_tokens + judged.completion_tokens,
                judge_usd=cost_of(router.prices, judge.name, judged),
                shadow_tokens=shadow.usage.prompt_tokens + shadow.usage.completion_tokens,
                shadow_usd=cost_of(router.prices, other.name, shadow.usage),
                asks=request_features(served.request),
            )
            await asyncio.to_thread(self.comparisons.add_step, step)
            self.stats["compared"] += 1
            return step
        comparison = Comparison(
            request_id=served.request_id,
            app=served.app,
            rule=served.decision.rule,
            complexity=served.signals.complexity,
            served=served.tier,
            edge_model=lower,
            cloud_model=upper,
            verdict=found,
            judge_model=judge.name,
            judge_tokens=judged.prompt_tokens + judged.completion_tokens,
            judge_usd=cost_of(router.prices, judge.name, judged),
            shadow_tokens=shadow.usage.prompt_tokens + shadow.usage.completion_tokens,
            shadow_usd=cost_of(router.prices, other.name, shadow.usage),
            reading=served.decision.auto.reading if served.decision.auto is not None else None,
            asks=request_features(served.request),  # what a fitted router may learn to weigh
        )
        await asyncio.to_thread(self.comparisons.add, comparison)
        self.stats["compared"] += 1
        return comparison

    def _estimate(self, served: ServedRequest, other: Tier, judge: Tier, question: str) -> float:
        """The most this comparison may cost: the other tier's answer at its max_tokens, and two
        judgements of the question with both answers at most that long."""
        router = self.router
        answer_tokens = served.request.max_tokens or ESTIMATED_ANSWER_TOKENS
        prompt = served.signals.prompt_tokens
        judged_prompt = router.scorer.tokens.estimate(question + served.answer) + answer_tokens + 400
        shadow = router.prices.get(other.name, FREE).cost(prompt, answer_tokens)
        return shadow + 2 * router.prices.get(judge.name, FREE).cost(judged_prompt, JUDGE_MAX_TOKENS)

    async def _answer(self, model: Tier, request: ChatRequest) -> Answer:
        with tracing.attempt(model.name, model.tier, request, 1, **{"edgeway.shadow": True}) as span:
            return WHOLE.traced(await model.complete(request), span)

    @staticmethod
    def _told(
        account: RequestAccount, model: Tier, sent: ChatRequest, served: ServedRequest, purpose: Purpose, outcome: str
    ) -> None:
        """The egress audit's record of a comparison's call (`router.egress`): the served
        request's findings, none of them masked (a masked request is never compared)."""
        account.sent_to(Call(model, sent, served.request, served.signals, served.decision, purpose, False, outcome))

    def _account(self, served: ServedRequest, kind: RowKind, model: Tier) -> RequestAccount:
        """The account of one of the comparison's own rows (`kind`): answered by `model`, spent
        from the app's shadow budget, never the app's."""
        account = RequestAccount(
            self.store,
            self.router.prices,
            self.router.scorer.tokens.estimate,
            None,
            f"{served.request_id}:{kind}",
            served.app,
            kind=kind,
            egress=self.router.egress,
        )
        account.answered_by(model, served.decision.rule)
        return account


def _lower_and_upper(served: ServedRequest, other: Tier) -> tuple[str, str]:
    """The pair's models, lower first: the edge before the cloud, else in the ladder's order."""
    if other.tier != served.tier:
        return (served.model, other.name) if served.tier == "edge" else (other.name, served.model)
    auto = served.decision.auto
    assert auto is not None  # a pair of one tier is only ever a ladder's step (`Shadower._other`)
    ladder, pair = auto.ladder, (served.model, other.name)
    return pair if ladder.index(served.model) < ladder.index(other.name) else (other.name, served.model)


def judge_request(judge: Tier, question: str, answer_a: str, answer_b: str) -> ChatRequest:
    return parse_chat_request(judge_body(judge.name, question, answer_a, answer_b))


def _whole(request: ChatRequest) -> ChatRequest:
    """The same request, answered whole: a shadow answer is read by the judge, not streamed."""
    body = {k: v for k, v in request.body.items() if k not in ("stream", "stream_options")}
    return dataclasses.replace(request, body=body, stream=False, include_usage=False)
