"""OpenTelemetry spans of a routed request: classifying, deciding, and every model attempt.

Spans are made with the OpenTelemetry API alone. Until an SDK is configured (gateway/telemetry.py
does that when the standard OTEL_* variables ask for an exporter) each span is a no-op that still
carries an incoming trace context, so a cloud call passes the client's `traceparent` onward
either way. Attribute names follow the GenAI semantic conventions where one exists; edgeway's own
are under `edgeway.`. No span holds prompt or answer text, and privacy findings appear as their
types only.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, SpanKind, StatusCode, TraceState

from classifiers.signals import Signals
from router.answer import Answer, ChunkStream, Usage
from router.decision import Decision
from router.errors import EdgewayError
from router.request import ChatRequest

tracer = trace.get_tracer("edgeway")


def operation(request: ChatRequest) -> str:
    """The GenAI operation name of a request: chat, text_completion or embeddings."""
    if request.inputs is not None:
        return "embeddings"
    return "chat" if request.prompt is None else "text_completion"


UNKNOWN_MODEL = "(unknown model)"


def request_attributes(request: ChatRequest, model: str | None = None) -> dict[str, Any]:
    """What a span may say of the request: numbers edgeway bounds and a model it knows (`model`,
    else the request's own, which the caller has checked names one). The seed is a client's
    number of any size, and is left out: a span carries nothing a client wrote that the privacy
    scan has not read."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation(request),
        "gen_ai.request.model": request.model if model is None else model,
    }
    for name, value in (
        ("gen_ai.request.max_tokens", request.max_tokens),
        ("gen_ai.request.temperature", request.temperature),
        ("gen_ai.request.top_p", request.top_p),
    ):
        if value is not None:
            attributes[name] = value
    return attributes


def usage_attributes(usage: Usage) -> dict[str, Any]:
    return {"gen_ai.usage.input_tokens": usage.prompt_tokens, "gen_ai.usage.output_tokens": usage.completion_tokens}


def signal_attributes(signals: Signals) -> dict[str, Any]:
    return {
        "edgeway.prompt_tokens": signals.prompt_tokens,
        "edgeway.privacy.types": sorted(signals.pii_types),  # the kinds found, never their values
        "edgeway.language": signals.language,
    }


def complexity_attributes(signals: Signals) -> dict[str, Any]:
    """The complexity, if a rule read it: it is scored only then, and a trace does not pay for it."""
    complexity = signals.scored_complexity
    return {} if complexity is None else {"edgeway.complexity": complexity}


def decision_attributes(decision: Decision, signals: Signals) -> dict[str, Any]:
    return {
        "edgeway.rule": decision.rule,
        "edgeway.targets": list(decision.targets),
        "edgeway.cloud_allowed": decision.cloud_allowed,
        "edgeway.reasons": list(decision.reasons),
        **complexity_attributes(signals),
    }


def failed(span: Span, exc: BaseException) -> None:
    """Mark a span failed by its error's code only: a provider's message may quote the prompt."""
    code = exc.code if isinstance(exc, EdgewayError) else type(exc).__name__
    span.set_attribute("error.type", code)
    span.set_status(StatusCode.ERROR)


def _unsampled(parent: Context | None = None) -> Span | None:
    """The current (or `parent`'s) span, if it belongs to a request that was not sampled: its
    children would not be either (the samplers edgeway uses follow the trace), so none is made:
    a span the SDK drops still costs it about 8 us."""
    span = trace.get_current_span(parent)
    found = span.get_span_context()  # (a sampled span that has ended is not recording, but is sampled)
    return span if found.is_valid and not found.trace_flags.sampled else None


