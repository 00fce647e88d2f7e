"""The one request flow every API runs: identify the app, read and parse the body, route it, and
answer whole or streamed in the API's own shapes (its `Dialect`), leaving one ledger row.

Every request an app makes leaves one usage row in the ledger, whether it was answered, refused
or broken off: the row is written when the answer (or the stream) ends. An API is a dialect over
this flow: how its body becomes a Chat Completions request, how a whole answer and a stream's
chunks are written back, and what its errors look like. An HTTP request comes in through
`respond`; a batch line, in process, through `answer_whole`.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from opentelemetry import trace
from starlette.datastructures import State
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive

from classifiers.privacy.known import Known
from classifiers.signals import Signals, message_texts
from gateway import telemetry
from gateway.asked import named_event
from gateway.http import JSON, ClientGone, EventStream, read_json, unless_client_leaves
from gateway.running import Gateway, gateway_of
from policies.needs import Need
from router.account import RequestAccount
from router.answer import Answer, ChunkStream, Usage
from router.caller import Caller
from router.cloud.validate import delta_text
from router.deferral import Deferral, Parked
from router.errors import EdgewayError, InvalidRequest
from router.ledger import RowKind
from router.native import FORWARDED_HEADERS, Api, Codec, Native, NativeChunk
from router.redaction import Redaction
from router.request import ChatRequest, parse_chat_request
from router.routed import Routed
from router.tracing import complexity_attributes, signal_attributes

log = logging.getLogger("edgeway")
METADATA_PREFIX = "x-edgeway-"
CLIENT_CLOSED = 499  # nginx's code for a client that went away before the answer ended
PROMPT_CHARS = 500  # of an opted-in app's prompt, kept in its ledger row
Parse = Callable[[Any, dict[str, str]], ChatRequest]
T = TypeVar("T")


@dataclass(frozen=True)
class Exchange:
    """One request as the flow reads it: an HTTP request to an API (`Exchange.of`), or a line of a
    batch, which the batch runner (gateway/batch_runner.py) hands the flow in process."""

    gateway: Gateway
    request_id: str
    method: str
    path: str
    headers: Mapping[str, str]
    state: State  # where the access log finds the request's app, route and model
    receive: Receive | None = None  # where a client that leaves is seen; a batch line's never does
    kind: RowKind = RowKind.REQUEST
    # what may park the request in its provider's batch (a batch line may wait in one)
    deferral: Callable[[RequestAccount], Deferral | None] = lambda account: None

    @classmethod
    def of(cls, request: Request) -> Exchange:
        """An HTTP request, once `identify` has named its app."""
        return cls(
            gateway_of(request),
            request.state.request_id,
            request.method,
            request.url.path,
            request.headers,
            request.state,
            request.receive,
        )


async def read_body(request: Request) -> tuple[Any, int]:
    """The JSON body and its size, within the server's limits."""
    server = gateway_of(request).config.server
    return await read_json(request, server.max_body_bytes, server.body_timeout_s, server.max_json_depth)


def chat_request(
    exchange: Exchange, app: Caller, body: Any, size: int, parse: Parse = parse_chat_request
) -> ChatRequest:
    """A Chat Completions body (as sent, or translated from another API) as the router takes it."""
    server = exchange.gateway.config.server
    metadata = {k[len(METADATA_PREFIX) :]: v for k, v in exchange.headers.items() if k.startswith(METADATA_PREFIX)}
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


_HEADER_VALUE = re.compile(r"[\x20-\x7e]{1,1024}")  # printable ASCII: nothing that could end a header line


def provider_headers(api: Api, headers: Mapping[str, str]) -> dict[str, str]:
    """The headers a provider of `api` reads, as the client sent them (`FORWARDED_HEADERS`)."""
    return {
        name: headers[name]
        for name in FORWARDED_HEADERS[api]
        if name in headers and _HEADER_VALUE.fullmatch(headers[name])
    }


def identify(request: Request) -> Caller:
    """The calling app, from `Authorization: Bearer <key>` (or Anthropic's `x-api-key: <key>`)."""
    if not hasattr(request.state, "request_id"):  # (given by the access log, where it runs)
        request.state.request_id = uuid.uuid4().hex
    authorization = request.headers.get("authorization")
    if authorization is None and "x-api-key" in request.headers:
        authorization = f"Bearer {request.headers['x-api-key']}"
    caller: Caller = gateway_of(request).keys.identify(authorization).now()  # one policy version a request
    request.state.app_name = caller.name
    return caller


