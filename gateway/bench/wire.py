"""Bare HTTP/1.1 over asyncio for benchmarks: a fixed-answer OpenAI upstream and a load client.

Both are as lean as asyncio allows, so that what a benchmark measures is the gateway between
them, not the tools around it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, cast

ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "A short fixed answer."},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }
).encode()


def _stream_answer() -> bytes:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "bench"}
    events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    events += [
        {**base, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
        for w in ("A ", "short ", "fixed ", "answer.")
    ]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({**base, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


STREAM = _stream_answer()


class _Upstream(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not a subclass of asyncio.Transport, so no isinstance).
        self.transport = cast(asyncio.Transport, transport)
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].lower() + b"\r\n"
            at = head.find(b"\r\ncontent-length:")
            length = int(head[at + 17 : head.find(b"\r\n", at + 2)]) if at >= 0 else 0
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4 : head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length :]
            self.reply(body)

    def reply(self, body: bytes) -> None:
        if b'"stream":true' in body.replace(b" ", b""):
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
                + str(len(STREAM)).encode()
                + b"\r\n\r\n"
                + STREAM
            )
        else:
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(ANSWER)).encode()
                + b"\r\n\r\n"
                + ANSWER
            )


class _TraceSink(_Upstream):
    """An OTLP/HTTP trace receiver that accepts every batch and keeps nothing."""

    def reply(self, body: bytes) -> None:
        self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")


def serve_trace_sink(port: int) -> None:
    """Run the OTLP sink until killed (meant for a subprocess)."""
    serve_upstream(port, _TraceSink)


def serve_upstream(port: int, protocol: type[_Upstream] = _Upstream) -> None:
    """Run the fixed-answer upstream until killed (meant for a subprocess)."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(protocol, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")  # at a line start: not x-...-content-length
    if at >= 0:
        await reader.readexactly(int(lower[at + 17 : lower.find(b"\r\n", at + 2)]))
    elif b"\r\ntransfer-encoding: chunked" in lower:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


SERIAL = b"#0000000"  # in a body, replaced by the request's number: no two requests are alike


async def load(
    port: int, path: str, body: bytes, headers: dict[str, str], requests: int, concurrency: int
) -> LoadResult:
    """`requests` POSTs over `concurrency` keep-alive connections; latency of each, and errors.

    Where the body holds SERIAL, each request carries its own number there (same length, so the
    head is reused): a gateway cannot answer from what it learned of an identical request."""
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    ).encode()
    message = head + body
    serial_at = message.find(SERIAL)
    result = LoadResult()
    remaining = [requests]

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while remaining[0] > 0:
                remaining[0] -= 1
                payload = message
                if serial_at >= 0:
                    number = b"#%07d" % (remaining[0] % 10_000_000)
                    payload = message[:serial_at] + number + message[serial_at + len(SERIAL) :]
                started = time.perf_counter()
                writer.write(payload)
                try:
                    status = await _read_response(reader)
                except (asyncio.IncompleteReadError, ConnectionError, ValueError) as exc:
                    result.errors += 1
                    result.failures.append(f"{type(exc).__name__}: {exc}")
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    continue
                if status == 200:
                    result.latencies.append(time.perf_counter() - started)
                else:
                    result.errors += 1
                    result.failures.append(f"HTTP {status}")
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    result.seconds = time.perf_counter() - started
    return result


@dataclass
class StreamTimes:
    started: float
    first: float | None = None  # when the first content delta arrived
    last: float | None = None
    deltas: int = 0
    usage: dict[str, Any] | None = None

    @property
    def tokens(self) -> int:
        """Completion tokens: the usage chunk's count, else the content deltas seen."""
        return int(self.usage["completion_tokens"]) if self.usage else self.deltas

    def decode_rate(self) -> float:
        """Tokens/s after the first (NaN for an answer of one token or none)."""
        if self.first is None or self.last is None or self.last <= self.first:
            return float("nan")
        return (self.tokens - 1) / (self.last - self.first)


async def stream_times(port: int, path: str, body: bytes) -> StreamTimes:
    """One streamed POST on a new connection, timing content deltas as their bytes arrive.

    The response is read with one socket read per arrival and frames are only searched, not
    parsed (the usage chunk aside), so that the client costs little next to what it measures.
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    times = StreamTimes(time.perf_counter())
    writer.write(
        (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        + body
    )
    seen = b""
    try:
        while b"data: [DONE]" not in seen[-64:]:
            data = await reader.read(65536)
            if not data:
                break
            now = time.perf_counter()
            deltas = data.count(b'"delta":{"content":')
            if deltas:
                times.first = times.first or now
                times.last = now
                times.deltas += deltas
            seen = seen[-65536:] + data
    finally:
        writer.close()
    at = seen.rfind(b'"usage":{')
    if at >= 0:
        times.usage = json.loads(seen[at + 8 : seen.index(b"}", at) + 1])
    return times


async def timed_stream(client: Any, url: str, body: dict[str, Any]) -> StreamTimes:
    """One streamed chat completion through an `httpx.AsyncClient`: when its first and last content
    deltas came, and its usage chunk."""
    times = StreamTimes(time.perf_counter())
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                times.usage = chunk["usage"]
            elif chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                times.last = time.perf_counter()
                times.first = times.first or times.last
                times.deltas += 1
    return times
