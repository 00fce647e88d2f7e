"""OpenTelemetry traces: the SDK, configured from the standard OTEL_* variables, and the request span.

Tracing is on when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
`OTEL_EXPORTER_OTLP_ENDPOINT`), unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
`OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` picks `http/protobuf` (the default) or `grpc`; headers,
timeouts, batching, sampling and the resource come from their own OTEL_* variables, read by the
SDK itself. The SDK is imported only then: a gateway without tracing never loads it.

Each request is one SERVER span, named like a GenAI span (`chat auto`, `embeddings gpt-4o`), the
parent of the router's spans (router/tracing.py). It holds the routing and the money, and holds
the prompt only for an app with `log_prompts: true`, masked as its ledger row is.

Sampling. Unless `OTEL_TRACES_SAMPLER` says otherwise, a trace is kept whole for `SAMPLE_RATE` of
requests (parent-based: a client's sampled trace is always followed), decided when the request
arrives, so an unsampled request costs no span work at all. Requests that end in an error (5xx or
429), that escalated from the edge to the cloud, or that took `EDGEWAY_TRACES_SLOW_MS` (2,000 by
default) or more are always kept: when one was not sampled, its request span is written when it
ends, with its start time and everything its ledger row says (the router's child spans are not).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from classifiers.privacy.known import Known
from router.ledger import UsageRow
from router.request import ChatRequest
from router.tracing import UNKNOWN_MODEL, incoming_context, request_attributes, tracer

log = logging.getLogger("edgeway")
PROTOCOLS = ("http/protobuf", "grpc")
SAMPLE_RATE = 0.1  # of traces kept whole, by default
SLOW_MS = 2000.0  # a request this slow is kept, sampled or not (EDGEWAY_TRACES_SLOW_MS)
_kept: Any = None  # the tracer that writes always-kept requests' spans (no sampler in its way)
_slow_ms = SLOW_MS


class Provider(Protocol):
    def shutdown(self) -> None: ...


def wanted(environ: Mapping[str, str]) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def protocol_of(environ: Mapping[str, str]) -> str:
    chosen = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = (chosen or "http/protobuf").strip().lower()
    if protocol not in PROTOCOLS:
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: edgeway exports traces over {' or '.join(PROTOCOLS)}"
        )
    return protocol


def start(environ: Mapping[str, str]) -> Provider | None:
    """Install the SDK's tracer provider with a batching OTLP exporter, if the environment asks
    for one; the provider (to shut down, which flushes) or None."""
    if not wanted(environ):
        return None
    protocol = protocol_of(environ)
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    exporter: SpanExporter
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        exporter = GrpcExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        exporter = HttpExporter()
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased

    global _kept, _slow_ms
    defaults = {} if environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: "edgeway"}
    resource = Resource.create(defaults)
    # the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself when it is set; else edgeway's default
    sampler = None if environ.get("OTEL_TRACES_SAMPLER") else ParentBased(TraceIdRatioBased(SAMPLE_RATE))
    processor = BatchSpanProcessor(exporter)
    provider = TracerProvider(resource=resource, sampler=sampler)
    provider.add_span_processor(processor)
    kept = TracerProvider(resource=resource, sampler=ALWAYS_ON)
    kept.add_span_processor(processor)  # the same batches, the same exporter
    _kept = kept.get_tracer("edgeway.kept")
    _slow_ms = float(environ.get("EDGEWAY_TRACES_SLOW_MS", SLOW_MS))
    trace.set_tracer_provider(provider)
    log.info("tracing: OTLP over %s, sampler %s", Known(protocol), Known(environ.get("OTEL_TRACES_SAMPLER") or sampler))
    return provider


def request_span(method: str, path: str, headers: Mapping[str, str], app: str, request_id: str) -> Span:
    """The request's span, a child of the client's trace context if it sent one."""
    return tracer.start_span(
        f"{method} {path}",
        context=incoming_context(headers),
        kind=SpanKind.SERVER,
        attributes={
            "http.request.method": method,
            "url.path": path,
            "edgeway.app": app,
            "edgeway.request_id": request_id,
        },
    )


def parsed(span: Span, chat: ChatRequest, known: Collection[str]) -> None:
    """The span named for the operation and the model asked for: `auto` or one of the gateway's
    models (`known`), else a placeholder (a client's `model` may be any string, an email address
    included)."""
    if span.is_recording():
        model = chat.model if chat.model == "auto" or chat.model in known else UNKNOWN_MODEL
        attributes = request_attributes(chat, model)
        span.update_name(f"{attributes['gen_ai.operation.name']} {model}")
        span.set_attributes(attributes)


def kept_anyway(row: UsageRow, escalated: bool) -> bool:
    """Whether a request is traced whether or not it was sampled: an error, an escalation, or slow."""
    return row.status >= 500 or row.status == 429 or escalated or row.latency_ms >= _slow_ms


def ended(
    span: Span,
    row: UsageRow,
    attributes: dict[str, Any],
    log_prompts: bool,
    escalated: bool = False,
    late: tuple[str, Mapping[str, str]] | None = None,
) -> None:
    """End the request's span with what its ledger row says; an unsampled request that must be
    kept anyway (`kept_anyway`) gets its span written now, from its start (`row.ts`), named and
    parented as its request span would have been (`late`: the span's name and the headers)."""
    if not span.is_recording() and _kept is not None and kept_anyway(row, escalated):
        name, headers = late or ("request", {})
        span = _kept.start_span(
            name, context=incoming_context(headers), kind=SpanKind.SERVER, start_time=int(row.ts * 1e9)
        )
        span.set_attributes({"edgeway.app": row.app, "edgeway.request_id": row.request_id, "edgeway.sampled": False})
    if span.is_recording():
        span.set_attributes(
            {
                **attributes,
                "http.response.status_code": row.status,
                "edgeway.route": row.route,
                "edgeway.rule": row.rule,
                "edgeway.stream": row.stream,
                "edgeway.cost_usd": row.cost_usd,
                # (none for an app with no cloud: an attribute left out, not a zero)
                **({} if row.counterfactual_usd is None else {"edgeway.counterfactual_usd": row.counterfactual_usd}),
                "gen_ai.usage.input_tokens": row.prompt_tokens,
                "gen_ai.usage.output_tokens": row.completion_tokens,
            }
        )
        if row.model:
            span.set_attribute("gen_ai.response.model", row.model)
        if row.cache is not None:
            span.set_attribute("edgeway.cache", row.cache)
        if row.error is not None:
            span.set_attribute("error.type", row.error)
        if row.status >= 500:
            span.set_status(StatusCode.ERROR)
        if log_prompts and row.prompt is not None:
            span.set_attribute("edgeway.prompt", row.prompt)  # masked, as in the ledger
    span.end()
