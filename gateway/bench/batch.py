"""Interactive requests beside a batch: does batch work on the edge cost them their time to first
token? A short streamed request to the edge model, sent one at a time, is timed to its first
token on an idle edge, then while a batch of long answers keeps the edge busy, then beside the
same work sent as ordinary (interactive) requests at the batch's concurrency, which is what a
gateway without priorities would do. The target: within 10% of the idle edge beside a batch.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx

from gateway.bench.overhead import APP_KEY, Server, edgeway_command, upstream_command, write_configs
from gateway.bench.ports import free_port

TARGET = 1.10
CONCURRENCY = 2  # the batch's lines in flight, and the interactive load it is compared with
LINE = {"model": "smollm2", "max_tokens": 160, "temperature": 0, "messages": [{"role": "user", "content": ""}]}
SHORT = {"model": "smollm2", "max_tokens": 4, "stream": True, "messages": [{"role": "user", "content": "Say hi."}]}


def first_token_s(client: httpx.Client) -> float:
    started = time.perf_counter()
    with client.stream("POST", "/v1/chat/completions", json=SHORT) as answer:
        for line in answer.iter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:])["choices"]
                if choices and choices[0]["delta"].get("content"):
                    return time.perf_counter() - started
    raise RuntimeError("the stream ended without a token")


def probe(client: httpx.Client, count: int) -> list[float]:
    times = []
    for _ in range(count):
        times.append(first_token_s(client))
        time.sleep(0.2)  # not back to back: arrivals land in different phases of the edge's steps
    return times


def batch_lines(count: int) -> bytes:
    lines = []
    for i in range(count):
        body = {**LINE, "messages": [{"role": "user", "content": f"Write a long story about lighthouse {i}."}]}
        lines.append({"custom_id": f"line-{i}", "method": "POST", "url": "/v1/chat/completions", "body": body})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def beside_batch(client: httpx.Client, count: int) -> tuple[list[float], int, float]:
    """First-token times while a batch runs; how many lines it finished meanwhile, and in how long."""
    upload = client.post("/v1/files", files={"file": ("lines.jsonl", batch_lines(200))}, data={"purpose": "batch"})
    upload.raise_for_status()
    body = {"input_file_id": upload.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    batch = client.post("/v1/batches", json=body).json()
    while client.get(f"/v1/batches/{batch['id']}").json()["request_counts"]["completed"] < 1:
        time.sleep(0.1)
    started = time.perf_counter()
    before = client.get(f"/v1/batches/{batch['id']}").json()["request_counts"]["completed"]
    times = probe(client, count)
    took = time.perf_counter() - started
    after = client.get(f"/v1/batches/{batch['id']}").json()
    client.post(f"/v1/batches/{batch['id']}/cancel")
    if after["status"] != "in_progress":
        raise RuntimeError(f"the batch ended ({after['status']}) before the probes did: give it more lines")
    while client.get(f"/v1/batches/{batch['id']}").json()["status"] != "cancelled":
        time.sleep(0.2)
    return times, after["request_counts"]["completed"] - before, took


def beside_interactive(client: httpx.Client, count: int) -> list[float]:
    """First-token times while CONCURRENCY clients send the batch's work as ordinary requests."""
    stop = threading.Event()

    def busy(i: int) -> None:
        with httpx.Client(base_url=str(client.base_url), headers=client.headers, timeout=300) as own:
            n = 0
            while not stop.is_set():
                body = {**LINE, "messages": [{"role": "user", "content": f"Write a long story about ship {i}-{n}."}]}
                own.post("/v1/chat/completions", json=body)
                n += 1

    workers = [threading.Thread(target=busy, args=(i,)) for i in range(CONCURRENCY)]
    for worker in workers:
        worker.start()
    try:
        time.sleep(1.0)
        return probe(client, count)
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def run(repeat: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream_port = free_port()
        config, _ = write_configs(tmp, upstream_port)
        settings = json.loads(config.read_text())
        config.write_text(json.dumps({**settings, "batches": {"concurrency": CONCURRENCY}}))
        upstream = Server("upstream", upstream_port, "/v1/chat/completions", {}, {"model": "bench", "messages": []})
        edgeway = Server("edgeway", free_port(), "/v1/chat/completions", {"authorization": f"Bearer {APP_KEY}"}, SHORT)
        try:
            upstream.start(upstream_command(upstream_port))
            edgeway.start(edgeway_command(config, edgeway.port))
            headers = {"authorization": f"Bearer {APP_KEY}"}
            with httpx.Client(base_url=f"http://127.0.0.1:{edgeway.port}", headers=headers, timeout=300) as client:
                probe(client, 3)  # warm
                idle, batch, interactive, finished, seconds = [], [], [], 0, 0.0
                for _ in range(repeat):  # alternating, so that the machine's drift falls on every case
                    idle += probe(client, 10)
                    times, lines, took = beside_batch(client, 10)
                    batch += times
                    finished, seconds = finished + lines, seconds + took
                    interactive += beside_interactive(client, 10)
        finally:
            edgeway.stop()
            upstream.stop()
    base = statistics.median(idle)
    print(f"time to first token of a short edge request ({repeat} rounds of 10, alternating; ms)")
    print(f"target: beside a batch, the median within {TARGET:.2f}x of an idle edge")
    print(f"{'edge':<40} {'p50':>7} {'p90':>7} {'p50/idle':>9}")
    for name, times in (
        ("idle", idle),
        (f"beside a batch ({CONCURRENCY} lines in flight)", batch),
        (f"beside {CONCURRENCY} interactive requests", interactive),
    ):
        p50, p90 = statistics.median(times), statistics.quantiles(times, n=10)[-1]
        print(f"{name:<40} {p50 * 1e3:>7.1f} {p90 * 1e3:>7.1f} {p50 / base:>8.2f}x")
    print(f"the batch meanwhile: {finished} lines of {LINE['max_tokens']} tokens in {seconds:.1f} s")
