"""The one request flow every API runs: identify the app, read and parse the body, route it, and
answer whole or streamed in the API's own shapes (its `Dialect`), leaving one ledger row.

Every request an app makes leaves one usage row in the ledger, whether it was answered, refused
or broken off: the row is written when the answer (or the stream) ends. An API is a dialect over
this flow: how its body becomes a Chat Completions request, how a whole answer and a stream's
chunks are written back, and what its errors look like.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from opentelemetry import trace
from starlette.requests import Request
from starlette.responses import Response

from classifiers.privacy.findings import masked
from classifiers.privacy.known import Known
from classifiers.signals import Signals, message_texts
from gateway import telemetry
from gateway.http import JSON, ClientGone, EventStream, read_json, unless_client_leaves
from router.answer import Answer, ChunkStream, Usage
from router.caller import Caller
from router.cloud.validate import delta_text
from router.deferral import Deferral, Parked
from router.errors import EdgewayError, InvalidRequest, Unauthorized
from router.ledger import RowKind
from router.request import ChatRequest, parse_chat_request
from router.routed import Routed
from router.tracing import complexity_attributes, signal_attributes

log = logging.getLogger("edgeway")
METADATA_PREFIX = "x-edgeway-"
CLIENT_CLOSED = 499  # nginx's code for a client that went away before the answer ended
PROMPT_CHARS = 500  # of an opted-in app's prompt, kept in its ledger row
LINE_HEADER = "edgeway-batch-line"  # a batch line sent by the gateway to itself (gateway/batch_runner.py)
PARKED_HEADER = "x-edgeway-parked"  # on a batch line's 202: the cloud model whose batch API answers it
Parse = Callable[[Any, dict[str, str]], ChatRequest]


async def read_body(request: Request) -> tuple[Any, int]:
    """The JSON body and its size, within the server's limits."""
    server = request.app.state.gateway.config.server
    return await read_json(request, server.max_body_bytes, server.body_timeout_s, server.max_json_depth)


def chat_request(request: Request, app: Caller, body: Any, size: int, parse: Parse = parse_chat_request) -> ChatRequest:
    """A Chat Completions body (as sent, or translated from another API) as the router takes it."""
    server = request.app.state.gateway.config.server
    metadata = {k[len(METADATA_PREFIX) :]: v for k, v in request.headers.items() if k.startswith(METADATA_PREFIX)}
    chat = parse(body, metadata)
    chat.hints  # noqa: B018 (parsed here, where a bad hint is the client's 400)
    if len(chat.messages) > server.max_messages:
        raise InvalidRequest(
            f"This gateway accepts at most {server.max_messages} messages in a request; this one has "
            f"{len(chat.messages)}.",
            param="messages",
            code="too_many_messages",
        )
    chat.app, chat.body_bytes = app.name, size
    return chat


def identify(request: Request) -> Caller:
    """The calling app, from `Authorization: Bearer <key>` (or Anthropic's `x-api-key: <key>`), or
    for a batch line the batch's app (`request.state.line` then says which line of which batch)."""
    if not hasattr(request.state, "request_id"):  # (given by the access log, where it runs)
        request.state.request_id = uuid.uuid4().hex
    request.state.line = None
    gateway = request.app.state.gateway
    header = request.headers.get(LINE_HEADER)
    if header is not None:
        line = None if gateway.batches is None else gateway.batches.line_of(header)
        if line is None:
            raise Unauthorized(f"{LINE_HEADER} is for the gateway's own batch lines.")
        request.state.line = line
        app = line.app.now()
    else:
        authorization = request.headers.get("authorization")
        if authorization is None and "x-api-key" in request.headers:
            authorization = f"Bearer {request.headers['x-api-key']}"
        app = gateway.keys.identify(authorization).now()  # one version of the app's policy per request
    caller: Caller = app
    request.state.app_name = caller.name
    return caller