def routing_headers(request_id: str, routed: Routed[Any]) -> dict[str, str]:
    headers = {
        "x-edgeway-route": routed.route,
        "x-edgeway-model": routed.model.name,
        "x-edgeway-rule": routed.decision.rule,
        "x-edgeway-request-id": request_id,
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
    if routed.requested is not None:  # the request named a model its policy sent elsewhere
        headers["x-edgeway-requested-model"] = routed.requested
    if routed.fallback is not None:  # a fallback answered: which model failed first, and why
        headers["x-edgeway-fallback"] = routed.fallback
    session = routed.decision.session
    if session is not None and session.kept:
        headers["x-edgeway-session-model"] = session.served_by or ""
    return headers


class Visit:
    """One request as the gateway sees it: its span and metrics, around the router's account of it
    (`router.account.RequestAccount`), which reserves, prices, settles and writes its row."""

    def __init__(self, exchange: Exchange, app: Caller) -> None:
        self.gateway = gateway = exchange.gateway
        gateway.shadows.traffic()
        self.app = app
        self.account = gateway.router.account(
            exchange.request_id,
            app.name,
            kind=exchange.kind,
            reference=app.reference,
            prompt=_prompt_for_ledger if app.log_prompts else None,
            shadows=gateway.shadows,
            shadow=app.shadow,
        )
        self.deferral = exchange.deferral(self.account)
        self._state = exchange.state
        self.span = telemetry.request_span(
            exchange.method, exchange.path, exchange.headers, app.name, exchange.request_id
        )
        self._late = (f"{exchange.method} {exchange.path}", exchange.headers)  # if kept unsampled
        self._traced: dict[str, Any] = {}  # the span's attributes from routing, set when it ends
        self._escalated = False

    def parsed(self, chat: ChatRequest) -> None:
        self.account.parsed(chat)
        telemetry.parsed(self.span, chat, self.gateway.router.models)

    def routed(self, routed: Routed[Answer] | Routed[ChunkStream], chat: ChatRequest) -> None:
        self.account.routed(routed, chat)
        self._state.route, self._state.model, self._state.rule = routed.route, routed.model.name, routed.decision.rule
        self._state.fallback = routed.fallback  # (the access log's line says it too)
        self._escalated = bool(routed.escalated)
        self._traced = {**signal_attributes(routed.signals), **complexity_attributes(routed.signals)}

    def refused(self, exc: EdgewayError) -> None:
        """The request ended in `exc`: its row says so, and the rule that refused it where one did
        (the model too, where a model's call ended in it: `RequestAccount.refused_by`)."""
        row = self.account.row
        if exc.rule is not None:
            row.rule = exc.rule
        if row.model:
            self._state.route, self._state.model = row.route, row.model
        if row.rule:
            self._state.rule = row.rule
        self.end(status=exc.status, error=exc.code)

    def end(self, usage: Usage | None = None, status: int = 200, error: str | None = None) -> None:
        if usage is None:
            row = self.account.abort(status, error)
        else:
            row = self.account.finish(usage, status, error, trace.set_span_in_context(self.span))
        self.gateway.metrics.observe(row, anomalous=self.account.anomaly is not None)
        telemetry.ended(self.span, row, self._traced, self.app.log_prompts, self._escalated, self._late)

    def parked(self, parked: Parked) -> None:
        """The request waits in its provider's batch: its row is written when its answer is priced
        (gateway/provider_lines.py); its span ends now."""
        self.span.set_attributes({"http.response.status_code": 202, "edgeway.parked": parked.model})
        self.span.end()


def _prompt_for_ledger(chat: ChatRequest, signals: Signals) -> str | None:
    """What the request asks, with every value the scan found anywhere in it masked wherever it
    stands (`Redaction`: the whole request's findings, not one message's), cut to PROMPT_CHARS:
    the last user message; a legacy completion's prompt; an embeddings request's texts."""
    findings = signals.kept_masked
    masked = Redaction(chat, findings).request if findings else chat
    if masked.prompt is not None:
        kept = masked.prompt
    elif masked.inputs is not None:
        kept = "\n".join(masked.inputs)
    else:
        users = [m for m in masked.messages if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            return None
        kept = " ".join(text for _, _, text in message_texts([users[-1]]))
    return _NUMBERED.sub(r"[\1]", kept)[:PROMPT_CHARS]  # a value as its type: `[EMAIL]`


_NUMBERED = re.compile(r"\[([A-Z][A-Z_]*)_\d+\]")  # a placeholder the masking numbered (`[EMAIL_1]`)


@dataclass
class Served:
    """A request of any of the APIs, routed: its row in the making, the request as the router took
    it, and what answered."""

    visit: Visit
    chat: ChatRequest
    routed: Routed[Answer] | Routed[ChunkStream]
    original: dict[str, Any]  # the body as the client sent it, before its API's translation


@dataclass(frozen=True)
class Unanswered:
    """A request the flow ended with no answer to write: its client left (499; its row is what
    counts), or, a batch line, it waits in its provider's batch (202; `parked` names the model)."""

    status: int
    parked: str | None = None


async def serve(
    exchange: Exchange, app: Caller, read: Callable[[], Awaitable[tuple[Any, int]]], dialect: WholeDialect
) -> Served | Unanswered:
    """Read the body (`translate`d from another API first, and kept as sent beside its
    translation), parse and route it for `app`."""
    visit = Visit(exchange, app)
    original: dict[str, Any] = {}

    async def parsed() -> ChatRequest:
        body, size = await read()
        if isinstance(body, dict):
            original.update(body)
        chat = chat_request(exchange, app, dialect.translate(body), size, dialect.parse)
        codec = dialect.codec
        if codec is not None and isinstance(body, dict):
            chat.native = Native(codec, body, provider_headers(codec.api, exchange.headers))
            if chat.native_only is not None:
                chat.needs |= {Need.OWN_API}
        return chat

    ran = await run(exchange, visit, parsed)
    if isinstance(ran, Unanswered):
        return ran
    return Served(visit, *ran, original)


def streamed(request: Request, served: Served, events: AsyncIterator[bytes]) -> EventStream:
    """A stream answer's response: its events, its routing headers, and its row when it ends."""
    routed = served.routed
    assert not isinstance(routed.result, Answer)
    return EventStream(
        events,
        routing_headers(request.state.request_id, routed),
        lambda: closed(routed, served.visit),
        gateway_of(request).config.server.write_timeout_s,
    )


async def run(
    exchange: Exchange, visit: Visit, read: Callable[[], Awaitable[ChatRequest]]
) -> tuple[ChatRequest, Routed[Answer] | Routed[ChunkStream]] | Unanswered:
    """Read the request and route it, whole or streamed; every way it can end leaves its row (a
    whole answer's at once, a stream's when it ends). A client gone before the answer is a 499."""
    with trace.use_span(visit.span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        return await _run(exchange, visit, read)


async def _run(
    exchange: Exchange, visit: Visit, read: Callable[[], Awaitable[ChatRequest]]
) -> tuple[ChatRequest, Routed[Answer] | Routed[ChunkStream]] | Unanswered:
    router, app, account = exchange.gateway.router, visit.app, visit.account
    try:
        chat = await read()
        visit.parsed(chat)
        if not chat.stream:
            answering = (
                router.complete(chat, app, account, visit.deferral)
                if chat.inputs is None
                else router.embed(chat, app, account)
            )
            routed = await _unless_client_leaves(exchange, answering)
            visit.routed(routed, chat)
            account.first_token()
            answer = routed.result
            account.settle_answer(answer)
            visit.end(answer.usage)
            return chat, routed
        # the stream's answer has begun when this returns (`router.modes.primed`): a client that
        # leaves while the edge reads its prompt, or the provider thinks, stops it as a whole one would
        streamed = await _unless_client_leaves(exchange, router.stream(chat, app, account))
    except Parked as parked:  # only a batch line's deferral parks a request
        visit.parked(parked)
        return Unanswered(202, parked.model)
    except EdgewayError as exc:
        visit.refused(exc)
        raise
    except ClientGone:
        visit.end(status=CLIENT_CLOSED, error="client_closed")
        return Unanswered(CLIENT_CLOSED)
    except Exception:
        visit.end(status=500, error="internal_error")  # the row is kept; the 500 is its caller's
        raise
    visit.routed(streamed, chat)
    return chat, streamed


def _unless_client_leaves(exchange: Exchange, work: Awaitable[T]) -> Awaitable[T]:
    return work if exchange.receive is None else unless_client_leaves(exchange.receive, work)


async def closed(routed: Routed[ChunkStream], visit: Visit) -> None:
    """A stream's end however it came: a client that left before the end is recorded as 499."""
    await routed.result.aclose()
    if not visit.account.ended:  # the stream did not reach its end: the client left
        visit.end(routed.result.usage, status=CLIENT_CLOSED, error="client_closed")


async def delivered(routed: Routed[ChunkStream], visit: Visit) -> AsyncIterator[dict[str, Any]]:
    """The stream's chunks, noting when the first came (the answer has begun by then:
    `router.modes.primed`; a turn whose answer is only a tool call has no text to wait for) and
    what the client was given. A break ends the row there (what was delivered counted) and raises
    as an EdgewayError; after the first byte there is no failing over, so the caller ends the
    stream with its API's error event."""
    stream = routed.result
    try:
        async for chunk in stream:
            visit.account.first_token()
            text = delta_text(chunk)
            if text:
                visit.account.delivered.append(text)
            yield chunk
    except EdgewayError as exc:
        visit.end(stream.usage, status=exc.status, error=exc.code)
        raise
    except Exception:
        log.exception("stream of request %s broke", Known(visit.account.row.request_id))
        visit.end(stream.usage, status=500, error="internal_error")
        raise internal_error(visit.account.row.request_id) from None


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


class NativeOrTranslated:
    """A stream's events in `api`'s shapes: the events its provider wrote, where it spoke `api`
    (`router.native.NativeChunk`: they open and close the stream themselves), naming the model
    the client asked for (`asked`: `gateway.asked`), else `translate`'s of the chat chunks. Which,
    the first chunk tells (a primed stream has it in hand already)."""

    def __init__(self, api: Api, translate: Translator, asked: str) -> None:
        self._api, self._translate, self._asked = api, translate, asked
        self._native: bool | None = None  # None until the first chunk

    @property
    def native(self) -> bool:
        return bool(self._native)

    def start(self) -> list[tuple[str, dict[str, Any]]]:
        return []

    def chunk(self, chunk: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        opening: list[tuple[str, dict[str, Any]]] = []
        if self._native is None:
            self._native = isinstance(chunk, NativeChunk) and chunk.api is self._api
            opening = [] if self._native else self._translate.start()
        if self._native:
            events = chunk.events if isinstance(chunk, NativeChunk) else []
            return [named_event(self._api, e, self._asked) for e in events]
        return opening + self._translate.chunk(chunk)

    def end(self, usage: Usage) -> list[tuple[str, dict[str, Any]]]:
        if self._native:
            return []
        opening = self._translate.start() if self._native is None else []
        return opening + self._translate.end(usage)


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


class WholeDialect(Protocol):
    """An API over the one flow, answered whole."""

    @property
    def codec(self) -> Codec | None:
        """Its requests' reading as Chat Completions, where it is another API (the body as sent is
        then kept beside its translation, for a provider of its API: `router.native.Native`)."""

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        """Its body (translated) as the router takes it."""

    def translate(self, body: Any) -> Any:
        """Its request body as a Chat Completions body (the identity for OpenAI's)."""

    def whole(self, served: Served) -> dict[str, Any]:
        """The JSON body of a whole answer."""

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        """An error, as this API's clients read one."""


class Dialect(WholeDialect, Protocol):
    """An API over the one flow, answered whole or streamed."""

    def events(self, served: Served) -> Events:
        """The events of a streamed answer."""


async def respond(request: Request, dialect: Dialect) -> Response | EventStream:
    """An API endpoint: the flow, answered in `dialect`."""
    served = await _served(request, dialect)
    if isinstance(served, Unanswered):
        return Response(status_code=served.status)
    routed = served.routed
    if isinstance(routed.result, Answer):
        return JSON(dialect.whole(served), headers=routing_headers(request.state.request_id, routed))
    return streamed(request, served, _events(served, dialect.events(served)))


async def respond_whole(request: Request, dialect: WholeDialect) -> Response:
    """An endpoint whose API never streams (embeddings): the flow, answered in `dialect`."""
    served = await _served(request, dialect)
    if isinstance(served, Unanswered):
        return Response(status_code=served.status)
    return JSON(dialect.whole(served), headers=routing_headers(request.state.request_id, served.routed))


async def _served(request: Request, dialect: WholeDialect) -> Served | Unanswered:
    app = identify(request)
    return await serve(Exchange.of(request), app, lambda: read_body(request), dialect)


@dataclass(frozen=True)
class Whole:
    """A request's whole answer in process, as its API writes it: a batch line's result."""

    status: int
    body: dict[str, Any] | None  # None where it waits in its provider's batch (202)
    headers: Mapping[str, str]
    parked: str | None = None  # the cloud model whose batch API answers it


async def answer_whole(exchange: Exchange, app: Caller, body: Any, size: int, dialect: WholeDialect) -> Whole:
    """`body`, sent by `app`, through the flow in process and answered whole in `dialect`: an
    error is its API's error body and status, as an HTTP client would have read it."""

    async def read() -> tuple[Any, int]:
        return body, size

    try:
        served = await serve(exchange, app, read, dialect)
    except EdgewayError as exc:
        return Whole(
            exc.status, dialect.error_body(exc), {**exc.headers(), "x-edgeway-request-id": exchange.request_id}
        )
    except Exception:
        log.exception("unexpected error in request %s", Known(exchange.request_id))
        error = internal_error(exchange.request_id)
        return Whole(error.status, dialect.error_body(error), {"x-edgeway-request-id": exchange.request_id})
    if isinstance(served, Unanswered):
        return Whole(served.status, None, {"x-edgeway-request-id": exchange.request_id}, served.parked)
    return Whole(200, dialect.whole(served), routing_headers(exchange.request_id, served.routed))


def internal_error(request_id: str) -> EdgewayError:
    """What a request that failed in a way edgeway did not foresee is told (the log has the rest)."""
    return EdgewayError(f"Internal error in edgeway (request {request_id}); see the gateway log.")


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
    usage = visit.account.settled(routed.result.usage)
    closing = events.end(usage)
    visit.end(usage)
    for frame in closing:
        yield frame
