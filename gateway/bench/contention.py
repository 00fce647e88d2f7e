"""The edge beside other work: time to first token with a CPU hog of N busy processes on the same
cores, against the same requests on the quiet machine, for each way llama.cpp's threads may wait.

A gateway shares its machine with the app and other processes. llama.cpp's CPU backend runs each
step's graph on `n_threads` OpenMP threads, which, between the nodes of a graph, spin waiting for
each other before they sleep: on cores another process keeps busy, a spinning thread holds a core
its peer needs, and a step takes many time slices instead of one. edgeway spins 3,000 times
(`edge_runtime.openmp`); libgomp's own default spins 300,000; with `OMP_WAIT_POLICY=PASSIVE` a
waiting thread sleeps at once. Each configuration is a gateway process of its own (the setting is
read when the OpenMP runtime loads); they take turns, round after round, each measured quiet (its
decode rate too: what a shorter spin could cost) and then beside the hog.

Requests: a short prompt, and a fresh 500-token one (a word changed up front each time, so that no
cached prefix is reused), streamed, one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from gateway.bench.overhead import Server, edgeway_command
from gateway.bench.ports import free_port
from gateway.bench.wire import stream_times, timed_stream

SHORT = "Say hello."
MEDIUM = "Summarize this log. " + "The harbor light turned on at dusk and the ships came home. " * 38
CONFIGURATIONS = {
    "edgeway's (spin 3,000)": {},
    # the policy ACTIVE this process set reaches the gateway too: with one model it changes only a
    # spin libgomp uses past the core count, which one model's threads never reach
    "libgomp's (spin 300,000)": {"GOMP_SPINCOUNT": "300000"},
    # as an operator sets it; the spin count said too, as libgomp takes PASSIVE to mean (0), since
    # this process's own edgeway default (3,000) would reach the gateway otherwise
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"},
}
TARGET = 2.5  # beside a hog of as many busy processes as cores: a fair share, at most this times quiet
DECODE_TOKENS = 64


HOG = [sys.executable, "-c", "while True: pass"]


@contextlib.contextmanager
def hog(busy: int, command: list[str] | None = None) -> Iterator[None]:
    """`busy` processes, each keeping a core busy, until the block ends."""
    processes = [subprocess.Popen(command or HOG) for _ in range(busy)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for process in processes:
            process.kill()
            process.wait()


@contextlib.contextmanager
def gateway(env: dict[str, str]) -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp_name:
        config = Path(tmp_name) / "edge.yaml"
        config.write_text("edge:\n  models:\n    - {name: smollm2, n_ctx: 2048, parallel: 2}\n")
        port = free_port()
        ready = {"model": "smollm2", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        server = Server("edgeway", port, "/v1/chat/completions", {}, ready)
        try:
            server.start(edgeway_command(config, port), env=env)
            yield f"http://127.0.0.1:{port}/v1/chat/completions"
        finally:
            server.stop()


async def _ttft(client: httpx.AsyncClient, url: str, content: str) -> float:
    body = {
        "model": "smollm2",
        "stream": True,
        "temperature": 0,
        "max_tokens": 2,
        "messages": [{"role": "user", "content": content}],
    }
    times = await timed_stream(client, url, body)
    return (times.first or time.perf_counter()) - times.started


async def _round(url: str, repeat: int, tag: str) -> dict[str, list[float]]:
    async with httpx.AsyncClient(timeout=900) as client:
        await _ttft(client, url, SHORT)  # warm
        short = [await _ttft(client, url, SHORT) for _ in range(repeat)]
        medium = [await _ttft(client, url, f"{tag} {i}. {MEDIUM}") for i in range(repeat)]
    return {"short": short, "500 tokens": medium}


async def _decode_rate(url: str, repeat: int, tag: str) -> float:
    """Quiet decode tokens/s of a streamed story (median of `repeat`)."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    rates = []
    for i in range(repeat):
        body = {
            "model": "smollm2",
            "stream": True,
            "temperature": 0,
            "max_tokens": DECODE_TOKENS,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": f"{tag} {i}. Write a long story about a lighthouse keeper."}],
        }
        rates.append((await stream_times(port, "/v1/chat/completions", json.dumps(body).encode())).decode_rate())
    measured = [r for r in rates if not math.isnan(r)]
    return statistics.median(measured) if measured else float("nan")


@dataclass
class Found:
    """One configuration's figures, a value a round: quiet decode rate, and per request the time to
    first token quiet and beside the hog."""

    decode: list[float] = field(default_factory=list)
    quiet: dict[str, list[float]] = field(default_factory=dict)
    busy: dict[str, list[float]] = field(default_factory=dict)

    def ratios(self, request: str) -> list[float]:
        return [b / q for q, b in zip(self.quiet[request], self.busy[request], strict=True)]


def measure(busy: int, repeat: int = 3, rounds: int = 3) -> dict[str, Found]:
    """Each configuration's figures over `rounds` rounds, the configurations taking turns."""
    found = {name: Found() for name in CONFIGURATIONS}
    for r in range(rounds):
        for name, env in CONFIGURATIONS.items():
            with gateway(env) as url:
                figures = found[name]
                figures.decode.append(asyncio.run(_decode_rate(url, repeat, f"round {r}")))
                quiet = asyncio.run(_round(url, repeat, f"quiet {r}"))
                with hog(busy):
                    loaded = asyncio.run(_round(url, repeat, f"busy {r}"))
            for request in quiet:
                figures.quiet.setdefault(request, []).append(statistics.median(quiet[request]))
                figures.busy.setdefault(request, []).append(statistics.median(loaded[request]))
    return found


def report(found: dict[str, Found], busy: int) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rounds = len(next(iter(found.values())).decode)
    print(f"OpenMP's wait: quiet decode, and time to first token quiet and beside {busy} busy processes on {cores}")
    print(f"cores; {rounds} rounds, the configurations taking turns (each round a median of its requests)")
    head = f"{'configuration':<26} {'decode tok/s':>13} {'request':<11} {'quiet ms':>9} {'busy ms':>9}"
    print(f"{head}  busy/quiet each round")
    for name, figures in found.items():
        decode = statistics.median(figures.decode)
        for request in figures.quiet:
            quiet, loaded = statistics.median(figures.quiet[request]), statistics.median(figures.busy[request])
            each = " ".join(f"{r:.2f}x" for r in figures.ratios(request))
            print(f"{name:<26} {decode:>13.1f} {request:<11} {quiet * 1e3:>9.0f} {loaded * 1e3:>9.0f}  {each}")
    print(f"target: beside a hog of one process a core, <= {TARGET}x quiet in every round, the quiet decode kept")


def run(busy: int = 2, repeat: int = 3) -> None:
    report(measure(busy, repeat), busy)
