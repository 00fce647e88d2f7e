"""Shadow comparisons, decision by decision, with fake tiers and a deterministic judge.

A sampled request that its rule let reach the cloud is answered by the other tier too, and a
judge compares the two answers in both orders; the verdict is a comparison row, and the shadow
answer and the judge are ledger rows of their own kind, charged to the shadow budget.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from router.answer import Answer, Usage
from router.budget import Caps
from router.comparisons import Comparison, Comparisons
from router.decision import Decision
from router.ledger import MemoryStore
from router.pricing import Price
from router.request import ChatRequest, parse_chat_request, parse_embeddings_request
from router.routing import Router
from router.served import ServedRequest, ShadowPolicy
from router.shadow import Shadower, why_not
from tests.fake_upstream import judgement
from tests.fakes import SCORER_FOR_TESTS, FakeTier

POLICY_CAPS = Caps(5.0, None)
CLOUD_SAYS = "Paris is the capital of France."
EDGE_SAYS = "paris"
POLICY = ShadowPolicy(sample=1.0, judge="judge", daily_usd=5.0, edge="edge", cloud="cloud")


class Judge(FakeTier):
    """Answers a judging prompt as the fake upstream's judge does (a marker in the question)."""

    def __init__(self, biased: str | None = None) -> None:
        super().__init__("judge", "cloud")
        self.biased = biased  # always this verdict, whatever the order: a position-biased judge

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        self.requests.append(request)
        said = f"[[{self.biased}]]" if self.biased else judgement(request.body, CLOUD_SAYS) or ""
        body = {"model": "judge", "choices": [{"index": 0, "message": {"content": said}, "finish_reason": "stop"}]}
        return Answer(body, Usage(100, 10))


def setup(judge: Judge | None = None, **shadower: object) -> tuple[Shadower, FakeTier, FakeTier, Judge]:
    edge, cloud = FakeTier("edge", "edge", text=EDGE_SAYS), FakeTier("cloud", "cloud", text=CLOUD_SAYS)
    judge = judge or Judge()
    prices = {"cloud": Price(1e-6, 2e-6), "judge": Price(1e-5, 1e-5)}
    store = MemoryStore()
    router = Router({"edge": edge, "cloud": cloud, "judge": judge}, SCORER_FOR_TESTS, prices, store)
    return Shadower(router, Comparisons(), store, draw=lambda: 0.0, **shadower), edge, cloud, judge


def served(
    question: str = "What is the capital of France? [judge: cloud]", tier: str = "edge", **decided
) -> ServedRequest:
    request = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": question}]})
    decision = Decision(targets=(tier,), rule="rest", **decided)
    answer = EDGE_SAYS if tier == "edge" else CLOUD_SAYS
    signals = SCORER_FOR_TESTS.signals(request.messages)
    return ServedRequest("req-1", "t", request, signals, decision, tier, tier, answer)


def compared(shadower: Shadower, request: ServedRequest, policy: ShadowPolicy = POLICY) -> list[Comparison]:
    async def go() -> None:
        shadower.consider(request, policy)
        await shadower.drain()

    asyncio.run(go())
    return shadower.comparisons.comparisons()


def test_an_edge_answer_is_compared_with_the_clouds_in_both_orders():
    shadower, edge, cloud, judge = setup()
    (comparison,) = compared(shadower, served())
    assert comparison.verdict == "cloud" and comparison.served == "edge"
    assert (comparison.edge_model, comparison.cloud_model, comparison.judge_model) == ("edge", "cloud", "judge")
    assert len(cloud.requests) == 1 and not cloud.requests[0].stream and edge.requests == []
    first, second = (r.messages[1]["content"] for r in judge.requests)
    assert first.index(EDGE_SAYS) < first.index(CLOUD_SAYS) and second.index(CLOUD_SAYS) < second.index(EDGE_SAYS)
    assert comparison.judge_tokens == 220 and comparison.judge_usd == pytest.approx(220e-5)
    assert comparison.shadow_usd == pytest.approx(10e-6 + 2 * 2e-6)
    assert shadower.stats["compared"] == 1


def test_a_cloud_answer_is_compared_with_the_edges():
    shadower, edge, cloud, _ = setup()
    (comparison,) = compared(shadower, served("What is the capital of France? [judge: edge]", tier="cloud"))
    assert comparison.verdict == "edge" and comparison.served == "cloud" and len(edge.requests) == 1
    assert cloud.requests == []


def test_a_position_biased_judge_is_a_tie_and_no_verdict_is_unjudged():
    shadower, *_ = setup(Judge(biased="A"))
    assert compared(shadower, served())[0].verdict == "tie"  # A both times: each answer won once
    shadower, *_ = setup()
    assert compared(shadower, served("What is 2+2? [judge: none]"))[0].verdict == "unjudged"
    shadower, *_ = setup()
    assert compared(shadower, served("What is 2+2?"))[0].verdict == "tie"


