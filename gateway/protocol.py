"""uvicorn's httptools protocol, with what a gateway in front of every request needs and uvicorn
does not do by itself: a deadline for a request's headers (uvicorn waits forever for the rest of a
half-sent request, and for a new connection's first byte), a limit on open connections, limits on
a request's headers (`MAX_HEADER_BYTES` in all, the request line included, and `MAX_HEADER_FIELDS`
fields: 431 beyond, counted as the bytes arrive, so that an 8 MB header is refused after its first
64 KiB rather than read whole), and framing errors answered in OpenAI's error shape instead of
plain text.

Near the connection limit, the connections still waiting for their headers make room first, the
longest-waiting first: a client that opens thousands of connections and sends half a request on
each (or nothing) holds only the room the others leave it, and a health check or a real request
still gets in. A connection is refused (503) only when the connections it would displace are all
serving requests.

Each refusal is written straight to the transport, before any request exists: nothing of it
reaches the app or the ledger (there is no app key to charge it to yet).
"""

from __future__ import annotations

import asyncio

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

LINGER_S = 1.0  # how long a refused connection stays open for its answer to be read
REASONS = {
    400: b"Bad Request",
    408: b"Request Timeout",
    431: b"Request Header Fields Too Large",
    503: b"Service Unavailable",
}
MAX_HEADER_BYTES = 64 * 1024  # a request's line and headers, in all
MAX_HEADER_FIELDS = 100


def error_bytes(status: int, message: str, code: str) -> bytes:
    """A whole HTTP/1.1 answer in OpenAI's error shape, after which the connection closes."""
    kind = "invalid_request_error" if status < 500 else "service_unavailable"
    body = orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})
    head = (
        f"HTTP/1.1 {status} {REASONS[status].decode()}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


ROOM = 0.9  # past this share of the limit, connections waiting for their headers make room


class GatewayProtocol(HttpToolsProtocol):
    header_timeout_s: float = 10.0
    max_connections: int = 2048
    # this server's connections waiting for their headers, the longest-waiting first (one dict per
    # configured class, shared by its connections: insertion-ordered)
    waiting: dict[GatewayProtocol, None] = {}
    evicted: list[int] = [0]  # those closed to make room and not yet gone from `connections`

    @classmethod
    def configured(cls, header_timeout_s: float, max_connections: int) -> type[GatewayProtocol]:
        """This protocol with the config's limits (uvicorn makes one instance per connection)."""
        limits = {"header_timeout_s": header_timeout_s, "max_connections": max_connections, "waiting": {}}
        return type(cls.__name__, (cls,), {**limits, "evicted": [0]})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._refused = self._evicted = False
        # a request's headers so far: bytes received, and fields and bytes parsed
        self._in_headers, self._header_bytes, self._header_fields, self._parsed_bytes = True, 0, 0, 0
        if self._open() > ROOM * self.max_connections:
            self._make_room()
        if self._open() > self.max_connections:
            self._refuse(503, f"This gateway has {self.max_connections} connections open; try again.", "too_busy")
            return
        self._await_headers()

    def _open(self) -> int:
        """Connections open, less those closed to make room (still in the set until they are gone)."""
        return len(self.connections) - self.evicted[0]

    def _make_room(self) -> None:
        """Close the connections that have waited longest for their headers, until the open ones
        are back under `ROOM` of the limit (or none is waiting)."""
        while self._open() > ROOM * self.max_connections and self.waiting:
            oldest = next(iter(self.waiting))
            oldest._evict()

    def _evict(self) -> None:
        """Close at once: the client has no whole request here to wait for. A connection part-way
        into a request is told why (408); an idle keep-alive one is closed silently, as its
        keep-alive timeout would, so that a client reusing it retries rather than reading a stray
        answer."""
        idle = self._header_timer is None
        self._headers_arrived()
        self._refused = self._evicted = True
        self.evicted[0] += 1
        if not self.transport.is_closing():
            if not idle:
                self.transport.write(
                    error_bytes(408, "Closed to make room: this connection's headers were too slow.", "timeout")
                )
            self.transport.close()

    def _await_headers(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)
            self.waiting.pop(self, None)  # an idle keep-alive one starts waiting anew, at the back
            self.waiting[self] = None

    def _headers_arrived(self) -> None:
        self.waiting.pop(self, None)
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
        if self._refused:  # after a refusal, what the client still sends is dropped unread
            return
        if self._in_headers:
            self._header_bytes += len(data)  # a bound on them: the body may share the last packet
            if self._header_bytes > MAX_HEADER_BYTES + len(data) and self._over_limit():
                return
        super().data_received(data)

    def _over_limit(self) -> bool:
        """Refuse a request whose headers went past the limits; whether it was."""
        if self._header_fields > MAX_HEADER_FIELDS or self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(
                431,
                f"The request's headers are over this gateway's limits ({MAX_HEADER_BYTES // 1024} KiB in all, "
                f"{MAX_HEADER_FIELDS} fields).",
                "request_header_fields_too_large",
            )
            return True
        return False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_headers, self._header_fields, self._parsed_bytes = True, 0, 0
        self._await_headers()

    def on_url(self, url: bytes) -> None:
        self._parsed_bytes += len(url)
        if self._parsed_bytes > MAX_HEADER_BYTES:
            self._header_bytes = self._parsed_bytes
            self._over_limit()
            return
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._refused:
            return
        self._header_fields += 1
        self._parsed_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_fields > MAX_HEADER_FIELDS or self._parsed_bytes > MAX_HEADER_BYTES:
            self._header_bytes = max(self._header_bytes, self._parsed_bytes)
            self._over_limit()
            return
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._header_bytes = 0
        if self._refused:
            return
        self._headers_arrived()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:  # idle until the next request
            self.waiting[self] = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_arrived()
        if self._evicted:
            self.evicted[0] -= 1
            self._evicted = False
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, f"The request is not valid HTTP/1.1 ({msg.rstrip('.')}).", "invalid_http")
