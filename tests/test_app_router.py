"""Rules with `route: auto`: the app's router puts the edge or the cloud first by its score, and where
the edge reads the prompt first, the reading decides, the edge answering from the same prefill.
Fake tiers; what only a real server shows is in test_edge_first.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from policies.policy import Models, parse_policy
from policies.schema import DEFAULT_READING_TOKENS
from policies.yaml_source import FileError
from router.app_router import AppRouter, Combination, logit
from router.caller import Caller
from router.decision import Policy
from router.installed import InstalledRouters
from router.ledger import MemoryStore
from router.policy_rules import PolicyRules
from router.request import ChatRequest, parse_chat_request
from router.routing import Router
from router.tier import Tier
from tests.fakes import FakeReader, FakeTier, FixedComplexity

MODELS = Models(("edge",), ("cloud",))


def auto_policy(reading: str = "always", threshold: float = 0.5, band: tuple[float, float] = (0.3, 0.7)) -> str:
    return f"""
app: t
defaults: {{edge: edge, cloud: cloud}}
router: {{edge_reading: {reading}, band: [{band[0]}, {band[1]}], threshold: {threshold}}}
rules:
  - name: pii-stays-local
    when: {{pii: [US_SSN]}}
    route: edge
    fallback: none
  - name: decide
    route: auto