def routing_headers(request: Request, routed: Routed[Any]) -> dict[str, str]:
    headers = {
        "x-edgeway-route": routed.route,
        "x-edgeway-model": routed.model.name,
        "x-edgeway-rule": routed.decision.rule,
        "x-edgeway-request-id": request.state.request_id,
    }
    if routed.escalated:
        headers["x-edgeway-cascade"] = f"escalated: {routed.escalated}"
    elif routed.decision.cascade is not None:
        headers["x-edgeway-cascade"] = "edge answer kept"
    if routed.decision.redact and routed.signals.privacy and routed.route == "cloud":
        headers["x-edgeway-redacted"] = str(len(routed.signals.privacy))
    if routed.cache is not None:
        headers["x-edgeway-cache"] = routed.cache
    if routed.similarity is not None:
        headers["x-edgeway-cache-similarity"] = f"{routed.similarity:.4f}"
    if routed.decision.score is not None:
        headers["x-edgeway-score"] = f"{routed.decision.score:.4f}"
    return headers


class Visit:
    """One request as the gateway sees it: its span and metrics, around the router's account of it
    (`router.account.RequestAccount`), which reserves, prices, settles and writes its row."""

    def __init__(self, request: Request, app: Caller) -> None:
        self.gateway = request.app.state.gateway
        self.gateway.shadows.traffic()
        self.app = app
        line = request.state.line
        kind = RowKind.BATCH if line is not None else RowKind.REQUEST
        self.account = self.gateway.router.account(
            request.state.request_id,
            app.name,
            kind=kind,
            reference=app.reference,
            prompt=_prompt_for_ledger if app.log_prompts else None,
            shadows=self.gateway.shadows,
            shadow=app.shadow,
        )
        self.row = self.account.row
        self.delivered = self.account.delivered
        # a batch line may wait in its provider's batch (gateway/provider_lines.py)
        batches = self.gateway.batches
        self.deferral: Deferral | None = (
            None if line is None or batches is None else batches.deferral(line, self.account)
        )
        self._state = request.state  # where the access log finds the route and model
        self.span = telemetry.request_span(
            request.method, request.url.path, request.headers, app.name, request.state.request_id
        )
        self._late = (f"{request.method} {request.url.path}", request.headers)  # if kept unsampled
        self._traced: dict[str, Any] = {}  # the span's attributes from routing, set when it ends
        self._escalated = False

    def parsed(self, chat: ChatRequest) -> None:
        self.account.parsed(chat)
        telemetry.parsed(self.span, chat, self.gateway.router.models)

    def routed(self, routed: Routed[Answer] | Routed[ChunkStream], chat: ChatRequest) -> None:
        self.account.routed(routed, chat)
        self._state.route, self._state.model = routed.route, routed.model.name
        self._escalated = bool(routed.escalated)
        self._traced = {**signal_attributes(routed.signals), **complexity_attributes(routed.signals)}

    def first_token(self) -> None:
        self.account.first_token()

    def settled(self, usage: Usage, delivered: str | None = None) -> Usage:
        settled: Usage = self.account.settled(usage, delivered)
        return settled

    def end(self, usage: Usage | None = None, status: int = 200, error: str | None = None) -> None:
        if usage is None:
            row = self.account.abort(status, error)
        else:
            row = self.account.finish(usage, status, error, trace.set_span_in_context(self.span))
        if self.gateway.metrics is not None:
            self.gateway.metrics.observe(row, anomalous=self.account.anomaly is not None)
        telemetry.ended(self.span, row, self._traced, self.app.log_prompts, self._escalated, self._late)

    def parked(self, parked: Parked) -> None:
        """The request waits in its provider's batch: its row is written when its answer is priced
        (gateway/provider_lines.py); its span ends now."""
        self.span.set_attributes({"http.response.status_code": 202, "edgeway.parked": parked.model})
        self.span.end()


