"""The edge beside other work: time to first token with a CPU hog of N busy processes on the same
cores, against the same requests on the quiet machine, for each way llama.cpp's threads may wait.

A gateway shares its machine with the app and other processes. llama.cpp's CPU backend runs each
step's graph on `n_threads` OpenMP threads, which, between the nodes of a graph, spin waiting for
each other by default: on cores another process keeps busy, a spinning thread holds a core its
peer needs, and a step takes many time slices instead of one. With `OMP_WAIT_POLICY=PASSIVE` a
waiting thread sleeps instead. Each configuration is a gateway process of its own (the policy is
read when the OpenMP runtime loads); they take turns, each measured quiet and then beside the hog.

Requests: a short prompt, and a fresh 500-token one (a word changed up front each time, so that no
cached prefix is reused), streamed, one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from gateway.bench.overhead import Server, edgeway_command
from gateway.bench.ports import free_port
from gateway.bench.wire import timed_stream

SHORT = "Say hello."
MEDIUM = "Summarize this log. " + "The harbor light turned on at dusk and the ships came home. " * 38
CONFIGURATIONS = {
    "OpenMP's default wait": {},
    "OMP_WAIT_POLICY=ACTIVE": {"OMP_WAIT_POLICY": "ACTIVE"},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
}
TARGET = 3.0  # beside a hog of as many busy processes as cores: a fair share, at most this times quiet


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


def measure(busy: int, repeat: int = 3) -> dict[str, dict[str, tuple[float, float]]]:
    """Per configuration and request: (quiet TTFT, TTFT beside the hog), medians, seconds."""
    found: dict[str, dict[str, tuple[float, float]]] = {}
    for name, env in CONFIGURATIONS.items():
        with gateway(env) as url:
            quiet = asyncio.run(_round(url, repeat, "quiet"))
            with hog(busy):
                loaded = asyncio.run(_round(url, repeat, "busy"))
        found[name] = {k: (statistics.median(quiet[k]), statistics.median(loaded[k])) for k in quiet}
    return found


def report(found: dict[str, dict[str, tuple[float, float]]], busy: int) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"time to first token, quiet and beside {busy} busy processes on {cores} cores (medians):")
    print(f"{'configuration':<26} {'request':<11} {'quiet ms':>9} {'busy ms':>9} {'busy/quiet':>11}")
    for name, requests in found.items():
        for request, (quiet, loaded) in requests.items():
            print(f"{name:<26} {request:<11} {quiet * 1e3:>9.0f} {loaded * 1e3:>9.0f} {loaded / quiet:>10.2f}x")
    print(f"target: beside a hog of one process a core, <= {TARGET:.0f}x quiet (a fair share), never a collapse")


def run(busy: int = 2, repeat: int = 3) -> None:
    report(measure(busy, repeat), busy)
