"""A conversation stays on the model that served it: its later turns go there while nothing forces
a move, whatever the app's router would say of each turn alone. A session is told by the client's
`x-edgeway-session` header, else the API's own key (Claude Code's `metadata.user_id`,
`prompt_cache_key`), else its first turns. Fake tiers; a real server and store in
test_native_passthrough.py and the agents' tests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from policies.policy import Models, parse_policy
from router.caller import Caller
from router.errors import UpstreamError
from router.ledger import MemoryStore
from router.policy_rules import PolicyRules
from router.request import ChatRequest, parse_chat_request
from router.routing import Router
from router.sessions import SessionSource, session_of
from router.tier import Tier
from tests.fakes import FakeTier, FixedComplexity

MODELS = Models(("edge",), ("small", "large"))


def caller(session: str = "", rule: str = "{name: decide, route: auto}") -> Caller:
    head = "app: t\ndefaults: {edge: edge, cloud: small}\nrouter: {edge_reading: never}\n"
    text = f"{head}{session}\nrules:\n  - {rule}\n"
    policy = parse_policy(text, MODELS)
    rules = PolicyRules(lambda: policy)
    return Caller("t", rules, rules.budget(), session=rules.session())


def tiers(**failing: Exception) -> dict[str, Tier]:
    return {
        "edge": FakeTier("edge", "edge", text="edge answer"),
        "small": FakeTier("small", "cloud", text="small answer", fails=failing.get("small")),
        "large": FakeTier("large", "cloud", text="large answer", fails=failing.get("large")),
    }


class Scored(FixedComplexity):
    """A complexity the test sets between turns: what the app's router would say of each alone."""

    def set(self, complexity: float) -> None:
        self.fixed = complexity


def turn(
    first: str = "Refactor the parser.",
    later: tuple[str, ...] = (),
    metadata: dict[str, str] | None = None,
    **body: Any,
) -> ChatRequest:
    messages = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": first}]
    for text in later:
        messages += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": text}]
    return parse_chat_request({"model": "auto", "messages": messages, **body}, metadata or {})


def answered(router: Router, request: ChatRequest, who: Caller) -> str:
    return asyncio.run(router.complete(request, who)).model.name


def test_later_turns_stay_on_the_model_that_served_the_first():
    scorer = Scored(0.95)
    router = Router(tiers(), scorer, store=MemoryStore())
    who = caller()
    assert answered(router, turn(), who) == "small"  # a hard first turn goes to the cloud
    scorer.set(0.05)  # each later turn, alone, the router would leave on the edge
    for n in range(1, 4):
        request = turn(later=("Now the tests.",) * n)
        _, decision = router.decide(request, who)
        assert decision.targets[0] == "small" and decision.session is not None and decision.session.kept
        assert decision.session.source == SessionSource.FIRST_TURNS
        assert answered(router, request, who) == "small"


def test_a_harder_turn_climbs_out_of_the_sessions_cheaper_model_and_stays_up():
    """Moving up is for quality, and worth the cached prefix it loses; moving down never is."""
    scorer = Scored(0.05)
    router = Router(tiers(), scorer, store=MemoryStore())
    who = caller()
    assert answered(router, turn(), who) == "edge"
    scorer.set(0.95)
    climbed = turn(later=("Now prove it terminates.",))
    _, decision = router.decide(climbed, who)
    assert decision.session is not None and not decision.session.kept and decision.targets[0] == "small"
    assert answered(router, climbed, who) == "small"
    scorer.set(0.05)
    assert answered(router, turn(later=("Now prove it terminates.", "Thanks.")), who) == "small"


def test_a_tool_loop_ends_on_the_model_that_began_it_and_the_next_turn_climbs():
    """A turn that answers a tool call is the rest of the model's own turn (its thinking signed for
    it alone): a harder one stays all the same, and the climb waits for the next user turn."""
    scorer = Scored(0.05)
    router = Router(tiers(), scorer, store=MemoryStore())
    who = caller()
    assert answered(router, turn(), who) == "edge"
    call = {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    looping = turn().messages + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a long and hard result"},
    ]
    scorer.set(0.95)  # what the router would climb for, alone
    request = parse_chat_request({"model": "auto", "messages": looping}, {})
    _, decision = router.decide(request, who)
    assert decision.targets[0] == "edge" and decision.session is not None and decision.session.kept
    assert any("its tool loop stays on edge" in r for r in decision.reasons), decision.reasons
    assert answered(router, request, who) == "edge"
    ended = looping + [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "Now prove it."}]
    assert answered(router, parse_chat_request({"model": "auto", "messages": ended}, {}), who) == "small"


def test_a_failure_moves_the_session_to_the_model_that_answered():
    scorer = Scored(0.95)
    models = tiers()
    router = Router(models, scorer, store=MemoryStore())
    who = caller()
    assert answered(router, turn(), who) == "small"
    models["small"] = FakeTier("small", "cloud", fails=UpstreamError("down"))
    router = Router(models, scorer, store=MemoryStore(), cache=router.cache)
    moved = answered(router, turn(later=("Go on.",)), who)
    assert moved == "edge"  # its fallback
    scorer.set(0.3)  # a turn the router would leave on the edge
    _, decision = router.decide(turn(later=("Go on.", "And then?")), who)
    assert decision.targets[0] == "edge" and decision.session is not None and decision.session.served_by == "edge"


def test_what_forces_a_move_wins_over_the_session():
    """Private data narrows the targets to the edge: the session's cloud model is not among them."""
    private = "{name: local, when: {pii: [EMAIL]}, route: edge, fallback: none}"
    text = f"app: t\ndefaults: {{edge: edge, cloud: small}}\nrouter: {{edge_reading: never}}\nrules:\n  - {private}\n"
    text += "  - {name: decide, route: auto}\n"
    policy = parse_policy(text, MODELS)
    rules = PolicyRules(lambda: policy)
    who = Caller("t", rules, session=rules.session())
    router = Router(tiers(), Scored(0.95), store=MemoryStore())
    assert answered(router, turn(), who) == "small"
    assert answered(router, turn(later=("Mail it to jane.roe@example.com",)), who) == "edge"


def test_affinity_off_routes_each_turn_alone():
    scorer = Scored(0.95)
    router = Router(tiers(), scorer, store=MemoryStore())
    who = caller(session="session: {affinity: off}")
    assert answered(router, turn(), who) == "small"
    scorer.set(0.05)
    assert answered(router, turn(later=("Now the tests.",)), who) == "edge"


@pytest.mark.parametrize(
    "request_, source",
    [
        (turn(metadata={"session": "s-1"}, user="u", prompt_cache_key="k"), SessionSource.HEADER),
        (turn(prompt_cache_key="k-1"), SessionSource.CACHE_KEY),
        (turn(), SessionSource.FIRST_TURNS),
    ],
)
def test_a_session_is_told_by_the_header_then_the_apis_key_then_its_first_turns(request_, source):
    found = session_of(request_)
    assert found is not None and found.source == source
    assert "s-1" not in found.key and "k-1" not in found.key  # kept as a digest


def test_two_conversations_with_other_first_turns_are_two_sessions():
    assert session_of(turn("Fix the bug.")) != session_of(turn("Write the docs."))
    assert session_of(turn("Fix the bug.")) == session_of(turn("Fix the bug.", later=("More.",)))