def test_shadow_spend_is_its_own_kind_of_row_charged_to_the_shadow_budget():
    shadower, *_ = setup()
    compared(shadower, served())
    store = shadower.store
    rows = store.rows("t")
    assert sorted(r.kind for r in rows) == ["judge", "shadow"]
    assert all(r.request_id.startswith("req-1:") for r in rows)
    spent = sum(r.cost_usd for r in rows)
    assert store.left("t#shadow", POLICY_CAPS) == pytest.approx(5.0 - spent)
    assert store.left("t", POLICY_CAPS) == pytest.approx(5.0)  # the app's own budget is untouched


def test_when_the_shadow_budget_is_spent_nothing_is_called():
    shadower, edge, cloud, judge = setup()
    shadower.store.charge("t#shadow", 5.0)  # today's comparisons spent it (like requests, at most one over)
    compared(shadower, served())
    assert cloud.requests == judge.requests == [] and shadower.stats["skipped: shadow budget spent"] == 1
    assert shadower.store.left("t", POLICY_CAPS) == pytest.approx(5.0)


def test_a_failed_shadow_answer_gives_its_hold_back():
    from router.errors import UpstreamError

    shadower, _, cloud, judge = setup()
    cloud.fails = UpstreamError("down", provider_status=503)
    assert compared(shadower, served()) == [] and judge.requests == []
    assert shadower.stats["failed"] == 1
    assert shadower.store.left("t#shadow", POLICY_CAPS) == pytest.approx(5.0)


@pytest.mark.parametrize(
    ("decided", "why"),
    [
        ({"cloud_allowed": False}, "kept local"),  # fail-closed, allow_cloud: false, budget spent under edge
        ({"redact": True}, "redacted"),
    ],
)
def test_a_request_kept_local_or_redacted_is_never_shadowed(decided, why):
    shadower, edge, cloud, judge = setup()
    question = "Mail jane.doe@example.com the capital of France [judge: cloud]"
    assert compared(shadower, served(question, **decided)) == []
    assert cloud.requests == judge.requests == edge.requests == [] and shadower.stats[f"skipped: {why}"] == 1


def test_why_a_request_may_not_be_compared():
    _, edge, cloud, _ = setup()
    assert why_not(served(), cloud) is None
    embeddings = dataclasses.replace(served(), request=parse_embeddings_request({"model": "edge", "input": "x"}))
    assert why_not(embeddings, cloud) == "embeddings"
    assert why_not(served(), None) == "no model of the other tier"
    assert why_not(dataclasses.replace(served(), answer=" "), cloud) == "no text answer"
    tools = parse_chat_request(
        {
            "model": "auto",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f"}}],
        }
    )
    assert why_not(dataclasses.replace(served(tier="cloud"), request=tools), edge) == "the edge cannot honor tools"


def test_the_sample_decides_and_a_full_queue_skips():
    shadower, _, cloud, _ = setup()
    shadower.draw = lambda: 0.5
    assert compared(shadower, served(), dataclasses.replace(POLICY, sample=0.2)) == []
    assert cloud.requests == []
    shadower, _, cloud, _ = setup(running=1, waiting=0)

    async def twice() -> None:
        shadower.consider(served(), POLICY)
        shadower.consider(served(), POLICY)
        await shadower.drain()

    asyncio.run(twice())
    assert shadower.stats["compared"] == 1 and shadower.stats["skipped: busy"] == 1


# --- through the gateway, against the fake cloud and its deterministic judge ----------------------
SHADOWED = """
app: {app}
defaults: {{edge: smollm2, cloud: gpt-fake}}
{shadow}
rules:
  - name: email-redacted
    when: {{pii: [EMAIL]}}
    route: cloud
    redact: true
  - name: private-local
    when: {{pii: any}}
    route: edge
    fallback: none
  - name: hard
    when: {{tags: [hard]}}
    route: cloud
  - name: rest
    route: edge
    fallback: cloud
"""
SHADOW_LINE = "shadow: {sample: 1.0, judge: gpt-fake, daily_usd: 5}"
SHADOW_KEYS = {"shadowed": "shadowed-key-0123456789", "plain": "plain-key-0123456789"}
ADMIN = {"authorization": "Bearer admin-key-0123456789"}


