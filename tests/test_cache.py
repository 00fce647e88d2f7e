"""The response cache: exact hits per app and per resolved model, served at no cost, streamed or
not, kept in memory, SQLite or Redis (shared by replicas), and cleared on demand."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from router.cache import CachePolicy, MemoryCache, RedisCache, SqliteCache
from router.ledger import MemoryStore
from router.pricing import Price
from router.request import parse_chat_request
from router.routing import Caller, Router
from tests.conftest import APP_KEYS, GatewayProcess, RedisServer, gateway_config
from tests.fakes import SCORER_FOR_TESTS, FakeTier
from tests.test_router import policy

CLOUD = "app: t\ndefaults: {edge: edge, cloud: cloud}\nrules:\n  - {name: all, route: cloud, fallback: edge}\n"
ONE_HOUR = CachePolicy(3600)


def routed_pair(cache: MemoryCache | None = None) -> tuple[Router, FakeTier, FakeTier]:
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud", text="the cached answer")
    r = Router({"edge": edge, "cloud": cloud}, SCORER_FOR_TESTS, {"cloud": Price(1e-6, 1e-6)}, MemoryStore(), cache)
    return r, edge, cloud


def ask(text: str = "What is 2+2?", **body: object):
    return parse_chat_request(
        {"model": "auto", "temperature": 0, "messages": [{"role": "user", "content": text}], **body}
    )


def test_the_same_request_of_the_same_app_is_answered_from_the_cache_without_calling_a_model():
    r, _, cloud = routed_pair()
    caller = Caller("t", policy(CLOUD), cache=ONE_HOUR)
    first = asyncio.run(r.complete(ask(), caller))
    second = asyncio.run(r.complete(ask(), caller))
    assert (first.cache, second.cache) == ("miss", "hit")
    assert len(cloud.requests) == 1 and second.model is cloud
    assert second.result.body["choices"][0]["message"]["content"] == "the cached answer"
    assert second.result.usage.completion_tokens == first.result.usage.completion_tokens


def test_another_app_another_question_or_a_sampled_answer_is_not_a_hit():
    r, _, cloud = routed_pair()
    asyncio.run(r.complete(ask(), Caller("t", policy(CLOUD), cache=ONE_HOUR)))
    assert asyncio.run(r.complete(ask(), Caller("u", policy(CLOUD), cache=ONE_HOUR))).cache == "miss"
    assert asyncio.run(r.complete(ask("What is 3+3?"), Caller("t", policy(CLOUD), cache=ONE_HOUR))).cache == "miss"
    sampled = ask(temperature=0.8)
    assert asyncio.run(r.complete(sampled, Caller("t", policy(CLOUD), cache=ONE_HOUR))).cache is None
    asyncio.run(r.complete(sampled, Caller("t", policy(CLOUD), cache=CachePolicy(3600, sampled=True))))
    assert (
        asyncio.run(r.complete(sampled, Caller("t", policy(CLOUD), cache=CachePolicy(3600, sampled=True)))).cache
        == "hit"
    )
    assert len(cloud.requests) == 5


def test_auto_caches_what_it_resolved_to():
    r, edge, cloud = routed_pair()
    edge_first = "app: t\ndefaults: {edge: edge, cloud: cloud}\nrules:\n  - {name: all, route: edge, fallback: cloud}\n"
    asyncio.run(r.complete(ask(), Caller("t", policy(CLOUD), cache=ONE_HOUR)))
    routed = asyncio.run(r.complete(ask(), Caller("t", policy(edge_first), cache=ONE_HOUR)))
    assert routed.cache == "miss" and routed.model is edge  # the cloud's cached answer is not the edge's


def test_a_streamed_answer_is_cached_when_it_ends_and_replayed_as_a_stream():
    r, _, cloud = routed_pair()
    caller = Caller("t", policy(CLOUD), cache=ONE_HOUR)

    async def text(routed) -> str:
        return "".join([c["choices"][0]["delta"].get("content", "") async for c in routed.result if c["choices"]])

    first = asyncio.run(r.stream(ask(), caller))
    assert asyncio.run(text(first)) == "the cached answer"
    again = asyncio.run(r.stream(ask(), caller))
    assert again.cache == "hit" and asyncio.run(text(again)) == "the cached answer" and len(cloud.requests) == 1
    whole = asyncio.run(r.complete(ask(), caller))
    assert whole.cache == "hit"


def test_a_fallbacks_answer_is_not_kept_as_the_first_targets():
    from router.errors import UpstreamError

    r, edge, cloud = routed_pair()
    cloud.fails = UpstreamError("down", provider_status=503)
    caller = Caller("t", policy(CLOUD), cache=ONE_HOUR)
    assert asyncio.run(r.complete(ask(), caller)).model is edge  # the fallback answered
    cloud.fails = None
    again = asyncio.run(r.complete(ask(), caller))
    assert again.model is cloud and again.cache == "miss" and len(cloud.requests) == 2


# --- the stores -------------------------------------------------------------------------------
def test_memory_cache_drops_the_least_recently_used_past_its_bounds_and_expires_entries():
    cache = MemoryCache(max_entries=2, max_bytes=10)
    cache.put("a", "1", b"xxxx", 60)
    cache.put("a", "2", b"yyyy", 60)
    cache.get("a", "1")
    cache.put("a", "3", b"zzzz", 60)  # over 2 entries: "2", the least recently used, goes
    assert cache.get("a", "2") is None and cache.get("a", "1") == b"xxxx"
    cache.put("a", "4", b"123456789", 60)  # over 10 bytes: the rest goes
    assert cache.get("a", "1") is None and cache.get("a", "4") == b"123456789"
    cache.put("a", "5", b"v", 0.01)
    time.sleep(0.03)
    assert cache.get("a", "5") is None


def test_sqlite_cache_keeps_entries_across_instances_until_they_expire(tmp_path):
    path = str(tmp_path / "ledger.db")
    SqliteCache(path).put("a", "k", b"answer", 60)
    SqliteCache(path).put("a", "old", b"stale", 0.01)
    time.sleep(0.03)
    reopened = SqliteCache(path)
    assert reopened.get("a", "k") == b"answer" and reopened.get("a", "old") is None
    assert reopened.get("b", "k") is None
    assert reopened.clear("a") == 1 and reopened.get("a", "k") is None


def test_redis_cache_is_shared_by_replicas_and_expired_by_redis(redis_server: RedisServer):
    one, two = RedisCache(redis_server.url), RedisCache(redis_server.url)
    one.put("a", "k", b"answer", 1)
    assert two.get("a", "k") == b"answer" and two.get("b", "k") is None
    time.sleep(2.1)
    assert two.get("a", "k") is None
    one.put("a", "k2", b"x", 60)
    assert two.clear("a") == 1 and one.get("a", "k2") is None


def test_a_cache_whose_redis_is_away_is_a_miss_not_an_error():
    away = RedisCache("redis://127.0.0.1:1/0")
    away.put("a", "k", b"x", 60)
    assert away.get("a", "k") is None


# --- through the gateway ------------------------------------------------------------------------
CACHED = """
app: alpha
defaults: {cloud: gpt-fake}
cache: {ttl_s: 600}
rules:
  - name: cloud
    route: cloud
