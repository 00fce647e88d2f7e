"""A ladder: `route: auto` over more than an edge and a cloud model. The router climbs the ladder
bottom up, scoring each step `P(the next model's answer is better)` against that step's threshold,
and stops at the first model it trusts; narrowing (privacy, budget, capabilities, the latency
budget) takes models off the ladder before it climbs, and a failing model falls back along it.
Fake tiers; what a real server shows is in test_ladder_server.py."""

from __future__ import annotations

import asyncio

import pytest

from policies.policy import Models, parse_policy
from policies.yaml_source import FileError
from router.caller import Caller
from router.decision import StepScorer
from router.errors import UpstreamError
from router.ladder import LENGTH_MIDPOINT, length_score
from router.ledger import MemoryStore
from router.policy_rules import PolicyRules
from router.request import ChatRequest, parse_chat_request
from router.routing import Router
from router.tier import Tier
from tests.fakes import FakeReader, FakeTier, FixedComplexity

MODELS = Models(("edge",), ("small", "large"))


def ladder_policy(thresholds: str = "[0.5, 0.5]", extra: str = "", reading: str = "never") -> str:
    return f"""
app: t
defaults: {{edge: edge, cloud: small}}
router: {{edge_reading: {reading}}}
{extra}
rules:
  - name: climb
    route: auto
    ladder: [edge, small, large]
    thresholds: {thresholds}
"""


def caller(text: str, budget=None) -> Caller:
    app_policy = parse_policy(text, MODELS)
    rules = PolicyRules(lambda: app_policy)
    return Caller("t", rules, budget if budget is not None else rules.budget())


def tiers(edge: FakeTier | None = None, **failing: Exception) -> dict[str, Tier]:
    return {
        "edge": edge or FakeTier("edge", "edge", text="edge answer"),
        "small": FakeTier("small", "cloud", text="small answer", fails=failing.get("small")),
        "large": FakeTier("large", "cloud", text="large answer", fails=failing.get("large")),
    }


def router(complexity: float, models: dict[str, Tier] | None = None) -> Router:
    return Router(models or tiers(), FixedComplexity(complexity), store=MemoryStore())


SHORT = "Explain how a heat pump works."
LONG = "Summarize this report for the board. " + "The quarter's figures moved in every region. " * 60


def ask(text: str = SHORT, **body) -> ChatRequest:
    return parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": text}], **body})


# --- the policy -------------------------------------------------------------------------------
def test_a_ladder_names_models_cheapest_first_and_a_threshold_per_step():
    policy = parse_policy(ladder_policy(), MODELS)
    rule = policy.spec.rules[0]
    assert rule.ladder == ["edge", "small", "large"] and rule.thresholds == [0.5, 0.5]
    assert parse_policy(ladder_policy().replace("    thresholds: [0.5, 0.5]\n", ""), MODELS)  # the router's, each


@pytest.mark.parametrize(
    "rule, message",
    [
        ("{name: x, route: cloud, ladder: [edge, small]}", "needs 'route: auto'"),
        ("{name: x, route: auto, ladder: [edge]}", "at least 2"),
        ("{name: x, route: auto, ladder: [edge, small, edge]}", "twice"),
        ("{name: x, route: auto, ladder: [edge, small], thresholds: [0.5, 0.5]}", "one threshold per step"),
        ("{name: x, route: auto, ladder: [edge, small], thresholds: [1.5]}", "from 0 to 1"),
        ("{name: x, route: auto, thresholds: [0.5]}", "add 'ladder'"),
        ("{name: x, route: auto, ladder: [edge, medium]}", "unknown model 'medium'"),
    ],
)
def test_a_ladder_that_cannot_be_climbed_is_refused(rule, message):
    with pytest.raises(FileError, match=message):
        parse_policy(f"app: t\nrules:\n  - {rule}\n", MODELS)


def test_a_ladder_of_cloud_models_needs_no_edge_model():
    clouds_only = Models((), ("small", "large"))
    assert parse_policy("app: t\nrules:\n  - {name: x, route: auto, ladder: [small, large]}\n", clouds_only)
    with pytest.raises(FileError, match="no edge model"):
        parse_policy("app: t\nrules:\n  - {name: x, route: auto, ladder: [edge, large]}\n", clouds_only)


# --- the climb ----------------------------------------------------------------------------------
def test_the_climb_stops_at_the_first_model_it_trusts():
    # the edge-to-cloud step is the app's router's (the text prior here); the cloud-to-cloud step
    # is the prompt's length
    for complexity, text, top, steps in (
        (0.2, SHORT, "edge", 1),
        (0.8, SHORT, "small", 2),
        (0.8, LONG, "large", 2),
    ):
        _, decision = router(complexity).decide(ask(text), caller(ladder_policy()))
        assert decision.targets[0] == top, (complexity, decision.reasons)
        assert decision.auto is not None and len(decision.auto.climb) == steps
        first, *rest = decision.auto.climb
        assert (first.lower, first.upper, first.scorer) == ("edge", "small", StepScorer.APP_ROUTER)
        assert first.score == pytest.approx(complexity)
        for step in rest:
            assert (step.lower, step.upper, step.scorer) == ("small", "large", StepScorer.PROMPT_LENGTH)
        assert decision.reasons[-1].startswith("ladder: edge->small")