@pytest.fixture(scope="module")
def shadow_gateway(upstream, tmp_path_factory):
    from tests.conftest import GatewayProcess, gateway_config

    tmp = tmp_path_factory.mktemp("shadow")
    config = gateway_config(upstream.url, tmp, admin_key="admin-key-0123456789")
    config["cloud"]["models"][0]["price"] = {"input_per_1m": 1000, "output_per_1m": 1000}
    config["apps"] = []
    for app, shadow in (("shadowed", SHADOW_LINE), ("plain", "")):
        (tmp / f"{app}.yaml").write_text(SHADOWED.format(app=app, shadow=shadow))
        config["apps"].append({"name": app, "key": SHADOW_KEYS[app], "policy": str(tmp / f"{app}.yaml")})
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def chat(gateway, app: str, content: str, tags: str = "", stream: bool = False):
    import httpx

    headers = {"authorization": f"Bearer {SHADOW_KEYS[app]}", "x-edgeway-tags": tags}
    body = {"model": "auto", "messages": [{"role": "user", "content": content}], "max_tokens": 6, "stream": stream}
    return httpx.post(gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def quality(gateway, until: int) -> dict:
    """/api/quality once `until` comparisons are in."""
    import time

    import httpx

    deadline = time.monotonic() + 30
    while True:
        found = httpx.get(gateway.url + "/api/quality", params={"app": "shadowed"}, headers=ADMIN).json()
        if found["comparisons"] >= until or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def judged_requests(upstream) -> int:
    from tests.fake_upstream import is_judging

    return sum(is_judging(r.body) for r in upstream.requests)


def test_over_http_every_rule_kind_is_shadowed_or_not_as_its_privacy_says(shadow_gateway, upstream):
    import httpx

    served_edge = chat(shadow_gateway, "shadowed", "Name a colour. [judge: cloud]", stream=True)
    assert served_edge.headers["x-edgeway-route"] == "edge"
    assert quality(shadow_gateway, 1)["verdicts"] == {"cloud": 1}
    served_cloud = chat(shadow_gateway, "shadowed", "Name a fruit. [judge: edge]", tags="hard")
    assert served_cloud.headers["x-edgeway-route"] == "cloud"
    report = quality(shadow_gateway, 2)
    assert report["verdicts"] == {"cloud": 1, "edge": 1} and judged_requests(upstream) == 4
    assert report["edge_served_as_good"]["of"] == 1 and report["edge_served_as_good"]["value"] == 0.0
    assert report["shadow_usd"] > 0 and report["this_replica"]["compared"] == 2
    # the app's router (cold start) measured on the same comparisons: both tiers' quality is known
    assert report["router"]["version"] == 0 and report["router"]["ranked"] == 2 and report["router"]["target"] == 0.95

    upstream.reset()
    private = chat(shadow_gateway, "shadowed", "Call me on +1 415 555 0134 [judge: cloud]")
    assert private.headers["x-edgeway-rule"] == "private-local"
    redacted = chat(shadow_gateway, "shadowed", "Mail jane.doe@example.com a colour [judge: cloud]")
    assert redacted.headers["x-edgeway-rule"] == "email-redacted"
    chat(shadow_gateway, "shadowed", "Name a tree.")  # one more that is compared: everything before it is done
    assert quality(shadow_gateway, 3)["comparisons"] == 3
    assert not upstream.saw_text("555 0134") and not upstream.saw_text("jane.doe")
    bodies = [r.body for r in upstream.requests]
    assert sum("[EMAIL_1]" in str(b) for b in bodies) == 1  # the redacted request itself, nothing after it
    usage = httpx.get(shadow_gateway.url + "/api/usage", params={"app": "shadowed"}, headers=ADMIN).json()
    assert usage["totals"]["requests"] == 5 and usage["totals"]["shadow_usd"] > 0


def test_the_client_gets_the_same_answer_and_headers_with_and_without_a_shadow(shadow_gateway):
    with_shadow = chat(shadow_gateway, "shadowed", "Name a river.", tags="hard")
    without = chat(shadow_gateway, "plain", "Name a river.", tags="hard")
    assert with_shadow.status_code == without.status_code == 200
    unique = {"x-edgeway-request-id", "date", "content-length"}
    assert {k for k in with_shadow.headers if k not in unique} == {k for k in without.headers if k not in unique}
    assert with_shadow.json()["choices"] == without.json()["choices"]
    assert with_shadow.json()["usage"] == without.json()["usage"]


# --- where comparisons are kept -------------------------------------------------------------------
def test_comparisons_are_kept_in_memory_sqlite_and_redis_and_read_back_by_app_and_time(tmp_path, redis_server):
    from router.documents import RedisDocuments, SqliteDocuments

    stores = [
        Comparisons(),
        Comparisons(SqliteDocuments(str(tmp_path / "ledger.db"))),
        Comparisons(RedisDocuments(redis_server.url)),
    ]
    rows = [
        Comparison("a", "t", "rest", 0.2, "edge", "edge", "cloud", "tie", "judge", 10, 0.1, 5, 0.01, ts=100.0),
        Comparison("b", "t", "hard", 0.9, "cloud", "edge", "cloud", "cloud", "judge", ts=200.0),
        Comparison("c", "u", "rest", 0.1, "edge", "edge", "cloud", "edge", "judge", ts=300.0),
    ]
    for store in stores:
        for row in rows:
            store.add(row)
        assert store.comparisons("t") == rows[:2]
        assert store.comparisons(None, since=150.0) == rows[1:]
        assert store.comparisons("t", until=150.0) == rows[:1]
        store.close()
    again = Comparisons(SqliteDocuments(str(tmp_path / "ledger.db")))  # what a restart reads
    assert again.comparisons() == rows
