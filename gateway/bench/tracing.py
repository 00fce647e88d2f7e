"""What tracing costs the served request: the same gateway with tracing off, with OTLP export at
the default sampling (parent-based, 10% of traces whole; errors, escalations and slow requests
always kept: gateway/telemetry.py), and at 100% sampling, each against a fixed-answer upstream
and a trace sink that keeps nothing, at concurrency 1, 16 and 64, whole and streamed, the three
run in turn at each level. Targets at the default sampling: at least 0.9x the requests per second
of tracing off, and at most 1 ms added to the median.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from gateway.bench.overhead import (
    APP_KEY,
    BODY,
    LEVELS,
    Server,
    _pct,
    edgeway_command,
    upstream_command,
    write_configs,
)
from gateway.bench.ports import free_port
from gateway.bench.wire import LoadResult

OFF, SAMPLED, ALL = "tracing off", "default sampling", "100% sampling"


def run(repeat: int = 1) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        config, _ = write_configs(tmp, upstream_port)
        upstream = Server("upstream", upstream_port, "/v1/chat/completions", {}, {**BODY, "model": "bench"})
        sink = Server("trace sink", free_port(), "/v1/traces", {}, {})
        headers = {"authorization": f"Bearer {APP_KEY}"}
        servers = [Server(name, free_port(), "/v1/chat/completions", headers, BODY) for name in (OFF, SAMPLED, ALL)]
        try:
            upstream.start(upstream_command(upstream_port))
            sink_command = upstream_command(sink.port, "gateway.bench.wire:serve_trace_sink")
            sink.process = subprocess.Popen(sink_command, start_new_session=True)
            otlp = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.port}", "OTEL_SERVICE_NAME": "bench"}
            environments = [{}, otlp, {**otlp, "OTEL_TRACES_SAMPLER": "always_on"}]
            for server, env in zip(servers, environments, strict=True):
                server.start(edgeway_command(config, server.port), env=env)
            results: dict[tuple[str, int, bool], LoadResult] = {}
            for stream in (False, True):
                for concurrency, requests in LEVELS:
                    for server in servers:
                        results[(server.name, concurrency, stream)] = server.run(concurrency, requests * repeat, stream)
        finally:
            for server in [*servers, upstream, sink]:
                server.stop()
    print("tracing's cost to the served request (OTLP/HTTP to a sink; the three gateways run in turn)")
    print("targets at the default sampling: req/s >= 0.9x tracing off, added p50 <= 1 ms")
    print(
        f"{'sampling':<17} {'stream':<6} {'conc':>4} {'p50 ms':>7} {'p99 ms':>7} {'+p50':>6} {'+p99':>7} "
        f"{'req/s':>6} {'ratio':>6}"
    )
    for stream in (False, True):
        for concurrency, _ in LEVELS:
            off = results[(OFF, concurrency, stream)]
            for name in (OFF, SAMPLED, ALL):
                r = results[(name, concurrency, stream)]
                p50, p99 = _pct(r.latencies, 0.5), _pct(r.latencies, 0.99)
                added = p50 - _pct(off.latencies, 0.5), p99 - _pct(off.latencies, 0.99)
                print(
                    f"{name:<17} {str(stream).lower():<6} {concurrency:>4} {p50:>7.2f} {p99:>7.2f} "
                    f"{added[0]:>+6.2f} {added[1]:>+7.2f} {r.rps:>6.0f} {r.rps / off.rps:>5.2f}x"
                )
