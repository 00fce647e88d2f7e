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
from router.comparisons import Comparison, MemoryComparisons
from router.decision import Decision
from router.ledger import MemoryStore
from router.pricing import Price
from router.request import ChatRequest, parse_chat_request, parse_embeddings_request
from router.routing import Router
from router.shadow import ServedRequest, Shadower, ShadowPolicy, why_not
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
    router = Router({"edge": edge, "cloud": cloud, "judge": judge}, SCORER_FOR_TESTS, prices, MemoryStore())
    return Shadower(router, MemoryComparisons(), draw=lambda: 0.0, **shadower), edge, cloud, judge


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
    store = shadower.router.store
    rows = store.rows("t")
    assert sorted(r.kind for r in rows) == ["judge", "shadow"]
    assert all(r.request_id.startswith("req-1:") for r in rows)
    spent = sum(r.cost_usd for r in rows)
    assert store.left("t#shadow", POLICY_CAPS) == pytest.approx(5.0 - spent)
    assert store.left("t", POLICY_CAPS) == pytest.approx(5.0)  # the app's own budget is untouched


def test_when_the_shadow_budget_is_spent_nothing_is_called():
    shadower, edge, cloud, judge = setup()
    shadower.router.store.charge("t#shadow", 5.0)  # today's comparisons spent it (like requests, at most one over)
    compared(shadower, served())
    assert cloud.requests == judge.requests == [] and shadower.stats["skipped: shadow budget spent"] == 1
    assert shadower.router.store.left("t", POLICY_CAPS) == pytest.approx(5.0)


def test_a_failed_shadow_answer_gives_its_hold_back():
    from router.errors import UpstreamError

    shadower, _, cloud, judge = setup()
    cloud.fails = UpstreamError("down", provider_status=503)
    assert compared(shadower, served()) == [] and judge.requests == []
    assert shadower.stats["failed"] == 1
    assert shadower.router.store.left("t#shadow", POLICY_CAPS) == pytest.approx(5.0)


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
