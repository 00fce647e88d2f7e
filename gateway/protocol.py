"""uvicorn's httptools protocol, with what a gateway in front of every request needs and uvicorn
does not do by itself: a deadline for a request's headers (uvicorn waits forever for the rest of a
half-sent request, and for a new connection's first byte), a limit on open connections, and
framing errors answered in OpenAI's error shape instead of plain text.

Each refusal is written straight to the transport, before any request exists: nothing of it
reaches the app or the ledger (there is no app key to charge it to yet).
"""

from __future__ import annotations

import asyncio

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

LINGER_S = 1.0  # how long a refused connection stays open for its answer to be read
REASONS = {400: b"Bad Request", 408: b"Request Timeout", 503: b"Service Unavailable"}


def error_bytes(status: int, message: str, code: str) -> bytes:
    """A whole HTTP/1.1 answer in OpenAI's error shape, after which the connection closes."""
    kind = "invalid_request_error" if status < 500 else "service_unavailable"
    body = orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})
    head = (
        f"HTTP/1.1 {status} {REASONS[status].decode()}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


class GatewayProtocol(HttpToolsProtocol):
    header_timeout_s: float = 10.0
    max_connections: int = 2048

    @classmethod
    def configured(cls, header_timeout_s: float, max_connections: int) -> type[GatewayProtocol]:
        """This protocol with the config's limits (uvicorn makes one instance per connection)."""
        return type(cls.__name__, (cls,), {"header_timeout_s": header_timeout_s, "max_connections": max_connections})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._refused = False
        if len(self.connections) > self.max_connections:
            self._refuse(503, f"This gateway has {self.max_connections} connections open; try again.", "too_busy")
            return
        self._await_headers()

    def _await_headers(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _headers_arrived(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is None or self.cycle.response_complete:  # between requests, or before the first
            self._refuse(408, f"The request's headers did not arrive within {self.header_timeout_s:g} s.", "timeout")

    def _refuse(self, status: int, message: str, code: str) -> None:
        """Answer, then close once the client has had a moment to read it: closing on unread
        request bytes would reset the connection and lose the answer."""
        if self._refused or self.transport.is_closing():
            return
        self._refused = True
        self._headers_arrived()
        self.transport.write(error_bytes(status, message, code))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)

    def data_received(self, data: bytes) -> None:
        if not self._refused:  # after a refusal, what the client still sends is dropped unread
            super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_headers()

    def on_headers_complete(self) -> None:
        self._headers_arrived()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_arrived()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, f"The request is not valid HTTP/1.1 ({msg.rstrip('.')}).", "invalid_http")