def _prompt_for_ledger(chat: ChatRequest, signals: Signals) -> str | None:
    """What the request asks, its private data masked where the scan found it, cut to PROMPT_CHARS:
    the last user message; a legacy completion's prompt; an embeddings request's texts."""
    if chat.prompt is not None:
        return _masked_at(signals, ("prompt",), chat.prompt)[:PROMPT_CHARS]
    if chat.inputs is not None:
        given = chat.body.get("input")
        paths = [("input",)] if isinstance(given, str) else [("input", i) for i in range(len(chat.inputs))]
        return "\n".join(_masked_at(signals, p, t) for p, t in zip(paths, chat.inputs, strict=True))[:PROMPT_CHARS]
    users = [i for i, m in enumerate(chat.messages) if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return None
    last = users[-1]
    texts = [
        masked(text, [f for f in signals.privacy if f.message == last and f.part == j])
        for i, j, text in message_texts(chat.messages)
        if i == last
    ]
    return " ".join(texts)[:PROMPT_CHARS]


def _masked_at(signals: Signals, path: tuple[str | int, ...], text: str) -> str:
    return masked(text, [f for f in signals.privacy if f.path == path])


@dataclass
class Served:
    """A request of any of the APIs, routed: its row in the making, the request as the router took
    it, and what answered."""

    visit: Visit
    chat: ChatRequest
    routed: Routed[Answer] | Routed[ChunkStream]
    original: dict[str, Any]  # the body as the client sent it, before its API's translation


async def serve(
    request: Request, parse: Parse = parse_chat_request, translate: Callable[[Any], Any] = lambda body: body
) -> Served | Response:
    """Identify the app, read the body (`translate`d from another API first), parse and route it."""
    app = identify(request)
    visit = Visit(request, app)

    original: dict[str, Any] = {}

    async def read() -> ChatRequest:
        body, size = await read_body(request)
        if isinstance(body, dict):
            original.update(body)
        return chat_request(request, app, translate(body), size, parse)

    ran = await run(request, app, visit, read)
    if isinstance(ran, Response):
        return ran
    return Served(visit, *ran, original)


def streamed(request: Request, served: Served, events: AsyncIterator[bytes]) -> EventStream:
    """A stream answer's response: its events, its routing headers, and its row when it ends."""
    routed = served.routed
    assert not isinstance(routed.result, Answer)
    return EventStream(
        events,
        routing_headers(request, routed),
        lambda: closed(routed, served.visit),
        request.app.state.gateway.config.server.write_timeout_s,
    )


async def run(
    request: Request, app: Caller, visit: Visit, read: Callable[[], Awaitable[ChatRequest]]
) -> tuple[ChatRequest, Routed[Answer] | Routed[ChunkStream]] | Response:
    """Read the request and route it, whole or streamed; every way it can end leaves its row (a
    whole answer's at once, a stream's when it ends). A client gone before the answer is a 499."""
    with trace.use_span(visit.span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        return await _run(request, app, visit, read)


async def _run(
    request: Request, app: Caller, visit: Visit, read: Callable[[], Awaitable[ChatRequest]]
) -> tuple[ChatRequest, Routed[Answer] | Routed[ChunkStream]] | Response:
    try:
        chat = await read()
        visit.parsed(chat)
        router = request.app.state.gateway.router
        if not chat.stream:
            caller, account = app, visit.account
            answering = (
                router.complete(chat, caller, account, visit.deferral)
                if chat.inputs is None
                else router.embed(chat, caller, account)
            )
            routed = await unless_client_leaves(request.receive, answering)
            visit.routed(routed, chat)
            visit.first_token()
            answer = routed.result
            visit.account.settle_answer(answer)
            visit.end(answer.usage)
            return chat, routed
        # the stream's answer has begun when this returns (`router.modes.primed`): a client that
        # leaves while the edge reads its prompt, or the provider thinks, stops it as a whole one would
        streamed = await unless_client_leaves(request.receive, router.stream(chat, app, visit.account))
    except Parked as parked:  # only the batch runner sends requests that may park; it reads the header
        visit.parked(parked)
        return Response(status_code=202, headers={PARKED_HEADER: parked.model})
    except EdgewayError as exc:
        visit.end(status=exc.status, error=exc.code)
        raise
    except ClientGone:
        visit.end(status=CLIENT_CLOSED, error="client_closed")
        return Response(status_code=CLIENT_CLOSED)  # nobody reads it; the row is what counts
    except Exception:
        visit.end(status=500, error="internal_error")  # the row is kept; the app renders the 500
        raise
    visit.routed(streamed, chat)
    return chat, streamed


async def closed(routed: Routed[ChunkStream], visit: Visit) -> None:
    """A stream's end however it came: a client that left before the end is recorded as 499."""
    await routed.result.aclose()
    if not visit.account.ended:  # the stream did not reach its end: the client left
        visit.end(routed.result.usage, status=CLIENT_CLOSED, error="client_closed")


async def delivered(routed: Routed[ChunkStream], visit: Visit) -> AsyncIterator[dict[str, Any]]:
    """The stream's chunks, noting the first token and what the client was given. A break ends
    the row there (what was delivered counted) and raises as an EdgewayError; after the first byte
    there is no failing over, so the caller ends the stream with its API's error event."""
    stream = routed.result
    try:
        async for chunk in stream:
            text = delta_text(chunk)
            if text:
                visit.first_token()
                visit.delivered.append(text)
            yield chunk
    except EdgewayError as exc:
        visit.end(stream.usage, status=exc.status, error=exc.code)
        raise
    except Exception:
        log.exception("stream of request %s broke", Known(visit.row.request_id))
        visit.end(stream.usage, status=500, error="internal_error")
        raise EdgewayError(
            f"Internal error in edgeway (request {visit.row.request_id}); see the gateway log."
        ) from None


class Events(Protocol):
    """One stream's events in an API's shapes: what opens it, each chunk's, an error's, the end's."""

    def start(self) -> list[bytes]: ...

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]: ...

    def error(self, exc: EdgewayError) -> bytes: ...

    def end(self, usage: Usage) -> list[bytes]: ...


class Translator(Protocol):
    """A stream's chunks as an API's named events (`(name, data)` pairs)."""

    def start(self) -> list[tuple[str, dict[str, Any]]]: ...

    def chunk(self, chunk: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]: ...

    def end(self, usage: Usage) -> list[tuple[str, dict[str, Any]]]: ...


class NamedEvents:
    """`Events` of an API whose events are named (Responses, Messages): each pair `write`n as a
    server-sent event, an error as `error` names it."""

    def __init__(
        self,
        translate: Translator,
        write: Callable[[str, dict[str, Any]], bytes],
        error: Callable[[EdgewayError], tuple[str, dict[str, Any]]],
    ) -> None:
        self._translate, self._write, self._error = translate, write, error

    def start(self) -> list[bytes]:
        return [self._write(name, data) for name, data in self._translate.start()]

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        return [self._write(name, data) for name, data in self._translate.chunk(chunk)]

    def error(self, exc: EdgewayError) -> bytes:
        return self._write(*self._error(exc))

    def end(self, usage: Usage) -> list[bytes]:
        return [self._write(name, data) for name, data in self._translate.end(usage)]


class Dialect(Protocol):
    """An API over the one flow."""

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        """Its body (translated) as the router takes it."""

    def translate(self, body: Any) -> Any:
        """Its request body as a Chat Completions body (the identity for OpenAI's)."""

    def whole(self, served: Served) -> dict[str, Any]:
        """The JSON body of a whole answer."""

    def events(self, served: Served) -> Events:
        """The events of a streamed one."""

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        """An error, as this API's clients read one."""


async def respond(request: Request, dialect: Dialect) -> Response | EventStream:
    """An API endpoint: the flow, answered in `dialect`."""
    served = await serve(request, dialect.parse, dialect.translate)
    if isinstance(served, Response):
        return served
    routed = served.routed
    if isinstance(routed.result, Answer):
        return JSON(dialect.whole(served), headers=routing_headers(request, routed))
    return streamed(request, served, _events(served, dialect.events(served)))


async def _events(served: Served, events: Events) -> AsyncIterator[bytes]:
    """A stream in its API's events: the row is written when it ends, before the closing events."""
    routed, visit = served.routed, served.visit
    assert not isinstance(routed.result, Answer)
    for frame in events.start():
        yield frame
    try:
        async for chunk in delivered(routed, visit):
            for frame in events.chunk(chunk):
                yield frame
    except EdgewayError as exc:  # the SDKs raise an error event as an APIError
        yield events.error(exc)
        return
    usage = visit.settled(routed.result.usage)
    closing = events.end(usage)
    visit.end(usage)
    for frame in closing:
        yield frame