@contextmanager
def step(name: str, parent: Context | None = None, **attributes: Any) -> Iterator[Span]:
    """An internal step of the request (classifying, deciding, a shadow comparison), as the
    current span, under `parent` if given (else the current one); its failure marked."""
    unsampled = _unsampled(parent)
    if unsampled is not None:
        yield unsampled
        return
    with tracer.start_as_current_span(
        name, context=parent, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            failed(span, exc)
            raise


@contextmanager
def attempt(model_name: str, tier: str, request: ChatRequest, number: int, **extra: Any) -> Iterator[Span]:
    """One call to one model, as the current span: a retry or a fallback is another attempt. The
    caller ends the span (`ended`), when the answer or the stream is over."""
    unsampled = _unsampled()
    if unsampled is not None:
        yield unsampled  # ending it, as the caller will, does nothing
        return
    span = tracer.start_span(
        f"{operation(request)} {model_name}",
        kind=SpanKind.CLIENT,
        attributes={
            **request_attributes(request),
            "gen_ai.request.model": model_name,
            "edgeway.tier": tier,
            "edgeway.attempt": number,
            **extra,
        },
    )
    try:
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            yield span
    except BaseException as exc:
        failed(span, exc)
        span.end()
        raise


def answered(span: Span, answer: Answer) -> None:
    """End an attempt span with its answer's model and usage."""
    if span.is_recording():
        span.set_attributes(usage_attributes(answer.usage))
        model = answer.body.get("model")
        if isinstance(model, str):
            span.set_attribute("gen_ai.response.model", model)
        reasons = [c.get("finish_reason") for c in answer.body.get("choices") or [] if isinstance(c, dict)]
        if reasons and all(isinstance(r, str) for r in reasons):
            span.set_attribute("gen_ai.response.finish_reasons", reasons)
    span.end()


class TracedStream:
    """A stream whose attempt span ends when the stream does, with what it produced."""

    def __init__(self, inner: ChunkStream, span: Span) -> None:
        self._inner, self._span = inner, span
        self._ended = False

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for chunk in self._inner:
                yield chunk
        except BaseException as exc:
            failed(self._span, exc)
            self._end()
            raise
        self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self._span.set_attributes(usage_attributes(self._inner.usage))
            self._span.end()

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._end()


def current() -> Context:
    return context.get_current()


def edge_phases(
    parent: Context, queued_at: float, started_at: float | None, ended_at: float | None, tokens: int
) -> None:
    """The edge queue wait and the generation, as two child spans of the attempt (`parent`),
    from the engine's clock (time.monotonic() readings, taken on its worker thread)."""
    if not trace.get_current_span(parent).is_recording():
        return
    offset = time.time_ns() - time.monotonic_ns()  # monotonic seconds to Unix nanoseconds

    def ns(t: float) -> int:
        return int(t * 1e9) + offset

    ended = ended_at if ended_at is not None else time.monotonic()
    started = started_at if started_at is not None else ended  # never left the queue
    queue = tracer.start_span("edgeway.edge.queue", context=parent, start_time=ns(queued_at))
    queue.end(end_time=ns(started))
    if started_at is not None:
        generate = tracer.start_span(
            "edgeway.edge.generate",
            context=parent,
            start_time=ns(started),
            attributes={"gen_ai.usage.output_tokens": tokens},
        )
        generate.end(end_time=ns(ended))


# What of a trace context reaches a provider: the trace and the attempt's span ids, nothing a client
# wrote. `tracestate` and `baggage` are a client's free text (a vendor's key=value list, anything at
# all), which a local-only rule must not forward and a span must not keep.
FORWARDED_TRACE_HEADERS = frozenset({"traceparent"})


def outgoing_headers() -> dict[str, str]:
    """The trace context header (`traceparent`) of the current attempt, for the provider: empty
    when there is no trace at all."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return {k: v for k, v in carrier.items() if k in FORWARDED_TRACE_HEADERS}


def incoming_context(headers: Any) -> Context:
    """The trace a client sent (W3C `traceparent`, or OTEL_PROPAGATORS' choice): its trace and
    parent span ids and sampled flag only, its `tracestate` and `baggage` left behind."""
    parent = trace.get_current_span(propagate.extract(headers)).get_span_context()
    if not parent.is_valid:
        return Context()
    kept = SpanContext(parent.trace_id, parent.span_id, parent.is_remote, parent.trace_flags, TraceState())
    return trace.set_span_in_context(NonRecordingSpan(kept), Context())
