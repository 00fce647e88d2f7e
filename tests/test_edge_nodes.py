"""A gateway balancing its edge model across this machine and a remote `edgeway serve --edge-only`."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai

from tests.conftest import GatewayProcess

HELLO = [{"role": "user", "content": "Say hello."}]


def test_requests_balance_over_local_and_remote_edge_and_a_dead_node_is_left_out(tmp_path):
    # Two llama.cpp processes share this machine's cores: one thread each, or their spinning
    # threads preempt each other and every token waits out a time slice.
    # The node has apps, as one on another machine must: the gateway sends it one of their keys.
    node = GatewayProcess(
        {
            "edge": {"models": [{"name": "smollm2", "n_ctx": 2048, "n_threads": 1}]},
            "apps": [{"name": "gateway", "key": "node-key-for-the-gateway"}],
        },
        tmp_path,
        args=["--edge-only"],
    ).wait_ready()
    gateway = GatewayProcess(
        {
            "edge": {
                "models": [{"name": "smollm2", "n_ctx": 2048, "parallel": 2, "n_threads": 1}],
                "nodes": [{"url": node.url + "/v1", "api_key": "node-key-for-the-gateway"}],
            }
        },
        tmp_path,
    ).wait_ready()
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key="local", max_retries=0, timeout=60)
    try:
        with ThreadPoolExecutor(6) as pool:
            answers = list(
                pool.map(
                    lambda _: client.chat.completions.create(
                        model="auto", messages=HELLO, max_tokens=24, temperature=0
                    ),
                    range(12),
                )
            )
        assert all(a.choices[0].message.content for a in answers)
        members = httpx.get(gateway.url + "/readyz").json()["edge_nodes"]["smollm2"]
        local, remote = members[0], members[1]
        assert remote["healthy"] is True
        assert local["served"] > 0 and remote["served"] > 0, members  # both took part
        assert local["served"] + remote["served"] == 12
        assert httpx.get(node.url + "/v1/models").status_code == 401  # the node is not open to anyone
        node.stop()
        deadline = time.monotonic() + 10
        while httpx.get(gateway.url + "/readyz").json()["edge_nodes"]["smollm2"][1]["healthy"]:
            assert time.monotonic() < deadline, "the dead node was not noticed"
            time.sleep(0.2)
        for _ in range(3):  # everything goes to this machine now, and nothing fails
            assert client.chat.completions.create(model="auto", messages=HELLO, max_tokens=4).choices
        after = httpx.get(gateway.url + "/readyz").json()["edge_nodes"]["smollm2"]
        assert after[0]["served"] == local["served"] + 3
    finally:
        gateway.stop()
        node.stop()
