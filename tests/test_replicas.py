"""Many gateway replicas on one real Redis: a global budget, and Redis going away and coming back."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest
import redis

from tests.conftest import GatewayProcess, gateway_config

KEY = "shared-app-key-0123456789"
POLICY = """
app: shared
defaults: {cloud: gpt-fake}
budget: {daily_usd: 0.1, on_exhausted: deny}
rules:
  - name: cloud
    route: cloud
"""
PRICE = {"input_per_1m": 1000.0, "output_per_1m": 1000.0}  # $0.001 a token
MAX_TOKENS = 20


def shared_config(upstream, tmp, store: str) -> dict:
    (tmp / "shared.yaml").write_text(POLICY)
    config = gateway_config(upstream.url, tmp, store=store)
    config["cloud"]["models"][0]["price"] = PRICE
    config["apps"] = [{"name": "shared", "key": KEY, "policy": str(tmp / "shared.yaml")}]
    return config


def ask(gateway: GatewayProcess) -> int:
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0)
    try:
        client.chat.completions.create(
            model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=MAX_TOKENS
        )
        return 200
    except openai.APIStatusError as exc:
        return exc.status_code


def spend(server) -> float:
    client = redis.Redis(port=server.port)
    return sum(float(client.get(k)) for k in client.keys("edgeway:spend:shared:????-??-??"))


def test_two_replicas_on_one_redis_hold_one_daily_budget(upstream, redis_server, tmp_path):
    config = shared_config(upstream, tmp_path, redis_server.url)
    first, second = GatewayProcess(config, tmp_path), GatewayProcess(config, tmp_path)
    try:
        first.wait_ready(), second.wait_ready()
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda i: ask(first if i % 2 else second), range(24)))
        assert statuses.count(200) >= 2 and statuses.count(429) >= 10, statuses
        # The replicas write their rows and charges in the background: wait for them (a busy
        # machine lags).
        deadline = time.monotonic() + 10
        rows = redis.Redis(port=redis_server.port)
        while rows.zcard("edgeway:usage") < len(statuses) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        # each request's worst case was held before it was sent, so the day never passes its cap
        assert 0 < spend(redis_server) <= 0.1
        assert set(statuses) <= {200, 429}
        assert rows.zcard("edgeway:usage") == len(statuses)
    finally:
        first.stop()
        second.stop()


def test_two_replicas_on_one_redis_share_one_response_cache_and_only_within_the_app(upstream, redis_server, tmp_path):
    config = shared_config(upstream, tmp_path, redis_server.url)
    (tmp_path / "shared.yaml").write_text(POLICY.replace("budget:", "cache: {ttl_s: 600}\nbudget:"))
    (tmp_path / "other.yaml").write_text(
        POLICY.replace("app: shared", "app: other").replace("budget:", "cache: {ttl_s: 600}\nbudget:")
    )
    config["apps"].append({"name": "other", "key": "other-app-key-0123456789", "policy": str(tmp_path / "other.yaml")})
    first, second = GatewayProcess(config, tmp_path), GatewayProcess(config, tmp_path)
    question = {"model": "auto", "messages": [{"role": "user", "content": "Capital of Chile?"}], "temperature": 0}

    def post(gateway: GatewayProcess, key: str = KEY, stream: bool = False) -> httpx.Response:
        return httpx.post(
            gateway.url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {key}"},
            json={**question, "max_tokens": MAX_TOKENS, "stream": stream},
            timeout=30,
        )

    try:
        first.wait_ready(), second.wait_ready()
        missed = post(first)
        assert missed.headers["x-edgeway-cache"] == "miss" and len(upstream.requests) == 1
        hit = post(second)  # the other replica, on the same Redis
        assert hit.headers["x-edgeway-cache"] == "hit", hit.headers
        assert hit.json()["choices"] == missed.json()["choices"] and hit.json()["usage"] == missed.json()["usage"]
        streamed = post(second, stream=True)
        assert streamed.headers["x-edgeway-cache"] == "hit" and missed.json()["choices"][0]["message"][
            "content"
        ] in "".join(
            chunk["choices"][0]["delta"].get("content") or ""
            for line in streamed.text.splitlines()
            if line.startswith("data: {") and (chunk := json.loads(line[6:]))["choices"]
        )
        assert len(upstream.requests) == 1  # neither hit reached the provider
        other = post(second, key="other-app-key-0123456789")  # the same question from another app
        assert other.headers["x-edgeway-cache"] == "miss" and len(upstream.requests) == 2
    finally:
        first.stop()
        second.stop()


def test_redis_down_the_gateway_serves_reports_degraded_and_writes_the_missed_rows_later(
    upstream, redis_server, tmp_path
):
    config = shared_config(upstream, tmp_path, redis_server.url)
    config["apps"][0]["policy"] = None  # no budget here: the plain rules, edge first
    gateway = GatewayProcess(config, tmp_path)
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0)
    try:
        gateway.wait_ready()
        client.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
        redis_server.stop()
        for _ in range(4):
            answer = client.chat.completions.create(
                model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=2
            )
            assert answer.choices[0].message.content is not None
        deadline = time.monotonic() + 5
        while httpx.get(gateway.url + "/readyz").json()["status"] != "degraded":
            assert time.monotonic() < deadline, "the gateway did not report the outage"
            time.sleep(0.1)
        assert "redis unreachable" in httpx.get(gateway.url + "/readyz").json()["store"]
        redis_server.start()
        deadline = time.monotonic() + 10
        while httpx.get(gateway.url + "/readyz").json()["status"] != "ready":
            assert time.monotonic() < deadline, "the gateway did not recover"
            time.sleep(0.1)
        assert redis.Redis(port=redis_server.port).zcard("edgeway:usage") == 5
    finally:
        gateway.stop()


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_redis_down_two_replicas_spend_at_most_their_shares_and_one_request_each(upstream, redis_server, tmp_path):
    """`store_outage: local`: a replica that cannot read the shared spend spends from its share
    of what was left (one in as many replicas as Redis last counted): the cap holds within one
    request a replica, where each replica's own counters let both spend the whole cap (2x)."""
    config = shared_config(upstream, tmp_path, redis_server.url)
    (tmp_path / "shared.yaml").write_text(
        POLICY.replace("on_exhausted: deny", "on_exhausted: deny, store_outage: local")
    )
    first, second = GatewayProcess(config, tmp_path), GatewayProcess(config, tmp_path)
    try:
        first.wait_ready(), second.wait_ready()
        assert ask(first) == ask(second) == 200  # both seen by Redis, and each other counted
        redis_server.stop()
        statuses = [ask(first if i % 2 else second) for i in range(24)]
        assert statuses.count(200) >= 1 and set(statuses) <= {200, 429}, statuses
        redis_server.start()
        deadline = time.monotonic() + 15
        while redis.Redis(port=redis_server.port).zcard("edgeway:usage") < 26:
            assert time.monotonic() < deadline, "the rows written during the outage did not arrive"
            time.sleep(0.2)
        one_request = (MAX_TOKENS + 50) * 0.001
        assert spend(redis_server) <= 0.1 + 2 * one_request, (spend(redis_server), statuses)
    finally:
        first.stop()
        second.stop()
