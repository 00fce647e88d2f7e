"""One provider endpoint that a request goes to in the client's own API: a JSON body posted over
the gateway's pooled connections, and its answer read whole or as named server-sent events (the
Messages and Responses streams), failures as the client hears them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from router.cloud.base import status_error
from router.cloud.http1 import Client, HTTPError, Response, Timeouts
from router.errors import EdgewayError, UpstreamError, UpstreamTimeout

JSON_HEADERS = b"content-type: application/json\r\naccept: application/json, text/event-stream\r\n"


class Endpoint:
    def __init__(self, name: str, client: Client, url: str, headers: bytes, timeouts: Timeouts) -> None:
        self.name = name  # the configured model's, for the errors' messages
        self._origin, self._target = client.origin(url)
        self._headers = JSON_HEADERS + headers  # ready "name: value\r\n" lines
        self._timeouts = timeouts
        # a stream may take longer than the whole answer's limit; only silence ends it
        self._stream_timeouts = Timeouts(timeouts.connect, timeouts.read, None)

    async def post(self, body: bytes, headers: bytes = b"") -> Any:
        """The JSON the provider answers to `body`, or the error its answer is."""
        try:
            response = await self._origin.request("POST", self._target, self._headers + headers, body, self._timeouts)
            content = await response.read()
        except (HTTPError, TimeoutError) as exc:
            raise self.transport_error(exc) from None
        if response.status >= 400:
            raise status_error(self.name, response.status, error_message(content))
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            raise UpstreamError(f"{self.name}: the provider answered with a body that is not JSON") from None

    async def open_stream(self, body: bytes, headers: bytes = b"") -> Response:
        """The provider's event stream for `body`, once it has answered 200 with one."""
        try:
            response = await self._origin.request(
                "POST", self._target, self._headers + headers, body, self._stream_timeouts
            )
            if response.status >= 400:
                raise status_error(self.name, response.status, error_message(await response.read()))
        except (HTTPError, TimeoutError) as exc:
            raise self.transport_error(exc) from None
        return event_stream(self.name, response)

    async def events(self, response: Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """The stream's events, each its name (its `event:` line, else its data's `type`) and its
        data; a break, a silence past the read timeout or an event that is not JSON is an
        UpstreamError."""
        name, data = "", b""
        try:
            async for line in response.lines():
                line = line.rstrip(b"\r\n")
                if line.startswith(b"event:"):
                    name = line[6:].strip().decode("utf-8", "replace")
                elif line.startswith(b"data:"):
                    data += line[5:].strip()
                elif not line and data:
                    yield self._event(name, data)
                    name, data = "", b""
            if data:
                yield self._event(name, data)
        except (HTTPError, TimeoutError) as exc:
            raise self.transport_error(exc) from None
        finally:
            response.release()

    def _event(self, name: str, data: bytes) -> tuple[str, dict[str, Any]]:
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise UpstreamError(f"{self.name}: the provider sent an event that is not JSON") from None
        if not isinstance(parsed, dict):
            raise UpstreamError(f"{self.name}: the provider sent an event that is not a JSON object")
        kind = parsed.get("type")
        return name or (kind if isinstance(kind, str) else ""), parsed

    def transport_error(self, exc: BaseException) -> EdgewayError:
        return transport_error(self.name, exc)


def transport_error(name: str, exc: BaseException) -> UpstreamError:
    """A provider that could not be reached, or did not answer in time, as the client hears it."""
    if isinstance(exc, TimeoutError):
        return UpstreamTimeout(f"{name}: the provider did not answer in time")
    return UpstreamError(f"{name}: could not reach the provider ({exc})")


def event_stream(name: str, response: Response) -> Response:
    """`response`, where it is the event stream a stream request asks for; else an UpstreamError."""
    kind = response.headers.get(b"content-type", b"").decode("latin-1")
    if not kind.startswith("text/event-stream"):
        response.release()
        raise UpstreamError(
            f"{name}: the provider answered a stream request with {kind or 'no content type'}, not text/event-stream"
        )
    return response


def error_message(content: bytes) -> str:
    """What a provider's error body says (OpenAI's `error.message`, Anthropic's too)."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content[:300].decode("utf-8", "replace") or "(empty body)"
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
