"""A real OTLP trace receiver on loopback, over HTTP or gRPC, decoding what it gets with the
OpenTelemetry proto package: what a collector would see of edgeway's spans."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from gateway.bench.ports import free_port


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    status: int
    start_ns: int
    end_ns: int
    service: str
    trace_state: str = ""

    def text(self) -> str:
        """Everything the span says, as one string: for checking what it must not say."""
        return repr((self.name, self.attributes, self.trace_state))


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


@dataclass
class SpanSink:
    """Spans as they arrive, whichever way they came."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        received = []
        for resource_spans in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            attributes={kv.key: _value(kv.value) for kv in span.attributes},
                            status=span.status.code,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            service=str(resource.get("service.name", "")),
                            trace_state=span.trace_state,
                        )
                    )
        with self.lock:
            self.spans.extend(received)

    def wait_for(self, found: Callable[[list[ReceivedSpan]], bool], timeout: float = 15) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                spans = list(self.spans)
            if found(spans):
                return spans
            time.sleep(0.05)
        raise AssertionError(f"the spans expected did not arrive in {timeout} s; got {[s.name for s in spans]}")

    def settled(self, quiet: float = 0.5, timeout: float = 15) -> list[ReceivedSpan]:
        """Every span, once some have arrived and no more came for `quiet` seconds (the exporter
        sends in batches, later on a slow machine)."""
        count, deadline = len(self.wait_for(bool, timeout)), time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(quiet)
            with self.lock:
                if len(self.spans) == count:
                    return list(self.spans)
                count = len(self.spans)
        raise AssertionError(f"spans kept arriving for {timeout} s")

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


class HttpReceiver:
    """POST /v1/traces, protobuf (gzipped or not), as the OTLP/HTTP exporter sends it."""

    def __init__(self) -> None:
        self.sink = SpanSink()
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        sink = self.sink

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                sink.take(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HttpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class GrpcReceiver:
    """The OTLP TraceService over gRPC."""

    def __init__(self) -> None:
        self.sink = SpanSink()
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        sink = self.sink

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (the generated API)
                sink.take(request)
                return trace_service_pb2.ExportTraceServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._server)
        self._server.add_insecure_port(f"127.0.0.1:{self.port}")

    def __enter__(self) -> GrpcReceiver:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
