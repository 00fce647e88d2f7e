"""The deployment of configs/deploy/ (compose, the Kubernetes base) as processes on loopback: two
gateway replicas on one `redis-server`, one edge node (`edgeway serve --edge-only`), a client that
goes round robin over the replicas, as the load balancer does. One replica is killed mid-stream:
the client retries elsewhere, and every request that got its whole answer has exactly one ledger
row. The edge node is killed: edge requests go on, on the replicas' own edge model."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import APP_KEYS, GatewayProcess, gateway_config

ADMIN = "admin-key-topology-0123"
NODE_KEY = "node-key-topology-0123"
ASK = {"model": "gpt-fake", "stream": True, "messages": [{"role": "user", "content": "Tell me about lighthouses."}]}


def answered(url: str) -> str | None:
    """The request id of a whole streamed answer from `url`, or None if the replica failed it."""
    headers = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
    try:
        with httpx.stream("POST", url + "/v1/chat/completions", json=ASK, headers=headers, timeout=20) as answer:
            if answer.status_code != 200:
                return None
            lines = [line for line in answer.iter_lines() if line]
            whole = lines and lines[-1] == "data: [DONE]" and not any('"error"' in line for line in lines)
            return answer.headers["x-edgeway-request-id"] if whole else None
    except httpx.HTTPError:
        return None


def test_a_replica_killed_mid_stream_loses_no_answered_request_and_a_dead_edge_node_is_routed_around(
    upstream, redis_server, tmp_path
):
    node = GatewayProcess(
        {
            "edge": {"models": [{"name": "smollm2", "n_ctx": 2048, "n_threads": 1}]},
            "apps": [{"name": "gateways", "key": NODE_KEY}],
        },
        tmp_path,
        args=["--edge-only"],
    ).wait_ready()
    config = gateway_config(upstream.url, tmp_path, store=redis_server.url, admin_key=ADMIN)
    config["edge"] = {
        "models": [{"name": "smollm2", "n_ctx": 2048, "n_threads": 1}],
        "nodes": [{"url": node.url + "/v1", "api_key": NODE_KEY}],
    }
    replicas = [GatewayProcess(config, tmp_path).wait_ready() for _ in range(2)]
    upstream.tokens_per_s = 15  # each stream takes about a second: the kill finds some mid-way
    turn = iter(range(10**6))
    lock = threading.Lock()
    broken: list[str] = []  # replicas that failed a request

    def round_robin(_: int) -> str | None:
        for _attempt in range(3):  # as a client behind a balancer retries a broken request
            with lock:
                alive = [r for r in replicas if r.process.poll() is None]  # the balancer's health check
                replica = alive[next(turn) % len(alive)]
            found = answered(replica.url)
            if found is not None:
                return found
            broken.append(replica.url)
        return None

    try:
        with ThreadPoolExecutor(8) as pool:
            running = pool.map(round_robin, range(16))
            time.sleep(0.6)
            replicas[0].process.send_signal(signal.SIGKILL)  # no drain: a crash
            ids = list(running)
        assert all(ids), "a request got no whole answer from either replica"
        assert broken and set(broken) == {replicas[0].url}  # the kill cut streams, and only those
        time.sleep(1.0)  # the surviving replica's ledger writer flushes to Redis
        rows = httpx.get(
            replicas[1].url + "/api/usage", headers={"authorization": f"Bearer {ADMIN}"}, params={"group_by": "app"}
        ).json()
        kept = Counter(row["request_id"] for row in rows["recent"])
        assert all(kept[request_id] == 1 for request_id in ids), kept

        upstream.tokens_per_s = 0
        node.stop()
        edge = {"model": "smollm2", "max_tokens": 8, "messages": [{"role": "user", "content": "Say hi."}]}
        headers = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
        for _ in range(3):
            served = httpx.post(replicas[1].url + "/v1/chat/completions", json=edge, headers=headers, timeout=60)
            assert served.status_code == 200 and served.headers["x-edgeway-route"] == "edge"
    finally:
        for process in (*replicas, node):
            process.stop()
