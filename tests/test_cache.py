"""The response cache: exact hits per app and per resolved model, served at no cost, streamed or
not, kept in memory, SQLite or Redis (shared by replicas), and cleared on demand."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import httpx
import pytest

from policies.schema import DEFAULT_MIN_SIMILARITY
from router.cache import CachePolicy, MemoryCache, RedisCache, SqliteCache
from router.caller import Caller
from router.ledger import MemoryStore
from router.pricing import Price
from router.request import parse_chat_request
from router.routing import Router
from router.semantic import content_words
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

    async def streamed() -> tuple[str, str | None]:  # routed and read in one event loop, as a server does
        routed = await r.stream(ask(), caller)
        text = "".join([c["choices"][0]["delta"].get("content", "") async for c in routed.result if c["choices"]])
        return text, routed.cache

    assert asyncio.run(streamed()) == ("the cached answer", "miss")
    assert asyncio.run(streamed()) == ("the cached answer", "hit") and len(cloud.requests) == 1
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


# --- semantic: the same ask in other words -----------------------------------------------------
SEMANTIC = CachePolicy(3600, semantic=True, min_similarity=0.9)


def semantic_pair() -> tuple[Router, FakeTier, FakeTier]:
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud", text="the cached answer")
    edge.capabilities = frozenset({"embeddings"})  # its fake vectors: [len(text), 1]
    r = Router({"edge": edge, "cloud": cloud}, SCORER_FOR_TESTS, {"cloud": Price(1e-6, 1e-6)}, MemoryStore())
    return r, edge, cloud


def test_the_words_that_carry_an_ask_are_its_content_words_in_order():
    assert content_words("What's the capital of France?") == ("what", "capital", "of", "france")
    assert content_words("  please, what is THE capital of   france ") == ("what", "capital", "of", "france")
    assert content_words("Is 97 a prime number?") != content_words("Is 91 a prime number?")
    assert content_words("Is Paris bigger than London?") != content_words("Is London bigger than Paris?")
    assert content_words("When did the war end?") != content_words("Why did the war end?")
    assert content_words("Is it safe?") != content_words("Is it not safe?")


def test_a_request_in_other_words_is_a_semantic_hit_with_its_similarity():
    r, edge, cloud = semantic_pair()
    caller = Caller("t", policy(CLOUD), cache=SEMANTIC)
    first = asyncio.run(r.complete(ask("What is the capital of France?"), caller))
    assert first.cache == "miss" and edge.requests == []  # no candidate yet: nothing embedded
    again = asyncio.run(r.complete(ask("what is the capital of france"), caller))
    assert again.cache == "hit" and again.similarity is not None and again.similarity > 0.99
    assert len(cloud.requests) == 1 and again.result.body["choices"][0]["message"]["content"] == "the cached answer"
    (embedded,) = edge.requests  # both texts, on the edge: the ask never leaves to be compared
    assert embedded.inputs == ("what is the capital of france", "What is the capital of France?")


def test_a_near_miss_another_context_another_app_or_a_low_similarity_is_not_a_semantic_hit():
    r, edge, cloud = semantic_pair()
    caller = Caller("t", policy(CLOUD), cache=SEMANTIC)
    asyncio.run(r.complete(ask("What is the capital of France?"), caller))
    assert asyncio.run(r.complete(ask("What is the capital of Spain?"), caller)).cache == "miss"
    assert edge.requests == []  # other content words: no candidate, no embedding
    system = {"role": "system", "content": "Answer in French."}
    reworded = [{"role": "user", "content": "what is the capital of france"}]
    assert asyncio.run(r.complete(ask(messages=[system, *reworded]), caller)).cache == "miss"
    assert (
        asyncio.run(r.complete(ask("what is the capital of france"), Caller("u", policy(CLOUD), cache=SEMANTIC))).cache
        == "miss"
    )
    strict = Caller("t", policy(CLOUD), cache=CachePolicy(3600, semantic=True, min_similarity=1.0))
    vetoed = asyncio.run(r.complete(ask("what is the capital of france"), strict))
    assert vetoed.cache == "miss" and len(edge.requests) == 1  # compared, and too far apart
    exact_only = Caller("t", policy(CLOUD), cache=ONE_HOUR)
    assert asyncio.run(r.complete(ask("what is the capital of france?"), exact_only)).cache == "miss"
    assert len(cloud.requests) == 6


def test_one_persons_cached_answer_is_never_served_to_another_in_other_words():
    """The same note to another address: the same content words ("jane", "roe", "example") and
    a near-equal embedding, but not the same private values, so never the same answer."""
    r, edge, cloud = semantic_pair()
    caller = Caller("t", policy(CLOUD), cache=SEMANTIC)
    note = "Draft a short note to {} about the meeting"
    asyncio.run(r.complete(ask(note.format("jane.roe@example.com")), caller))
    for other in ("jane_roe@example.com", "a.roe@example.com", "roe@example.com", "jane+roe@example.com"):
        assert asyncio.run(r.complete(ask(note.format(other)), caller)).cache == "miss", other
    same = asyncio.run(r.complete(ask(note.format("jane.roe@example.com").lower() + "."), caller))
    assert same.cache == "hit"  # the same person, in other words: still served
    assert len(cloud.requests) == 5


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
    semantic = CACHED.replace("app: alpha", "app: beta").replace("{ttl_s: 600}", "{ttl_s: 600, semantic: true}")
    config = gateway_config(upstream.url, tmp, admin_key="admin-key-0123456789")
    config["apps"][0]["policy"] = str(tmp / "alpha.yaml")
    (tmp / "beta-semantic.yaml").write_text(semantic)
    config["apps"][1]["policy"] = str(tmp / "beta-semantic.yaml")
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


def test_a_semantic_hit_over_http_says_how_similar_the_asks_were(cache_gateway, upstream):
    """The bundled edge model embeds both asks locally; its similarity is in a header."""

    def ask_beta(text: str, stream: bool = False) -> httpx.Response:
        body = {"model": "auto", "temperature": 0, "stream": stream, "messages": [{"role": "user", "content": text}]}
        headers = {"authorization": f"Bearer {APP_KEYS['beta']}"}
        return httpx.post(cache_gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)

    first = ask_beta("Why is the sky blue?")
    assert first.headers["x-edgeway-cache"] == "miss" and "x-edgeway-cache-similarity" not in first.headers
    again = ask_beta("why is the sky blue??", stream=True)
    assert again.headers["x-edgeway-cache"] == "hit", again.headers
    assert 0.9 <= float(again.headers["x-edgeway-cache-similarity"]) < 1.0
    deltas = [json.loads(line[6:]) for line in again.text.splitlines() if line.startswith("data: {")]
    replayed = "".join(d["choices"][0]["delta"].get("content") or "" for d in deltas if d["choices"])
    assert replayed == first.json()["choices"][0]["message"]["content"]
    near_miss = ask_beta("Why is the sea blue?")
    assert near_miss.headers["x-edgeway-cache"] == "miss" and len(upstream.requests) == 2


def test_a_policy_reads_semantic_matching_and_refuses_a_similarity_outside_0_to_1():
    from policies.policy import FileError

    text = CLOUD.replace("rules:", "cache: {ttl_s: 60, semantic: true, min_similarity: 0.95}\nrules:")
    assert policy(text).cache() == CachePolicy(60, semantic=True, min_similarity=0.95)
    assert policy(CLOUD.replace("rules:", "cache: {semantic: true}\nrules:")).cache() == CachePolicy(
        3600, semantic=True, min_similarity=DEFAULT_MIN_SIMILARITY
    )
    with pytest.raises(FileError, match="min_similarity"):
        policy(CLOUD.replace("rules:", "cache: {semantic: true, min_similarity: 1.5}\nrules:"))
