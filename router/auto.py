"""Rules with `route: auto`: the app's router orders the edge and the cloud, and where the edge
reads the prompt first, its reading decides.

The order is the app's router's (`router.app_router`: the text prior, and the probe's score of the
edge's reading, combined) against the threshold: below it the edge first, at or above it the
cloud. Where the policy's `router.edge_reading` says so (always, or for text scores inside its
band) and the edge model has a probe for its GGUF, the edge reads the prompt before the order is
known: its worker scores the reading the moment the prompt is read, and either goes on to answer
from that same prefill or stops (the cloud answers; the edge stays last, its prompt still cached).
A prompt longer than `router.reading_tokens` is read from its end alone, and read whole again if
the edge is to answer it: what a cloud-bound request pays here is bounded.
Every request an `auto` rule decided leaves a routing record (`router.routings`), what its router
knew of it, for `edgeway router fit`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from classifiers.privacy.known import Known
from classifiers.signals import Signals
from edge_runtime.reading import Probe
from policies.schema import EdgeReading
from router import tracing
from router.app_router import AppRouter, Combination, request_features
from router.decision import AutoRoute, Decision, Step, StepScorer
from router.errors import EdgewayError
from router.installed import InstalledRouters
from router.ladder import fallbacks, length_score, step_key
from router.modes import Mode, R
from router.request import ChatRequest
from router.routed import Failure, Routed
from router.routings import RoutingRecord
from router.tier import Reader, ReadFirst, Tier

log = logging.getLogger("edgeway.router")


class AutoRoutes:
    def __init__(self, models: Mapping[str, Tier], routers: InstalledRouters, readers: Mapping[str, Tier]) -> None:
        self.models = models
        self.routers = routers
        self.readers = readers  # the `role: reader` edge models, by name

    def app_router(self, app: str, edge: str, reader: str | None = None) -> AppRouter:
        """The app's router in use, for a decision whose edge target is `edge` and whose reading is
        `reader`'s (the policy's `router.reader`; None: the edge target's own)."""
        probe = self._probe(reader or edge)
        read = None if probe is None else Combination(*probe.combine)
        return self.routers.current(app, read, probe.gguf if probe is not None else None)

    def _probe(self, name: str) -> Probe | None:
        model = self._reader(name)
        return model.probe if model is not None else None

    def _reader(self, name: str) -> Reader | None:
        model = self.readers.get(name) or self.models.get(name)
        return model if isinstance(model, Reader) else None

    def order(self, decision: Decision, signals: Signals, request: ChatRequest, app: str) -> Decision:
        """An `auto` decision ordered by the app's router: the edge first below its threshold, the
        cloud first at or above it; or, where the edge should read the prompt first, the edge
        first with the order left to the reading (`_run`). Narrowing ran before: a request kept
        local, or whose latency budget put the cloud first, is decided already."""
        auto, targets = decision.auto, decision.targets
        assert auto is not None
        models = self.models
        if auto.ladder:
            return self._climb(decision, auto, signals, request, app)
        if len(targets) < 2 or models[targets[0]].tier != "edge" or models[targets[1]].tier != "cloud":
            return dataclasses.replace(decision, auto=None)
        return self._pair(decision, auto, signals, request, app)

    def _pair(self, decision: Decision, auto: AutoRoute, signals: Signals, request: ChatRequest, app: str) -> Decision:
        """The edge-cloud pair at the front of `decision.targets`, ordered by the app's router."""
        targets = decision.targets
        router = self.app_router(app, targets[0], auto.reader)
        asks = request_features(request) if router.needs_asks else None
        text = router.score(signals.complexity, None, asks)
        threshold = auto.threshold if router.threshold is None else router.threshold
        reads = self._reads(auto, text, request, router)
        scored = dataclasses.replace(
            auto, text_score=text, threshold=threshold, read_first=reads, router_version=router.version
        )
        said = f"app router v{router.version}: text score {text:.3f}"
        if reads:
            reason = f"{said}; the edge reads first (threshold {threshold:g})"
            return dataclasses.replace(decision, auto=scored, reasons=decision.reasons + (reason,))
        return _ordered(decision, scored, text, f"{said} {'>=' if text >= threshold else '<'} {threshold:g}")

    def _climb(self, decision: Decision, auto: AutoRoute, signals: Signals, request: ChatRequest, app: str) -> Decision:
        """A ladder climbed bottom up: each step scored (`_step`) against its threshold, the climb
        stopping at the first model it trusts. The models narrowing took away are skipped. Where the
        ladder begins with an edge model and a cloud one and the edge reads first, the climb above
        that cloud model is made now and the first step is left to the reading (`read_first`)."""
        ladder = tuple(t for t in auto.ladder if t in decision.targets)
        if len(ladder) < 2:
            return dataclasses.replace(decision, auto=None)
        thresholds = _step_thresholds(auto, ladder)
        first = self._step(ladder[0], ladder[1], thresholds[ladder[0]], signals, request, app, auto.reader)
        steps = [first]
        reads = first.scorer is StepScorer.APP_ROUTER and self._reads(
            auto, first.score, request, self.app_router(app, ladder[0], auto.reader)
        )
        if reads or first.climbed:
            for lower, upper in zip(ladder[1:], ladder[2:], strict=False):
                steps.append(self._step(lower, upper, thresholds[lower], signals, request, app, auto.reader))
                if not steps[-1].climbed:
                    break
        top = ladder[len(steps) if steps[-1].climbed else len(steps) - 1]
        said = ", ".join(
            f"{s.lower}->{s.upper} {s.score:.3f} {'>=' if s.climbed else '<'} {s.threshold:g}" for s in steps
        )
        if reads:  # the edge reads; the reading decides between it and where the rest of the climb stopped
            top = top if top != ladder[0] else ladder[1]
            order = (ladder[0], top) + fallbacks(ladder, top, signals, exclude=ladder[0])
            scored = dataclasses.replace(
                auto,
                ladder=ladder,
                climb=tuple(steps[1:]),
                text_score=first.score,
                threshold=first.threshold,
                read_first=True,
                router_version=first.router_version,
            )
            reason = f"ladder: {said}; {ladder[0]} reads first"
        else:
            order = (top,) + fallbacks(ladder, top, signals)
            scored = dataclasses.replace(
                auto, ladder=ladder, climb=tuple(steps), text_score=first.score, threshold=first.threshold
            )
            reason = f"ladder: {said}: {top}"
        rest = tuple(t for t in decision.targets if t not in order)
        return dataclasses.replace(
            decision,
            targets=order + rest,
            auto=scored,
            score=None if reads else steps[-1].score,
            reasons=decision.reasons + (reason,),
        )

    def _reads(self, auto: AutoRoute, text: float, request: ChatRequest, router: AppRouter) -> bool:
        """Whether the edge reads the prompt (with `router`'s probe) before the step above it is
        decided."""
        low, high = auto.band
        reads = router.read is not None and request.n == 1 and request.inputs is None
        return reads and (
            auto.edge_reading is EdgeReading.ALWAYS or (auto.edge_reading is EdgeReading.BAND and low <= text <= high)
        )

    def _step(
        self,
        lower: str,
        upper: str,
        threshold: float,
        signals: Signals,
        request: ChatRequest,
        app: str,
        reader: str | None,
    ) -> Step:
        """A step's score, `P(upper's answer is better than lower's)`: from an edge model to a
        cloud one, the app's router's; between any other pair, the prompt's length
        (`router.ladder.length_score`) as the prior, through the step's own fitted router where
        `edgeway router fit` installed one. A fitted router's threshold replaces the policy's."""
        if self.models[lower].tier == "edge" and self.models[upper].tier == "cloud":
            router, scorer, prior = self.app_router(app, lower, reader), StepScorer.APP_ROUTER, signals.complexity
        else:
            router = self.routers.current(step_key(app, lower, upper), None)
            scorer, prior = StepScorer.PROMPT_LENGTH, length_score(signals.prompt_tokens)
        asks = request_features(request) if router.needs_asks else None
        chosen = threshold if router.threshold is None else router.threshold
        return Step(lower, upper, scorer, router.score(prior, None, asks), chosen, router.version)

    async def read_first(
        self,
        mode: Mode[R],
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        app: str,
        elsewhere: Callable[[Decision], Awaitable[tuple[Tier, R, list[Failure]]]],
    ) -> Routed[R]:
        """The edge reads the prompt; the app's router scores the text and the reading together; the
        edge goes on to answer from the same prefill below the threshold, and the cloud answers at
        or above it (the edge last: a prompt it read whole stays in its cache, if the cloud fails)."""
        auto, edge = decision.auto, self.models[decision.targets[0]]
        assert auto is not None and auto.text_score is not None
        router = self.app_router(app, edge.name, auto.reader)
        reader = self._reader(auto.reader or edge.name)
        if reader is not None and reader is not edge:
            return await self._read_apart(request, signals, decision, reader, router, elsewhere)
        assert isinstance(edge, Reader)
        prior, threshold = signals.complexity, auto.threshold
        asks = request_features(request) if router.needs_asks else None

        def keep(reading: float) -> bool:  # on the edge's worker thread: it only compares numbers
            return router.score(prior, reading, asks) < threshold

        read: ReadFirst | None = None
        try:
            with tracing.attempt(edge.name, edge.tier, request, 1, **{"edgeway.read_first": True}) as span:
                read = await edge.read_first(request, keep, auto.reading_tokens)
                if read.kept:
                    score = router.score(prior, read.score, asks)
                    said = f"edge reading {read.score:.3f}: score {score:.3f} < {threshold:g}"
                    result = mode.traced(await mode.answer_read(read), span)
                    return Routed(signals, _ordered(decision, auto, score, said, read.score), edge, result)
        except EdgewayError as exc:
            log.warning(
                "rule %s: reading on %s failed (%s); the text decides",
                Known(decision.rule),
                Known(edge.name),
                exc.message,
            )
            read = None
        if read is None or read.score is None:
            ordered = _ordered(decision, auto, auto.text_score, "the edge could not read the prompt: the text decides")
        else:
            score = router.score(prior, read.score, asks)
            ordered = _ordered(
                decision, auto, score, f"edge reading {read.score:.3f}: score {score:.3f} >= {threshold:g}"
            )
            edge_last = tuple(t for t in ordered.targets if t != edge.name) + (edge.name,)
            ordered = dataclasses.replace(ordered, targets=edge_last)
        model, result, failures = await elsewhere(ordered)
        return Routed(signals, ordered, model, result, failures)

    async def _read_apart(
        self,
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        reader: Reader,
        router: AppRouter,
        elsewhere: Callable[[Decision], Awaitable[tuple[Tier, R, list[Failure]]]],
    ) -> Routed[R]:
        """A reader that does not answer (`router.reader`) reads the prompt and stops; the app's
        router orders the edge and the cloud by its reading, and the first of them answers (the
        edge from a prefill of its own)."""
        auto = decision.auto
        assert auto is not None and auto.text_score is not None
        read = await self._read(request, reader, auto)
        if read is None or read.score is None:
            ordered = _ordered(
                decision, auto, auto.text_score, f"reader {reader.name} could not read the prompt: the text decides"
            )
        else:
            asks = request_features(request) if router.needs_asks else None
            score = router.score(signals.complexity, read.score, asks)
            sign = ">=" if score >= auto.threshold else "<"
            said = f"reader {reader.name} reading {read.score:.3f}: score {score:.3f} {sign} {auto.threshold:g}"
            ordered = _ordered(decision, auto, score, said, read.score)
        model, result, failures = await elsewhere(ordered)
        return Routed(signals, ordered, model, result, failures)

    async def _read(self, request: ChatRequest, reader: Reader, auto: AutoRoute) -> ReadFirst | None:
        """`reader`'s reading of the prompt, stopped once read; None where it failed (said in the log)."""
        try:
            with tracing.step("edgeway.read", None, **{"edgeway.reader": reader.name}) as span:
                read = await reader.read_first(request, lambda _: False, auto.reading_tokens)
                if read.score is not None:
                    span.set_attribute("edgeway.reading", read.score)
                return read
        except EdgewayError as exc:
            log.warning("reader %s failed (%s); the text decides", Known(reader.name), exc.message)
            return None

    def record(self, request_id: str, app: str, routed: Routed[Any], request: ChatRequest) -> None:
        """Keep what the app's router knew of a request an `auto` rule decided, for its fit
        (`router.routings`)."""
        found = self.routing_record(request_id, app, routed.route, routed.signals, routed.decision, request)
        if found is not None:
            self.keep(found)

    def routing_record(
        self, request_id: str, app: str, route: str, signals: Signals, decision: Decision, request: ChatRequest
    ) -> RoutingRecord | None:
        """What the app's router knew of a request routed to `route`, if an `auto` rule decided it:
        made when it is routed, kept once it is answered (a parked batch line's, hours later)."""
        auto = decision.auto
        if auto is None:
            return None
        return RoutingRecord(
            request_id,
            app,
            route,
            signals.complexity,
            auto.reading,
            request_features(request),
            decision.score,
            auto.router_version,
        )

    def keep(self, record: RoutingRecord) -> None:
        """Write `record` on a worker thread, off the request's path (in place with no event loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            record.save(self.routers.documents)
            return
        loop.run_in_executor(None, record.save, self.routers.documents)

    async def dry_read(self, request: ChatRequest, app: str, signals: Signals, decision: Decision) -> Decision:
        """A dry run's reading: the edge reads the prompt and stops; the decision as the app's
        router would order it with that reading (no cloud call, no charge, no row)."""
        auto = decision.auto
        if auto is None or not auto.read_first or auto.text_score is None:
            return decision
        edge = decision.targets[0]
        reader = self._reader(auto.reader or edge)
        assert reader is not None
        who = "edge" if auto.reader in (None, edge) else f"reader {reader.name}"
        router = self.app_router(app, edge, auto.reader)
        asks = request_features(request) if router.needs_asks else None
        read = await reader.read_first(request, lambda _: False, auto.reading_tokens)
        if read.score is None:
            return _ordered(decision, auto, auto.text_score, f"{who} could not read the prompt: the text decides")
        score = router.score(signals.complexity, read.score, asks)
        return _ordered(decision, auto, score, f"{who} reading {read.score:.3f}: score {score:.3f}", read.score)


def _step_thresholds(auto: AutoRoute, ladder: tuple[str, ...]) -> dict[str, float]:
    """Each model's step threshold (the step up from it), by name; the router's where the policy
    gives none."""
    given = dict(auto.thresholds)
    return {name: given.get(name, auto.threshold) for name in ladder}


def _ordered(decision: Decision, auto: AutoRoute, score: float, why: str, reading: float | None = None) -> Decision:
    """The decision with the cloud first at or above the threshold, else the edge first."""
    edge, cloud, *rest = decision.targets
    first = (cloud, edge) if score >= auto.threshold else (edge, cloud)
    auto = dataclasses.replace(auto, reading=reading)
    return dataclasses.replace(
        decision, targets=(*first, *rest), auto=auto, score=score, reasons=decision.reasons + (why,)
    )
