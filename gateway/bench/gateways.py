"""Two builds of the gateway side by side: this checkout's `edgeway serve` and another checkout's,
each in its own process before the same fixed-answer upstream, with the `overhead` suite's app and
request, measured in alternating rounds (which goes first alternates). For a change that is to
alter no behaviour, this says whether it costs anything: what each build adds to the request sent
directly, and its requests/s, as medians over the rounds.

    edgeway bench overhead --against ../before --repeat 5

The other checkout is run from its own directory, its packages first on the path; its compiled
scan must be built there (`python setup.py build_ext --inplace`).
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gateway.bench.overhead import APP_KEY, BODY, Server, edgeway_command, upstream_command, write_configs
from gateway.bench.ports import free_port
from gateway.bench.wire import LoadResult
from gateway.percentiles import percentile

LEVELS = ((1, 400), (16, 1200))  # (concurrency, requests) of each round


class CheckoutError(ValueError):
    """The other checkout cannot be run."""


@dataclass
class Rounds:
    """One build's rounds at one concurrency and stream mode, beside the direct ones."""

    p50_ms: list[float] = field(default_factory=list)
    p99_ms: list[float] = field(default_factory=list)
    rps: list[float] = field(default_factory=list)

    def add(self, result: LoadResult) -> None:
        self.p50_ms.append(percentile(result.latencies, 0.5) * 1e3)
        self.p99_ms.append(percentile(result.latencies, 0.99) * 1e3)
        self.rps.append(result.rps)


def checkout(path: Path) -> Path:
    """`path`, if it is a checkout whose gateway can run."""
    if not (path / "gateway" / "cli.py").is_file():
        raise CheckoutError(f"not a checkout of edgeway (no gateway/cli.py): {path}")
    if not list((path / "classifiers").glob("_scan*.so")):
        raise CheckoutError(f"{path}'s scan is not built: run `python setup.py build_ext --inplace` there")
    return path.resolve()


def run(other: Path, repeat: int = 5) -> None:
    other = checkout(other)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        config, _ = write_configs(tmp, upstream_port)
        direct = Server("direct", upstream_port, "/v1/chat/completions", {}, {**BODY, "model": "bench"})
        headers = {"authorization": f"Bearer {APP_KEY}"}
        ours = Server("this build", free_port(), direct.path, headers, BODY)
        theirs = Server(str(other), free_port(), direct.path, headers, BODY)
        servers = [direct, ours, theirs]
        try:
            direct.start(upstream_command(upstream_port))
            ours.start(edgeway_command(config, ours.port))
            theirs.start(edgeway_command(config, theirs.port), env={"PYTHONPATH": str(other)}, cwd=other)
            _report(direct, ours, theirs, repeat)
        finally:
            for server in servers:
                server.stop()


def _report(direct: Server, ours: Server, theirs: Server, repeat: int) -> None:
    print(f"this build against {theirs.name}, the same requests in {repeat} alternating rounds; medians")
    print(
        f"{'stream':<6} {'conc':>4} {'direct p50':>10} {'this +p50':>10} {'other +p50':>11} {'this +p99':>10} "
        f"{'other +p99':>11} {'this req/s':>11} {'other req/s':>12} {'req/s this/other':>17}"
    )
    for stream in (False, True):
        for concurrency, requests in LEVELS:
            rounds = {name: Rounds() for name in ("direct", "ours", "theirs")}
            for n in range(repeat):
                order = (("ours", ours), ("theirs", theirs)) if n % 2 == 0 else (("theirs", theirs), ("ours", ours))
                rounds["direct"].add(direct.run(concurrency, requests, stream))
                for name, server in order:
                    rounds[name].add(server.run(concurrency, requests, stream))
            base = statistics.median(rounds["direct"].p50_ms)
            base99 = statistics.median(rounds["direct"].p99_ms)
            ours_rps, theirs_rps = statistics.median(rounds["ours"].rps), statistics.median(rounds["theirs"].rps)
            print(
                f"{str(stream).lower():<6} {concurrency:>4} {base:>10.2f} "
                f"{statistics.median(rounds['ours'].p50_ms) - base:>10.2f} "
                f"{statistics.median(rounds['theirs'].p50_ms) - base:>11.2f} "
                f"{statistics.median(rounds['ours'].p99_ms) - base99:>10.2f} "
                f"{statistics.median(rounds['theirs'].p99_ms) - base99:>11.2f} "
                f"{ours_rps:>11.0f} {theirs_rps:>12.0f} {ours_rps / theirs_rps:>16.3f}x",
                flush=True,
            )