"""


@pytest.fixture(scope="module")
def cache_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("cache")
    (tmp / "alpha.yaml").write_text(CACHED)
    config = gateway_config(upstream.url, tmp, admin_key="admin-key-0123456789")
    config["apps"][0]["policy"] = str(tmp / "alpha.yaml")
    config["cloud"]["models"][0]["price"] = {"input_per_1m": 1000, "output_per_1m": 1000}
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def post(gateway: GatewayProcess, stream: bool = False) -> httpx.Response:
    body = {"model": "auto", "temperature": 0, "stream": stream, "messages": [{"role": "user", "content": "Cache me"}]}
    return httpx.post(
        gateway.url + "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {APP_KEYS['alpha']}"}
    )


def test_a_hit_costs_nothing_counts_as_saved_and_replays_as_a_stream(cache_gateway, upstream):
    admin = {"authorization": "Bearer admin-key-0123456789"}
    first, second = post(cache_gateway), post(cache_gateway)
    assert (first.headers["x-edgeway-cache"], second.headers["x-edgeway-cache"]) == ("miss", "hit")
    assert second.json()["choices"] == first.json()["choices"] and len(upstream.requests) == 1
    streamed = post(cache_gateway, stream=True)
    assert streamed.headers["x-edgeway-cache"] == "hit" and "This is the fake cloud" in streamed.text
    usage = httpx.get(cache_gateway.url + "/api/usage", params={"app": "alpha"}, headers=admin).json()
    hits = [row for row in usage["recent"] if row["cache"] == "hit"]
    assert len(hits) == 2 and all(row["cost_usd"] == 0 and row["counterfactual_usd"] > 0 for row in hits)
    assert usage["totals"]["cache_hits"] == 2 and usage["totals"]["cache_saved_usd"] > 0
    cleared = httpx.delete(cache_gateway.url + "/api/cache", params={"app": "alpha"}, headers=admin)
    assert cleared.json() == {"app": "alpha", "deleted": 1}
    assert post(cache_gateway).headers["x-edgeway-cache"] == "miss"
    refused = httpx.delete(
        cache_gateway.url + "/api/cache",
        params={"app": "alpha"},
        headers={"authorization": f"Bearer {APP_KEYS['alpha']}"},
    )
    assert refused.status_code == 401
