"""What /mcp adds to a tool call: the same `mcp-server-time` call made direct (the MCP SDK's
client starting the server over stdio) and through a gateway that serves it (the SDK's client
on /mcp, the gateway's own session to the server), one call at a time, in turn. Through the
gateway twice: with the server `where: local` (the tool policy, the ledger row and the metrics)
and `where: remote` (the arguments and the result read by the app's privacy rules besides).
Target: at most 2 ms added at p50 for the local server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import yaml
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from gateway.bench.ports import free_port
from gateway.percentiles import percentile

KEY = "bench-mcp-key-0123456789"
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
ARGUMENTS = {"timezone": "Europe/Paris"}
WARM_UP = 20

Call = Callable[[], Awaitable[Any]]


def run(repeat: int = 300) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        port = free_port()
        process = _serve(tmp, port)
        try:
            latencies = anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", repeat)
            inside = _in_the_pipeline(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
    direct = latencies["direct"]
    print(f"a tool call (mcp-server-time get_current_time over stdio), {repeat} calls each, one at a time, in turn")
    print("target: at most 2 ms added at p50 for the local server")
    print(f"{'path':<34} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'+p50':>6}")
    names = {
        "direct": "direct (SDK client, stdio)",
        "local": "through /mcp, where: local",
        "remote": "through /mcp, where: remote (read)",
    }
    for key, name in names.items():
        values = latencies[key]
        p50 = percentile(values, 0.5) * 1e3
        added = p50 - percentile(direct, 0.5) * 1e3
        print(
            f"{name:<34} {p50:>7.2f} {percentile(values, 0.9) * 1e3:>7.2f} "
            f"{percentile(values, 0.99) * 1e3:>7.2f} {added:>+6.2f}"
        )
    print(
        "of which in the gateway's call pipeline (policy, reading, its own session's call to the server, "
        "ledger row, metrics), mean from edgeway_mcp_call_duration_seconds: "
        + ", ".join(f"{server} {ms:.2f} ms" for server, ms in inside.items())
    )


def _in_the_pipeline(metrics: str) -> dict[str, float]:
    """The mean time of the bench's calls in the gateway's pipeline, by server, in ms."""
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for line in metrics.splitlines():
        if line.startswith("edgeway_mcp_call_duration_seconds_") and 'outcome="ok"' in line:
            server = line.split('server="', 1)[1].split('"', 1)[0]
            value = float(line.rsplit(" ", 1)[1])
            if line.startswith("edgeway_mcp_call_duration_seconds_sum"):
                sums[server] = value
            elif line.startswith("edgeway_mcp_call_duration_seconds_count"):
                counts[server] = value
    return {server: sums[server] / counts[server] * 1e3 for server in sorted(sums) if counts.get(server)}


def _serve(tmp: Path, port: int) -> subprocess.Popen[bytes]:
    """`edgeway serve` with the time server twice, local and (for the reading) remote."""
    (tmp / "policy.yaml").write_text(
        "tools: {allow: [time.*, time_remote.*]}\nrules:\n"
        "  - {name: mask, when: {pii: any}, route: cloud, redact: true}\n  - {name: default, route: cloud}\n"
    )
    servers = [{"name": "time", "command": TIME_SERVER, "where": "local"}]
    servers.append({"name": "time_remote", "command": TIME_SERVER, "where": "remote"})
    config = {
        "edge": {"models": []},
        "apps": [{"name": "bench", "key": KEY, "policy": str(tmp / "policy.yaml")}],
        "mcp": {"servers": servers},
    }
    (tmp / "edgeway.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(tmp / "edgeway.yaml"), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"edgeway exited with {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("edgeway was not ready in 120 s")


async def _measure(url: str, repeat: int) -> dict[str, list[float]]:
    command, *args = TIME_SERVER
    async with (
        stdio_client(StdioServerParameters(command=command, args=args)) as (read, write),
        ClientSession(read, write) as direct,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (gateway_read, gateway_write),
        ClientSession(gateway_read, gateway_write) as gateway,
    ):
        await direct.initialize()
        await gateway.initialize()
        # as a client does before it calls: the SDK checks each result against the listed output schema
        await direct.list_tools()
        await gateway.list_tools()
        calls: dict[str, Call] = {
            "direct": lambda: direct.call_tool("get_current_time", ARGUMENTS),
            "local": lambda: gateway.call_tool("time.get_current_time", ARGUMENTS),
            "remote": lambda: gateway.call_tool("time_remote.get_current_time", ARGUMENTS),
        }
        latencies: dict[str, list[float]] = {name: [] for name in calls}
        for i in range(WARM_UP + repeat):
            for name, call in calls.items():  # in turn, so that the machine's moments fall on all three
                started = time.perf_counter()
                result = await call()
                elapsed = time.perf_counter() - started
                if getattr(result, "is_error", False):
                    raise RuntimeError(f"{name}: the call failed: {result}")
                if i >= WARM_UP:
                    latencies[name].append(elapsed)
        return latencies
