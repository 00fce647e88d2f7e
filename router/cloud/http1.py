"""A lean HTTP/1.1 client for the hot path: pooled keep-alive connections, httptools parsing.

Every cloud request pays its client's overhead. aiohttp took 220 us for a round trip to a
fixed-answer upstream on loopback here, asyncio streams with a C parser 95 us; at concurrency 1
that difference was an eighth of everything edgeway added. This client does only what an
OpenAI-compatible upstream needs: a request with a body, a response read whole or chunk by chunk
(content-length, chunked or close-delimited), three timeouts, TLS, connection reuse, and the
egress proxy of the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, as LiteLLM's own client
honours them): a tunnel (CONNECT) for https, the absolute URL for http.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl
import time
import urllib.request
import weakref
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httptools

IDLE_S = 50.0  # a pooled connection idle this long is closed rather than reused


class HTTPError(Exception):
    """The connection failed, or the upstream broke the protocol."""


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    authorization: bytes = b""  # a ready "proxy-authorization: ..." header line, or nothing

    @classmethod
    def for_url(cls, scheme: str, host: str) -> Proxy | None:
        """The proxy the environment names for this scheme and host, if any."""
        proxies = urllib.request.getproxies_environment()
        url = proxies.get(scheme)
        bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # public, not in typeshed
        if not url or _loopback(host) or bypass(host, proxies):
            return None  # a proxy cannot reach this machine's loopback for us
        parts = urlsplit(url if "://" in url else f"http://{url}")
        authorization = b""
        if parts.username:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = b"proxy-authorization: Basic " + base64.b64encode(pair) + b"\r\n"
        return cls(parts.hostname or "", parts.port or 80, authorization)


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Timeouts:
    connect: float
    read: float  # the longest silence: before the first byte, between chunks
    total: float | None = None  # the whole exchange; None for streams


class _Parser:
    """httptools callbacks, collecting one response."""

    def __init__(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.headers_done = False
        self.body: list[bytes] = []
        self.done = False
        self.keep_alive = False
        self.parser = httptools.HttpResponseParser(self)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self.parser.should_keep_alive()  # read now: the parser forgets it after the message

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.done = True


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = time.monotonic()

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing() and time.monotonic() - self.idle_since < IDLE_S

    def close(self) -> None:
        self.writer.close()


class Response:
    """Status and headers as soon as they arrive; the body read whole or as it comes."""

    def __init__(
        self, origin: Origin, connection: Connection, parsed: _Parser, timeouts: Timeouts, deadline: float | None
    ) -> None:
        self._origin = origin
        self._connection: Connection | None = connection
        self._parsed = parsed
        self._timeouts = timeouts
        self._deadline = deadline
        self.status = parsed.parser.get_status_code()
        self.headers = parsed.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; raises HTTPError or TimeoutError if the upstream breaks off."""
        parsed = self._parsed
        try:
            while True:
                if parsed.body:
                    pieces, parsed.body = parsed.body, []
                    for piece in pieces:
                        yield piece
                if parsed.done or self._connection is None:
                    break
                if not await self._origin._fill(self._connection, parsed, self._timeouts.read, self._deadline):
                    if _close_delimited(parsed.headers):
                        break
                    raise HTTPError("the upstream closed the connection before the end of the answer")
        finally:
            self.release()

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self.chunks()])

    async def lines(self) -> AsyncIterator[bytes]:
        """The body split into lines (each ending with b"\\n", except perhaps the last)."""
        pending = b""
        async for piece in self.chunks():
            pending += piece
            while True:
                end = pending.find(b"\n")
                if end < 0:
                    break
                yield pending[: end + 1]
                pending = pending[end + 1 :]
        if pending:
            yield pending

    async def finish(self, timeout_s: float = 1.0) -> None:
        """Read what is left of the body (waiting at most `timeout_s` at a time) and drop it, so
        that the connection can serve the next request; a body that does not end is closed."""
        parsed = self._parsed
        try:
            while not parsed.done and self._connection is not None:
                if not await self._origin._fill(self._connection, parsed, timeout_s, None):
                    break
        except (HTTPError, TimeoutError):
            pass
        parsed.body.clear()

    def release(self) -> None:
        """Give the connection back when the answer was read to its end (else close it)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._parsed.done and self._parsed.keep_alive:
            self._origin._put(connection)
        else:
            connection.close()


def _close_delimited(headers: dict[bytes, bytes]) -> bool:
    return b"content-length" not in headers and b"chunked" not in headers.get(b"transfer-encoding", b"").lower()


class Origin:
    """One scheme://host:port: its idle keep-alive connections and how to make new ones."""

    def __init__(self, scheme: str, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._ssl = ssl.create_default_context() if scheme == "https" else None
        name = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
        self._host_header = name if port == (443 if scheme == "https" else 80) else f"{name}:{port}"
        self._idle: deque[Connection] = deque()
        # every connection open, idle or serving an answer, so that closing the origin closes an
        # answer's connection too (left to the garbage collector, it closes after its event loop)
        self._open: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.proxy = Proxy.for_url(scheme, host)
        # Through a proxy, plain http names the whole URL in each request; https tunnels instead.
        self._target_prefix = f"http://{self._host_header}" if self.proxy and not self._ssl else ""
        self._proxy_headers = self.proxy.authorization if self.proxy and not self._ssl else b""

    async def request(self, method: str, target: str, headers: bytes, body: bytes, timeouts: Timeouts) -> Response:
        """Send a request and wait for its status line and headers.

        `headers` are ready-made "name: value\\r\\n" lines. A pooled connection that the upstream
        closed while it sat idle fails before any byte of an answer: the request is then sent on
        another one, and at last on a new connection (the router's own retries count only what
        fails on a new one)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeouts.total if timeouts.total is not None else None
        message = (
            f"{method} {self._target_prefix}{target} HTTP/1.1\r\nhost: {self._host_header}\r\n"
            f"content-length: {len(body)}\r\n".encode("latin-1")
            + self._proxy_headers
            + headers
            + b"\r\n"
            + body
        )
        while True:
            connection, reused = self._take(), True
            if connection is None:
                connection, reused = await self._connect(timeouts.connect), False
            parsed = _Parser()
            try:
                connection.writer.write(message)
                while not parsed.headers_done:
                    if not await self._fill(connection, parsed, timeouts.read, deadline):
                        raise HTTPError("the upstream closed the connection without answering")
            except TimeoutError:
                connection.close()
                raise
            except (HTTPError, ConnectionError, OSError) as exc:
                connection.close()
                if reused and not parsed.headers:
                    continue
                raise HTTPError(str(exc) or type(exc).__name__) from None
            except BaseException:
                connection.close()
                raise
            return Response(self, connection, parsed, timeouts, deadline)

    async def _fill(self, connection: Connection, parsed: _Parser, read_s: float, deadline: float | None) -> bool:
        """Read once and parse; False at the end of the stream. Raises TimeoutError on silence."""
        loop = asyncio.get_running_loop()
        until = loop.time() + read_s
        if deadline is not None:
            until = min(until, deadline)
        try:
            async with asyncio.timeout_at(until):
                data = await connection.reader.read(65536)
        except ConnectionError as exc:
            raise HTTPError(f"the connection broke ({type(exc).__name__})") from None
        if not data:
            return False
        try:
            parsed.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            raise HTTPError(f"the upstream's answer is not HTTP/1.1 ({exc})") from None
        return True

    async def _connect(self, timeout_s: float) -> Connection:
        proxy = self.proxy
        try:
            async with asyncio.timeout(timeout_s):
                if proxy is None:
                    reader, writer = await asyncio.open_connection(
                        self.host, self.port, ssl=self._ssl, server_hostname=self.host if self._ssl else None
                    )
                else:
                    reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
                    if self._ssl is not None:
                        await self._tunnel(reader, writer, proxy)
                        await writer.start_tls(self._ssl, server_hostname=self.host)
        except TimeoutError:
            raise
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as exc:
            where = f"{self.host}:{self.port}" + (f" through the proxy {proxy.host}:{proxy.port}" if proxy else "")
            raise HTTPError(f"could not connect to {where} ({exc})") from None
        connection = Connection(reader, writer)
        self._open.add(connection)
        return connection

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proxy: Proxy) -> None:
        """Ask the proxy for a tunnel to the upstream (CONNECT), over which TLS then runs."""
        writer.write(
            f"CONNECT {self._host_header} HTTP/1.1\r\nhost: {self._host_header}\r\n".encode("latin-1")
            + proxy.authorization
            + b"\r\n"
        )
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1] if head.count(b" ") >= 1 else b""
        if not status.startswith(b"2"):
            writer.close()
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            raise HTTPError(f"the proxy {proxy.host}:{proxy.port} refused the tunnel to {self._host_header}: {line}")

    def _take(self) -> Connection | None:
        while self._idle:
            connection = self._idle.pop()  # the most recent: the likeliest to be alive
            if connection.usable():
                return connection
            connection.close()
        return None

    def _put(self, connection: Connection) -> None:
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    def close(self) -> None:
        """Close every connection, those serving an answer too (its reader then sees the end)."""
        self._idle.clear()
        for connection in list(self._open):
            connection.close()


class Client:
    """Origins by URL, made on first use; one per gateway."""

    def __init__(self) -> None:
        self._origins: dict[tuple[str, str, int], Origin] = {}

    def origin(self, url: str) -> tuple[Origin, str]:
        """The origin of `url` and the request target (path and query) to send it."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (parts.scheme, parts.hostname, port)
        origin = self._origins.get(key)
        if origin is None:
            origin = self._origins[key] = Origin(parts.scheme, parts.hostname, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return origin, target

    def close(self) -> None:
        for origin in self._origins.values():
            origin.close()
