"""HTTP plumbing: bounded JSON bodies, OpenAI-shaped error responses, server-sent events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from router.errors import BodyTooLarge, EdgewayError, InvalidRequest, RequestTimeout


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def error_response(exc: EdgewayError, headers: dict[str, str] | None = None) -> JSON:
    return JSON(exc.body(), status_code=exc.status, headers={**exc.headers(), **(headers or {})})


def too_deep(value: Any, limit: int) -> str | None:
    """The path where `value` nests deeper than `limit` objects and arrays, or None.

    Bounded here, at the door: deeper bodies cost recursion in every layer that reads or
    re-encodes them (orjson itself refuses to encode past 254 levels)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            return path or "(body)"
        if isinstance(node, dict):
            stack += [
                (v, depth + 1, f"{path}.{k}" if path else str(k))
                for k, v in node.items()
                if isinstance(v, (dict, list))
            ]
        elif isinstance(node, list):
            stack += [(v, depth + 1, f"{path}[{i}]") for i, v in enumerate(node) if isinstance(v, (dict, list))]
    return None


async def read_bytes(request: Request, limit: int, timeout_s: float = 30.0) -> bytes:
    """The request body; refusing more than `limit` bytes before reading them all, and a body that
    takes longer than `timeout_s` to arrive (a slow-loris client holds nothing for long)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"The request body is {int(declared)} bytes; this gateway accepts at most {limit}.")
    body = bytearray()
    try:
        with anyio.fail_after(timeout_s):
            async for part in request.stream():
                body += part
                if len(body) > limit:
                    raise BodyTooLarge(f"The request body is over {limit} bytes, the most this gateway accepts.")
    except TimeoutError:
        raise RequestTimeout(f"The request body did not arrive within {timeout_s:g} s.") from None
    except ClientDisconnect:
        raise InvalidRequest("The client closed the connection before sending the whole body.") from None
    return bytes(body)


async def read_json(request: Request, limit: int, timeout_s: float = 30.0, max_depth: int = 64) -> tuple[Any, int]:
    """The request body as JSON, and its size in bytes, within `read_bytes`' limits and `max_depth`."""
    body = await read_bytes(request, limit, timeout_s)
    if not body:
        raise InvalidRequest("The request body is empty; send a JSON object.")
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc).lower():  # orjson stops at 1,024
            raise InvalidRequest(
                f"The request body nests deeper than {max_depth} levels.", param="(body)", code="too_deep"
            ) from None
        raise InvalidRequest(f"The request body is not valid JSON ({exc}).", code="invalid_json") from None
    # Only a body with more brackets than the limit can nest past it: most are never walked.
    if body.count(b"{") + body.count(b"[") > max_depth:
        where = too_deep(parsed, max_depth)
        if where is not None:
            raise InvalidRequest(
                f"The request body nests deeper than {max_depth} levels (at {where[:200]}).",
                param=where[:200],
                code="too_deep",
            )
    return parsed, len(body)


class EventStream:
    """A text/event-stream answer that notices a client going away, even while it waits.

    `events` yields complete SSE frames; `on_close` runs exactly once however the stream ends,
    which is where a generation that nobody reads any more is stopped.
    """

    def __init__(
        self,
        events: AsyncIterator[bytes],
        headers: dict[str, str],
        on_close: Callable[[], Awaitable[None]],
        write_timeout_s: float = 60.0,
    ) -> None:
        self.events = events
        self.headers = headers
        self.on_close = on_close
        self.write_timeout_s = write_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                # A client that stops reading fills the socket; it may not hold us forever. One timer
                # for the whole stream watches the write in progress: a deadline moved before each
                # write cost a timer per frame (0.1 ms a short stream).
                with _StalledWrite(self.write_timeout_s, group.cancel_scope) as writing:
                    async for frame in self.events:
                        writing.since = writing.now()
                        await send({"type": "http.response.body", "body": frame, "more_body": True})
                        writing.since = None
                if not writing.fired:  # else: timed out writing, the client is dropped
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                group.cancel_scope.cancel()
        except OSError:
            pass  # the client went away while we were writing
        finally:
            with anyio.CancelScope(shield=True):
                await self.on_close()


class _StalledWrite:
    """Cancels `scope` when one write has waited `timeout_s`; checked a few times a timeout."""

    def __init__(self, timeout_s: float, scope: anyio.CancelScope) -> None:
        self.timeout_s = timeout_s
        self.scope = scope
        self.since: float | None = None
        self.fired = False
        self._loop = asyncio.get_running_loop()
        self.now = self._loop.time
        self._handle: asyncio.TimerHandle | None = None

    def __enter__(self) -> _StalledWrite:
        self._handle = self._loop.call_later(self.timeout_s / 4, self._check)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _check(self) -> None:
        if self.since is not None and self.now() - self.since >= self.timeout_s:
            self.fired = True
            self.scope.cancel()
            return
        self._handle = self._loop.call_later(self.timeout_s / 4, self._check)


async def _disconnected(receive: Receive) -> None:
    """Return when the client has closed its connection."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    await _disconnected(receive)
    scope.cancel()


T = TypeVar("T")


class ClientGone(Exception):
    """The client closed its connection before its answer was ready."""


async def unless_client_leaves(receive: Receive, work: Awaitable[T]) -> T:
    """Await `work`, cancelling it if the client disconnects first (then raise ClientGone): an
    answer nobody will read should not keep an edge sequence busy or a provider billing."""
    task = asyncio.current_task()
    assert task is not None  # called from a request's task
    gone = False

    async def watch() -> None:
        nonlocal gone
        await _disconnected(receive)
        gone = True
        task.cancel()

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if not gone:
            raise
        task.uncancel()
        raise ClientGone() from None
    finally:
        watcher.cancel()


def sse(payload: Any) -> bytes:
    return b"data: " + dumps(payload) + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