"""


def caller(text: str) -> Caller:
    app_policy = parse_policy(text, MODELS)
    policy: Policy = PolicyRules(lambda: app_policy)
    return Caller("t", policy)


def router(edge: FakeTier, complexity: float, routers: InstalledRouters | None = None) -> tuple[Router, FakeTier]:
    cloud = FakeTier("cloud", "cloud", text="cloud answer")
    tiers: dict[str, Tier] = {"edge": edge, "cloud": cloud}
    return Router(tiers, FixedComplexity(complexity), store=MemoryStore(), routers=routers), cloud


def ask(text: str = "Explain how a heat pump works.") -> ChatRequest:
    return parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": text}]})


def test_without_a_reading_the_text_score_puts_the_edge_or_the_cloud_first():
    for complexity, first in ((0.2, "edge"), (0.8, "cloud")):
        r, _ = router(FakeTier("edge", "edge"), complexity)
        _, decision = r.decide(ask(), caller(auto_policy("never")))
        assert decision.targets[0] == first and decision.score == pytest.approx(complexity)
        assert decision.auto is not None and not decision.auto.read_first


def test_the_band_says_which_requests_the_edge_reads():
    for complexity, reads in ((0.1, False), (0.5, True), (0.9, False)):
        r, _ = router(FakeReader(reading=0.0), complexity)
        _, decision = r.decide(ask(), caller(auto_policy("band", band=(0.3, 0.7))))
        assert decision.auto is not None and decision.auto.read_first is reads
        assert decision.targets[0] == ("edge" if reads or complexity < 0.5 else "cloud")


def test_an_edge_model_without_a_probe_never_reads():
    edge = FakeReader()
    edge.probe = None
    r, _ = router(edge, 0.5)
    _, decision = r.decide(ask(), caller(auto_policy("always")))
    assert decision.auto is not None and not decision.auto.read_first and decision.score == pytest.approx(0.5)


def test_a_reading_that_says_easy_keeps_the_answer_on_the_edge_from_the_same_prefill():
    edge = FakeReader(reading=-3.0, combine=(1.0, 1.0, 0.0))
    r, cloud = router(edge, 0.5)
    routed = asyncio.run(r.complete(ask(), caller(auto_policy("always"))))
    assert routed.route == "edge" and edge.kept == [True] and cloud.requests == []
    expected = 1 / (1 + 2.718281828459045 ** -(logit(0.5) - 3.0))
    assert routed.decision.score == pytest.approx(expected) and routed.decision.auto.reading == -3.0


def test_a_reading_that_says_hard_sends_the_request_to_the_cloud_with_the_edge_last():
    edge = FakeReader(reading=3.0)
    r, cloud = router(edge, 0.5)
    routed = asyncio.run(r.complete(ask(), caller(auto_policy("always"))))
    assert routed.route == "cloud" and edge.kept == [False] and len(cloud.requests) == 1
    assert routed.decision.targets == ("cloud", "edge") and routed.decision.score > 0.5


def test_the_policy_bounds_how_much_of_the_prompt_the_edge_reads():
    for spec, bound in (("", DEFAULT_READING_TOKENS), (", reading_tokens: 64", 64), (", reading_tokens: null", None)):
        edge = FakeReader(reading=3.0)
        r, _ = router(edge, 0.5)
        policy = auto_policy("always").replace("threshold: 0.5}", f"threshold: 0.5{spec}}}")
        routed = asyncio.run(r.complete(ask(), caller(policy)))
        assert edge.bounds == [bound] and routed.decision.auto.reading_tokens == bound
        asyncio.run(r.explain(ask(), caller(policy)))  # the dry run reads as the request would
        assert edge.bounds == [bound, bound]
    with pytest.raises(FileError, match="reading_tokens"):
        parse_policy(auto_policy("always").replace("threshold: 0.5}", "threshold: 0.5, reading_tokens: 8}"), MODELS)


def test_a_private_request_is_never_read_for_the_cloud():
    edge = FakeReader(reading=9.0)
    r, cloud = router(edge, 0.9)
    routed = asyncio.run(r.complete(ask("my SSN is 123-45-6789, file it"), caller(auto_policy("always"))))
    assert routed.route == "edge" and cloud.requests == [] and routed.decision.auto is None


def test_the_dry_run_reads_and_stops():
    edge = FakeReader(reading=2.0)
    r, cloud = router(edge, 0.5)
    _, decision = asyncio.run(r.explain(ask(), caller(auto_policy("always"))))
    assert edge.kept == [False] and edge.requests == [] and cloud.requests == []
    assert decision.targets[0] == "cloud" and decision.score > 0.5


def test_an_installed_router_replaces_the_cold_start_one_and_its_threshold_the_policys():
    routers = InstalledRouters(refresh_s=0)
    r, _ = router(FakeTier("edge", "edge"), 0.3, routers)
    c = caller(auto_policy("never", threshold=0.5))
    assert r.decide(ask(), c)[1].targets[0] == "edge"
    routers.install("t", AppRouter(Combination(1.0, 0.0, 0.0), None, threshold=0.2))
    _, decision = r.decide(ask(), c)
    assert decision.targets[0] == "cloud" and decision.auto.router_version == 1 and decision.auto.threshold == 0.2
    routers.rollback("t")
    assert r.decide(ask(), c)[1].targets[0] == "edge"


def test_routers_are_versioned_and_rolled_back_one_at_a_time():
    routers = InstalledRouters(refresh_s=0)
    first = routers.install("t", AppRouter(threshold=0.3))
    second = routers.install("t", AppRouter(threshold=0.4))
    assert (first.version, second.version) == (1, 2) and routers.active("t").threshold == 0.4
    assert routers.rollback("t").version == 1
    assert routers.rollback("t") is None and routers.active("t") is None  # the cold-start router
    with pytest.raises(LookupError):
        routers.rollback("t")
    assert [r.version for r in routers.versions("t")] == [1, 2]


@pytest.mark.parametrize(
    "rule, message",
    [
        ("{name: x, route: auto, fallback: none}", "use 'route: edge'"),
        ("{name: x, route: auto, cascade: {when_confidence_below: 0.3}}", "remove 'cascade'"),
    ],
)
def test_an_auto_rule_that_contradicts_itself_is_refused(rule, message):
    with pytest.raises(FileError, match=message):
        parse_policy(f"app: t\nrules:\n  - {rule}\n", MODELS)


def test_an_auto_rule_needs_both_tiers_and_the_cloud_allowed():
    with pytest.raises(FileError, match="needs a cloud model"):
        parse_policy("app: t\nrules:\n  - {name: x, route: auto}\n", Models(("edge",), ()))
    with pytest.raises(FileError, match="allow_cloud: false"):
        parse_policy("app: t\nallow_cloud: false\nrules:\n  - {name: x, route: auto}\n", MODELS)
    with pytest.raises(FileError, match="low <= high"):
        parse_policy("app: t\nrouter: {band: [0.7, 0.3]}\nrules:\n  - {name: x, route: auto}\n", MODELS)


def test_the_decision_says_its_score_in_json():
    r, _ = router(FakeTier("edge", "edge"), 0.25)
    _, decision = r.decide(ask(), caller(auto_policy("never")))
    said = json.loads(json.dumps(decision.as_dict()))
    assert said["score"] == pytest.approx(0.25) and said["auto"]["edge_reading"] == "never"