def test_each_step_has_its_own_threshold():
    _, decision = router(0.8).decide(ask(LONG), caller(ladder_policy("[0.9, 0.5]")))
    assert decision.targets[0] == "edge" and decision.auto.climb[0].threshold == 0.9
    _, decision = router(0.8).decide(ask(LONG), caller(ladder_policy("[0.5, 0.99]")))
    assert decision.targets[0] == "small" and decision.auto.climb[1].threshold == 0.99


def test_the_length_score_is_one_half_at_its_midpoint_and_rises_with_length():
    assert length_score(LENGTH_MIDPOINT) == 0.5
    assert length_score(10) < length_score(100) < length_score(1_000) < 1


def test_a_failing_model_falls_back_up_the_ladder_then_down():
    _, decision = router(0.8).decide(ask(), caller(ladder_policy()))
    assert decision.targets == ("small", "large", "edge")
    models = tiers(small=UpstreamError("down", provider_status=503))
    routed = asyncio.run(router(0.8, models).complete(ask(), caller(ladder_policy())))
    assert routed.model.name == "large"
    models = tiers(small=UpstreamError("down", provider_status=503), large=UpstreamError("down", provider_status=503))
    routed = asyncio.run(router(0.8, models).complete(ask(), caller(ladder_policy())))
    assert routed.model.name == "edge"


def test_a_request_with_private_data_falls_back_down_first():
    masked = ladder_policy().replace("    route: auto\n", "    route: auto\n    redact: true\n")
    text = "Write to jane.roe@example.com about the invoice. " + LONG
    _, decision = router(0.8).decide(ask(text), caller(masked))
    assert decision.targets == ("large", "small", "edge")
    _, decision = router(0.8).decide(ask("Write to jane.roe@example.com please."), caller(masked))
    assert decision.targets == ("small", "edge", "large")


# --- narrowing before the climb --------------------------------------------------------------------
def test_an_exhausted_budget_leaves_the_edge_alone_on_the_ladder():
    budgeted = ladder_policy(extra="budget: {daily_usd: 1, on_exhausted: edge}")
    r = router(0.9)
    c = caller(budgeted)
    r._store.charge("t", 5.0)  # spent more than the day's budget
    _, decision = r.decide(ask(LONG), c)
    assert decision.targets == ("edge",) and decision.auto is None


def test_models_that_cannot_serve_the_request_are_skipped():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    _, decision = router(0.1).decide(ask(LONG, tools=tools), caller(ladder_policy()))
    # the edge fakes no tools: the climb starts at the first cloud model, and the length decides
    assert decision.targets == ("large", "small")
    assert [(s.lower, s.upper) for s in decision.auto.climb] == [("small", "large")]


def test_a_step_keeps_its_threshold_when_narrowing_takes_the_model_below_it_off():
    models = tiers(edge=FakeTier("edge", "edge", wait_ms=5_000))
    request = parse_chat_request(
        {"model": "auto", "messages": [{"role": "user", "content": LONG}]}, {"latency-budget-ms": "200"}
    )
    _, decision = router(0.1, models).decide(request, caller(ladder_policy("[0.9, 0.99]")))
    (step,) = decision.auto.climb
    assert (step.lower, step.upper, step.threshold) == ("small", "large", 0.99)


def test_a_latency_budget_the_edge_would_miss_skips_it():
    models = tiers(edge=FakeTier("edge", "edge", wait_ms=5_000))
    request = parse_chat_request(
        {"model": "auto", "messages": [{"role": "user", "content": SHORT}]}, {"latency-budget-ms": "200"}
    )
    _, decision = router(0.1, models).decide(request, caller(ladder_policy()))
    assert decision.targets[0] == "small" and "edge" not in decision.auto.ladder


# --- the edge reads first -----------------------------------------------------------------------
def test_where_the_edge_reads_first_its_reading_decides_the_first_step():
    for reading, route in ((-3.0, "edge"), (3.0, "large")):
        edge = FakeReader(reading=reading)
        r = router(0.5, tiers(edge=edge))
        routed = asyncio.run(r.complete(ask(LONG), caller(ladder_policy(reading="always"))))
        assert routed.model.name == route and edge.kept == [route == "edge"]
        if route != "edge":  # the climb above the first cloud model was made before the reading
            assert routed.decision.targets == ("large", "small", "edge")


# --- what an operator sees ----------------------------------------------------------------------
def test_the_decision_shows_the_whole_climb():
    _, decision = router(0.8).decide(ask(LONG), caller(ladder_policy()))
    climb = decision.as_dict()["auto"]["climb"]
    assert [(s["lower"], s["upper"], s["scorer"]) for s in climb] == [
        ("edge", "small", "app_router"),
        ("small", "large", "prompt_length"),
    ]
    assert all(0 <= s["score"] <= 1 and s["threshold"] == 0.5 for s in climb)
