"""The tail under load: 64 concurrent clients through the gateway to an upstream that answers as a
provider does, over time (a stream's chunks 20 ms apart, a whole answer after 150 ms), against the
same load sent to the upstream directly.

A gateway's p99 under load is where what stops its event loop shows: a garbage collection, a flush,
a lock, an import on first use. The target is p99 <= 3x p50 at concurrency 64, streamed and not.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from gateway.bench.overhead import APP_KEY, BODY, Server, edgeway_command, upstream_command, write_configs
from gateway.bench.ports import free_port
from gateway.bench.wire import ANSWER, STREAM, LoadResult, _Upstream, serve_upstream
from gateway.percentiles import percentile

CONCURRENCY = 64
REQUESTS = 1_280  # 20 a connection
CHUNK_GAP_S = 0.02  # between a stream's chunks, as a provider's tokens arrive
ANSWER_S = 0.15  # before a whole answer
FRAMES = [frame + b"\n\n" for frame in STREAM.split(b"\n\n") if frame]


class _PacedUpstream(_Upstream):
    """The fixed answer, sent as a provider sends it: over time."""

    def reply(self, body: bytes) -> None:
        loop = asyncio.get_running_loop()
        if b'"stream":true' in body.replace(b" ", b""):
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
                + str(len(STREAM)).encode()
                + b"\r\n\r\n"
            )
            for i, frame in enumerate(FRAMES):
                loop.call_later(i * CHUNK_GAP_S, self._write, frame)
        else:
            answer = (
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(ANSWER)).encode()
                + b"\r\n\r\n"
                + ANSWER
            )
            loop.call_later(ANSWER_S, self._write, answer)

    def _write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)


def serve_paced_upstream(port: int) -> None:
    """Run the paced upstream until killed (meant for a subprocess)."""
    serve_upstream(port, _PacedUpstream)


def _row(name: str, stream: bool, result: LoadResult) -> str:
    p50, p99 = percentile(result.latencies, 0.5) * 1e3, percentile(result.latencies, 0.99) * 1e3
    worst = max(result.latencies) * 1e3
    return (
        f"{name:<8} {str(stream).lower():<6} {p50:>8.1f} {p99:>8.1f} {worst:>8.1f} {p99 / p50:>8.2f}x "
        f"{result.rps:>7.0f} {result.errors:>6}"
    )


def run(repeat: int = 1) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        edgeway_config, _ = write_configs(tmp, upstream_port)
        upstream = Server("upstream", upstream_port, "/v1/chat/completions", {}, {**BODY, "model": "bench"})
        edgeway = Server("edgeway", free_port(), "/v1/chat/completions", {"authorization": f"Bearer {APP_KEY}"}, BODY)
        try:
            upstream.start(upstream_command(upstream_port, "gateway.bench.tail:serve_paced_upstream"))
            edgeway.start(edgeway_command(edgeway_config, edgeway.port))
            print(
                f"{CONCURRENCY} concurrent clients, {REQUESTS * repeat} requests each way; the upstream streams "
                f"{len(FRAMES)} chunks {CHUNK_GAP_S * 1e3:.0f} ms apart, or answers whole after {ANSWER_S * 1e3:.0f} ms"
            )
            print(
                f"{'path':<8} {'stream':<6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p99/p50':>9} "
                f"{'req/s':>7} {'errors':>6}"
            )
            for stream in (False, True):
                for server in (upstream, edgeway):
                    result = server.run(CONCURRENCY, REQUESTS * repeat, stream)
                    print(_row("direct" if server is upstream else "edgeway", stream, result), flush=True)
            print("target: edgeway's p99 <= 3x its p50, streamed and not")
        finally:
            edgeway.stop()
            upstream.stop()
