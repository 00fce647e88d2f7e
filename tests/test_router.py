"""The router's decision paths, with fake tiers and an in-memory store: fallback chains, fail-closed
rules, cascades, redaction, budgets, rate limits, latency budgets, breakers and dry runs.

These run in about a second; what only a real server shows is in the end-to-end tests."""

from __future__ import annotations

import asyncio
import json

import pytest

from classifiers import Scorer
from gateway.auth import policy_app
from policies.policy import Models, parse_policy
from policies.yaml_source import FileError
from router.answer import Usage
from router.budget import AppBudget, Caps
from router.caller import Caller
from router.decision import Policy
from router.errors import Forbidden, InvalidRequest, ModelNotFound, NoCapacity, RateLimited, UpstreamError
from router.ledger import MemoryStore
from router.limits import Limits
from router.policy_rules import PolicyRules
from router.pricing import Price
from router.request import ChatRequest, parse_chat_request, parse_embeddings_request
from router.resilience import CircuitOpen
from router.routed import Failure
from router.routing import Router
from router.rules import PlainRules
from router.tier import Resilience, Tier
from tests.fakes import FakeTier, FixedComplexity

SSN = "my SSN is 123-45-6789, please help"
EMAIL = "write to jane.doe@example.com about the invoice"
PRICE = Price(input_per_token=1e-6, output_per_token=2e-6)
SCORER = Scorer()


def policy(text: str) -> Policy:
    app_policy = parse_policy(text, Models(("edge",), ("cloud", "cloud-b")))
    return PolicyRules(lambda: app_policy)


def router(*models: FakeTier, scorer: Scorer = SCORER, store: MemoryStore | None = None) -> Router:
    tiers: dict[str, Tier] = {m.name: m for m in models}
    return Router(tiers, scorer, {m.name: PRICE for m in models if m.tier == "cloud"}, store or MemoryStore())


def ask(text: str = "What is the capital of France?", model: str = "auto", **body: object) -> ChatRequest:
    return parse_chat_request({"model": model, "messages": [{"role": "user", "content": text}], **body})


def run(coroutine):
    return asyncio.run(coroutine)


FAIL_CLOSED = """
app: t
defaults: {edge: edge, cloud: cloud}
rules:
  - name: pii-stays-local
    when: {pii: [US_SSN]}
    route: edge
    fallback: none
  - name: default
    route: edge
    fallback: cloud
"""


# --- fallback chains ------------------------------------------------------------------------
def test_the_first_target_that_answers_serves_and_the_failures_before_it_are_kept():
    edge = FakeTier("edge", "edge", fails=NoCapacity("edge down"))
    cloud = FakeTier("cloud", "cloud", text="from the cloud")
    routed = run(router(edge, cloud).complete(ask(), Caller("t", policy(FAIL_CLOSED))))
    assert routed.model is cloud and routed.route == "cloud"
    assert routed.result.body["choices"][0]["message"]["content"] == "from the cloud"
    assert routed.failures == [Failure("edge", 503, "no_capacity")]
    assert routed.fallback == "edge: 503 no_capacity"  # as x-edgeway-fallback says it


def test_when_every_target_fails_the_error_names_each_failure():
    edge = FakeTier("edge", "edge", fails=NoCapacity("edge down"))
    cloud = FakeTier("cloud", "cloud", fails=UpstreamError("503 from the provider", provider_status=503))
    with pytest.raises(UpstreamError, match=r"failed: edge: edge down \| cloud: 503 from the provider$"):
        run(router(edge, cloud).complete(ask(), Caller("t", policy(FAIL_CLOSED))))


def test_a_request_the_client_must_fix_does_not_fall_back():
    edge = FakeTier("edge", "edge", fails=InvalidRequest("bad stop", param="stop"))
    cloud = FakeTier("cloud", "cloud")
    with pytest.raises(InvalidRequest):
        run(router(edge, cloud).complete(ask(), Caller("t", policy(FAIL_CLOSED))))
    assert cloud.requests == []


def test_a_prompt_too_long_for_the_edge_falls_back_to_the_cloud():
    edge = FakeTier("edge", "edge", fails=InvalidRequest("too long", code="context_length_exceeded"))
    cloud = FakeTier("cloud", "cloud")
    routed = run(router(edge, cloud).complete(ask(), Caller("t", policy(FAIL_CLOSED))))
    assert routed.model is cloud


# --- fail-closed ----------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
def test_a_fail_closed_rule_never_reaches_the_cloud_even_when_the_edge_fails(stream):
    edge = FakeTier("edge", "edge", fails=NoCapacity("edge down"))
    cloud = FakeTier("cloud", "cloud")
    r = router(edge, cloud)
    with pytest.raises(NoCapacity):
        run((r.stream if stream else r.complete)(ask(SSN), Caller("t", policy(FAIL_CLOSED))))
    assert cloud.requests == [] and len(edge.requests) == 1


def test_an_edge_only_app_has_no_cloud_target_even_when_it_names_a_cloud_model():
    edge_only = policy("app: t\nallow_cloud: false\ndefaults: {edge: edge}\nrules:\n  - {name: all, route: edge}\n")
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    routed = run(router(edge, cloud).complete(ask(model="cloud"), Caller("t", edge_only)))
    assert routed.model is edge and cloud.requests == []


# --- cascades -------------------------------------------------------------------------------
CASCADE = """
app: t
defaults: {edge: edge, cloud: cloud}
rules:
  - name: default
    route: edge
    cascade: {escalate_to: cloud, when_confidence_below: 0.5}
"""


@pytest.mark.parametrize(("confidence", "served"), [(0.9, "edge"), (0.1, "cloud")])
def test_a_cascade_keeps_a_confident_edge_answer_and_escalates_an_unsure_one(confidence, served):
    edge, cloud = FakeTier("edge", "edge", text="edge says", confidence=confidence), FakeTier("cloud", "cloud")
    routed = run(router(edge, cloud).complete(ask(), Caller("t", policy(CASCADE))))
    assert routed.model.name == served
    assert (routed.escalated is not None) == (served == "cloud")
    assert len(cloud.requests) == (served == "cloud")


def test_a_streamed_cascade_replays_the_kept_edge_answer_as_chunks():
    edge, cloud = FakeTier("edge", "edge", text="the edge answer", confidence=0.9), FakeTier("cloud", "cloud")
    routed = run(router(edge, cloud).stream(ask(), Caller("t", policy(CASCADE))))

    async def text() -> str:
        return "".join([c["choices"][0]["delta"].get("content", "") async for c in routed.result])

    assert run(text()) == "the edge answer" and routed.result.usage.completion_tokens == 2


def test_a_cascade_whose_edge_fails_escalates_and_whose_escalation_fails_keeps_the_edge():
    failing_edge = FakeTier("edge", "edge", fails=NoCapacity("down"))
    routed = run(router(failing_edge, FakeTier("cloud", "cloud")).complete(ask(), Caller("t", policy(CASCADE))))
    assert routed.model.name == "cloud" and routed.escalated == "the edge could not answer"

    unsure = FakeTier("edge", "edge", confidence=0.1)
    failing_cloud = FakeTier("cloud", "cloud", fails=UpstreamError("cloud: 500", provider_status=500))
    routed = run(router(unsure, failing_cloud).complete(ask(), Caller("t", policy(CASCADE))))
    assert routed.model is unsure and routed.failures == [Failure("cloud", 502, "upstream_error")]


# --- redaction ------------------------------------------------------------------------------
REDACT = """
app: t
defaults: {edge: edge, cloud: cloud}
rules:
  - name: mask
    when: {pii: [EMAIL]}
    route: cloud
    redact: true
"""


def test_redaction_sends_placeholders_and_puts_the_values_back_in_the_answer():
    cloud = FakeTier("cloud", "cloud", text="I wrote to [EMAIL_1].")
    routed = run(router(FakeTier("edge", "edge"), cloud).complete(ask(EMAIL), Caller("t", policy(REDACT))))
    assert cloud.texts_seen() == ["write to [EMAIL_1] about the invoice"]
    assert routed.result.body["choices"][0]["message"]["content"] == "I wrote to jane.doe@example.com."


def test_every_value_in_a_text_is_masked_where_it_is_and_the_same_value_the_same_way():
    from classifiers.signals import PrivacyFinding
    from router.redaction import Redaction

    text = "a@x.io, then b@y.io; again a@x.io and call 0612345678."
    where = ("messages", 0, "content")
    found = tuple(
        PrivacyFinding(kind, text.index(value, at), text.index(value, at) + len(value), 0.9, "test", where)
        for kind, value, at in (
            ("EMAIL", "a@x.io", 0),
            ("EMAIL", "b@y.io", 0),
            ("EMAIL", "a@x.io", 20),
            ("PHONE", "0612345678", 0),
        )
    )
    redaction = Redaction(parse_chat_request({"model": "m", "messages": [{"role": "user", "content": text}]}), found)
    masked = redaction.request.messages[0]["content"]
    assert masked == "[EMAIL_1], then [EMAIL_2]; again [EMAIL_1] and call [PHONE_1]."
    assert redaction.restore(masked) == text


def _redaction_of(value: str, kind: str = "SECRET"):
    from classifiers.signals import PrivacyFinding
    from router.redaction import Redaction

    text = f"use {value} to sign in"
    found = (PrivacyFinding(kind, 4, 4 + len(value), 0.9, "test", ("messages", 0, "content")),)
    return Redaction(parse_chat_request({"model": "m", "messages": [{"role": "user", "content": text}]}), found)


def test_a_value_found_once_is_masked_wherever_else_it_stands_as_a_word():
    """The scan may judge a name differently in two places (the words around it say less in a
    tool call's `{"to": ...}`); the provider would have read it there."""
    from classifiers.signals import PrivacyFinding
    from router.redaction import Redaction

    arguments = json.dumps({"to": "José García"})  # as JSON writes it: "Jos\\u00e9 Garc\\u00eda"
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Write to José García, cc Josélito García-Lopez"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "send", "arguments": arguments}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "sent to José García"},
        ],
    }
    found = (PrivacyFinding("PERSON", 9, 20, 0.9, "test", ("messages", 0, "content")),)
    redaction = Redaction(parse_chat_request(body), found)
    messages = redaction.request.messages
    assert messages[0]["content"] == "Write to [PERSON_1], cc Josélito García-Lopez"
    assert json.loads(messages[1]["tool_calls"][0]["function"]["arguments"]) == {"to": "[PERSON_1]"}
    assert messages[2]["content"] == "sent to [PERSON_1]"
    assert redaction.originals == {"[PERSON_1]": "José García"}


def test_a_condition_masked_elsewhere_leaves_the_tools_schemas_as_they_are():
    """A condition named in a message names a kind of thing in a schema ("Record the patient's
    allergies"): rewording the description would change the contract the model answers to, not
    hide a fact the user told. (An identifying value is masked there too: tests/test_privacy_invariant.py.)"""
    from classifiers.signals import PrivacyFinding
    from router.redaction import Redaction

    tools = [
        {
            "type": "function",
            "function": {
                "name": "record",
                "description": "Record the patient's allergies",
                "parameters": {"type": "object", "properties": {"allergies": {"type": "string"}}},
            },
        }
    ]
    body = {"model": "m", "messages": [{"role": "user", "content": "I have allergies to nuts"}], "tools": tools}
    found = (PrivacyFinding("HEALTH", 7, 16, 0.6, "test", ("messages", 0, "content")),)
    redaction = Redaction(parse_chat_request(body), found)
    assert redaction.request.messages[0]["content"] == "I have [HEALTH_1] to nuts"
    assert redaction.request.body["tools"] == tools


def test_a_tool_calls_arguments_get_the_value_back_as_json_holds_it():
    """A value with a quote or a backslash, put back as written, would end the JSON string."""
    redaction = _redaction_of('pa"ss\\word')
    body = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "login", "arguments": '{"password": "[SECRET_1]"}'},
                        }
                    ],
                },
            }
        ]
    }
    arguments = redaction.restore_answer(body)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"password": 'pa"ss\\word'}


def test_a_streamed_tool_calls_arguments_get_the_value_back_across_chunks():
    redaction = _redaction_of("jane.doe@example.com", "EMAIL")
    restorer = redaction.stream_restorer()
    pieces = ['{"to": "[EM', "AIL", '_1]", "cc": "[EMAIL_1', "]", '"}']
    out = []
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        chunk = {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]},
                    "finish_reason": "tool_calls" if last else None,
                }
            ]
        }
        for call in restorer.restore_chunk(chunk)["choices"][0]["delta"]["tool_calls"]:
            out.append(call["function"]["arguments"])
    assert json.loads("".join(out)) == {"to": "jane.doe@example.com", "cc": "jane.doe@example.com"}


def test_a_placeholder_held_at_a_tool_calls_end_is_sent_with_the_last_chunk():
    restorer = _redaction_of("hunter2").stream_restorer()
    first = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "[SEC"}}]}}]}
    assert restorer.restore_chunk(first)["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] == ""
    last = restorer.restore_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert last["choices"][0]["delta"]["tool_calls"] == [{"index": 1, "function": {"arguments": "[SEC"}}]


def test_a_redacted_stream_restores_placeholders_split_across_chunks():
    cloud = FakeTier("cloud", "cloud", text="Sent to [EMAIL_1] now")  # chunks of 3 split the placeholder

    async def text() -> str:  # routed and read in one event loop, as the gateway does
        routed = await router(FakeTier("edge", "edge"), cloud).stream(ask(EMAIL), Caller("t", policy(REDACT)))
        return "".join([c["choices"][0]["delta"].get("content", "") async for c in routed.result])

    assert run(text()) == "Sent to jane.doe@example.com now"
    assert "jane.doe" not in " ".join(cloud.texts_seen())


# --- budgets --------------------------------------------------------------------------------
ALWAYS_CLOUD = "app: t\ndefaults: {edge: edge, cloud: cloud}\nrules:\n  - {name: all, route: cloud, fallback: edge}\n"


def spent_store(usd: float) -> MemoryStore:
    store = MemoryStore()
    store.charge("t", usd)
    return store


def test_over_budget_with_on_exhausted_edge_the_edge_answers_and_the_cloud_is_never_called():
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    r = router(edge, cloud, store=spent_store(1.0))
    routed = run(r.complete(ask(), Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=1.0), "edge"))))
    assert routed.model is edge and cloud.requests == [] and not routed.decision.cloud_allowed


def test_over_budget_with_on_exhausted_deny_is_429():
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"), store=spent_store(1.0))
    with pytest.raises(RateLimited) as refused:
        run(r.complete(ask(), Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=1.0), "deny"))))
    assert refused.value.code == "budget_exhausted" and refused.value.retry_after


def test_admission_reserves_the_worst_case_and_a_failed_request_gives_it_back():
    store = MemoryStore()
    cloud = FakeTier("cloud", "cloud", fails=UpstreamError("down", provider_status=500))
    r = router(FakeTier("edge", "edge", fails=NoCapacity("down")), cloud, store=store)
    caller = Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=1.0)))
    signals, decision = r.decide(ask(max_tokens=1000), caller)
    admitted = r.admit(caller, signals, decision)
    assert admitted.reserved_usd == pytest.approx(PRICE.cost(signals.prompt_tokens, 1000))
    assert store.left("t", caller.budget.caps) == pytest.approx(1.0 - admitted.reserved_usd)
    with pytest.raises(NoCapacity):  # the cloud failed, then its fallback, the edge
        run(r.complete(ask(max_tokens=1000), caller))
    assert store.left("t", caller.budget.caps) == pytest.approx(1.0 - admitted.reserved_usd)  # only the first


# --- one request's account: reserved, settled, written once --------------------------------
def test_a_requests_account_settles_its_reservation_in_its_one_priced_row():
    store = MemoryStore()
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"), store=store)
    caller = Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=1.0)))
    account = r.account("req-1", "t", reference="cloud")
    routed = run(r.complete(ask(max_tokens=1000), caller, account))
    assert store.left("t", caller.budget.caps) < 1.0  # the worst case is held while it runs
    account.routed(routed, ask())
    row = account.finish(routed.result.usage)
    assert [x.request_id for x in store.rows()] == ["req-1"] and row.route == "cloud" and row.status == 200
    assert row.cost_usd == pytest.approx(PRICE.cost(row.prompt_tokens, row.completion_tokens))
    assert row.counterfactual_usd == pytest.approx(row.cost_usd)  # the reference is the model that answered
    assert store.left("t", caller.budget.caps) == pytest.approx(1.0 - row.cost_usd)  # the hold became the cost


def test_a_failed_requests_account_gives_back_its_reservation_and_writes_an_unpriced_row():
    store = MemoryStore()
    cloud = FakeTier("cloud", "cloud", fails=UpstreamError("down", provider_status=500))
    r = router(FakeTier("edge", "edge", fails=NoCapacity("down")), cloud, store=store)
    caller = Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=1.0)))
    account = r.account("req-2", "t")
    with pytest.raises(NoCapacity):
        run(r.complete(ask(max_tokens=1000), caller, account))
    row = account.abort(503, "no_capacity")
    assert store.left("t", caller.budget.caps) == pytest.approx(1.0)
    assert (row.status, row.error, row.cost_usd) == (503, "no_capacity", 0.0) and len(store.rows()) == 1


def test_usage_a_provider_did_not_count_is_estimated_once_from_what_was_delivered():
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"))
    account = r.account("req-3", "t")
    routed = run(r.complete(ask(), Caller("t", policy(ALWAYS_CLOUD))))
    account.routed(routed, ask())
    uncounted = Usage(0, 0, measured=False)
    first = account.settled(uncounted, "four words were delivered")
    assert not first.measured and first.completion_tokens > 0 and first.prompt_tokens == routed.signals.prompt_tokens
    assert account.settled(uncounted, "something else entirely, and longer") is first  # once
    assert account.settled(Usage(7, 3)) == Usage(7, 3)  # a count that holds is the count


def test_a_request_that_loses_the_race_for_the_last_budget_is_kept_local():
    store = MemoryStore()
    caller = Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=1e-4)))
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"), store=store)
    signals, decision = r.decide(ask(max_tokens=1000), caller)
    assert decision.cloud_allowed
    store.charge("t", 1e-4)  # a racing request spent it meanwhile
    admitted = r.admit(caller, signals, decision)
    assert not admitted.cloud_allowed and admitted.targets == ("edge",)


# --- dry runs are pure ----------------------------------------------------------------------
def test_a_thousand_dry_runs_leave_the_budget_the_rate_limit_and_the_ledger_untouched():
    store = MemoryStore()
    limits = Limits(requests_per_minute=5, tokens_per_minute=100_000)
    caller = Caller("t", policy(ALWAYS_CLOUD), AppBudget(Caps(daily_usd=0.05)), limits)
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"), store=store)
    for _ in range(1000):
        r.decide(ask(max_tokens=4000), caller)
    assert store.left("t", caller.budget.caps) == 0.05
    assert store.rows() == []
    for _ in range(5):  # the whole rate limit is still there
        run(r.complete(ask(), caller))
    with pytest.raises(RateLimited):
        run(r.complete(ask(), caller))


# --- limits ---------------------------------------------------------------------------------
def test_limits_refuse_too_many_messages_and_fill_in_the_default_max_tokens():
    caller = Caller("t", policy(FAIL_CLOSED), limits=Limits(max_messages=1, max_tokens=64))
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"))
    two = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": "a"}] * 2})
    with pytest.raises(InvalidRequest, match="at most 1 messages"):
        r.decide(two, caller)
    request = ask()
    signals, _ = r.decide(request, caller)
    served = r.admissible(request, caller)
    assert served.max_tokens == 64 and served.body["max_tokens"] == 64 and signals.max_tokens == 64
    assert request.max_tokens is None and "max_tokens" not in request.body  # the request given is left as it was
    routed = run(r.complete(request, Caller("t", policy(ALWAYS_CLOUD), limits=Limits(max_tokens=64))))
    assert routed.model.requests[-1].body["max_tokens"] == 64  # what the model was sent


def test_one_request_reads_one_version_of_its_policy_even_if_the_file_reloads_meanwhile():
    versions = [parse_policy(ALWAYS_CLOUD, Models(("edge",), ("cloud", "cloud-b")))]
    rules = PolicyRules(lambda: versions[-1])
    app = policy_app("t", rules, None)
    during = app.now()  # what a request reads, from its first check to its row
    versions.append(parse_policy(FAIL_CLOSED, Models(("edge",), ("cloud", "cloud-b"))))  # the file reloads
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"))
    assert r.decide(ask(), during)[1].rule == r.decide(ask(), Caller("t", policy(ALWAYS_CLOUD)))[1].rule
    assert r.decide(ask(), app.now())[1].rule != r.decide(ask(), during)[1].rule  # the next one


# --- refusals -------------------------------------------------------------------------------
def test_an_unknown_model_is_404_and_a_denying_rule_is_403():
    r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"))
    with pytest.raises(ModelNotFound):
        r.decide(ask(model="gpt-9"), Caller("t", PlainRules(r.catalog)))
    deny = policy("app: t\nrules:\n  - {name: refuse, when: {pii: [US_SSN]}, action: deny, message: 'No SSNs.'}\n")
    with pytest.raises(Forbidden, match="No SSNs."):
        r.decide(ask(SSN), Caller("t", deny))


# --- live state -----------------------------------------------------------------------------
LATENCY = "app: t\ndefaults: {edge: edge, cloud: cloud}\nrules:\n  - {name: all, route: edge, fallback: cloud}\n"


def test_a_latency_budget_the_edge_queue_would_miss_sends_the_request_to_the_cloud_first():
    r = router(FakeTier("edge", "edge", wait_ms=5000), FakeTier("cloud", "cloud"))
    request = parse_chat_request(
        {"model": "auto", "messages": [{"role": "user", "content": "hi"}]}, {"latency-budget-ms": "2000"}
    )
    _, decision = r.decide(request, Caller("t", policy(LATENCY)))
    assert decision.targets == ("cloud", "edge")
    _, private = r.decide(
        parse_chat_request(ask(SSN).body, {"latency-budget-ms": "0"}),
        Caller("t", policy(FAIL_CLOSED)),
    )
    assert private.targets == ("edge",)  # never the cloud to save time


def test_complexity_conditions_read_the_scorer():
    hard = "app: t\nrules:\n  - {name: hard, when: {complexity: {gte: 0.6}}, route: cloud}\n"
    for complexity, first in ((0.9, "cloud"), (0.1, "edge")):
        r = router(FakeTier("edge", "edge"), FakeTier("cloud", "cloud"), scorer=FixedComplexity(complexity))
        _, decision = r.decide(ask(), Caller("t", policy(hard)))
        assert decision.targets[0] == first


# --- breakers -------------------------------------------------------------------------------
def test_a_failing_cloud_opens_its_circuit_and_the_router_moves_on_without_calling_it():
    cloud = FakeTier("cloud", "cloud", fails=UpstreamError("503", provider_status=503), resilience=Resilience(0, 2, 60))
    backup = FakeTier("cloud-b", "cloud")
    chain = "app: t\ndefaults: {edge: edge, cloud: cloud}\nrules:\n  - {name: all, route: cloud, fallback: cloud-b}\n"
    r = router(FakeTier("edge", "edge"), cloud, backup)
    for _ in range(4):
        run(r.complete(ask(), Caller("t", policy(chain))))
    assert len(cloud.requests) == 2 and len(backup.requests) == 4
    assert r.breakers["cloud"].state == "open"
    with pytest.raises(CircuitOpen):
        run(r.complete(ask(), Caller("t", policy("app: t\nrules:\n  - {name: all, route: cloud}\n"))))


# --- what a request asks beyond plain chat --------------------------------------------------
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}}}]


def test_a_request_with_tools_skips_a_tier_that_would_drop_them():
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    r = router(edge, cloud)
    _, decision = r.decide(ask(tools=TOOLS), Caller("t", PlainRules(r.catalog)))
    assert decision.targets == ("cloud",) and "cannot honor tools" in decision.reasons[-1]
    _, plain = r.decide(ask(tools=TOOLS, tool_choice="none"), Caller("t", PlainRules(r.catalog)))
    assert plain.targets == ("edge", "cloud")  # tools the model may not call need no tool support


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("tools", TOOLS, "tools"),
        ("response_format", {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}, "response_format"),
        ("logprobs", True, "logprobs"),
        ("logit_bias", {"50256": -100}, "logit_bias"),
        ("presence_penalty", 0.5, "frequency_penalty"),
    ],
)
def test_a_request_kept_local_that_asks_what_the_edge_cannot_do_is_a_clear_400(field, value, param):
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    with pytest.raises(InvalidRequest) as refused:
        run(router(edge, cloud).complete(ask(SSN, **{field: value}), Caller("t", policy(FAIL_CLOSED))))
    assert refused.value.code == "unsupported_parameter" and refused.value.param == param
    assert edge.requests == [] and cloud.requests == []


def test_a_cascade_whose_edge_cannot_honor_the_request_goes_straight_to_the_cloud():
    edge, cloud = FakeTier("edge", "edge", confidence=0.99), FakeTier("cloud", "cloud")
    routed = run(router(edge, cloud).complete(ask(tools=TOOLS), Caller("t", policy(CASCADE))))
    assert routed.model is cloud and edge.requests == [] and routed.decision.cascade is None


def test_embeddings_go_to_a_tier_that_embeds_and_never_cascade():
    edge = FakeTier("edge", "edge", confidence=0.0)
    edge.capabilities = frozenset({"embeddings"})
    cloud = FakeTier("cloud", "cloud")  # a chat model: no embeddings
    routed = run(router(edge, cloud).embed(parse_embeddings_request({"model": "auto", "input": ["a", "bb"]}),
                                           Caller("t", policy(CASCADE))))  # fmt: skip
    assert routed.model is edge and routed.result.body["data"][1]["embedding"] == [2.0, 1.0]
    assert routed.escalated is None and cloud.requests == []


# --- capability-aware routing, as a policy and a config say it ----------------------------------
NEEDS_POLICY = (
    "app: t\ndefaults: {edge: edge, cloud: cloud}\nrules:\n"
    "  - {name: tools-to-the-cloud, when: {needs: [tools]}, route: cloud}\n"
    "  - {name: rest, route: edge, fallback: cloud}\n"
)


def test_a_policy_routes_by_what_the_request_needs():
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    edge.capabilities = frozenset({"tools"})  # the edge could; the policy prefers the cloud for them
    r = router(edge, cloud)
    _, decision = r.decide(ask(tools=TOOLS), Caller("t", policy(NEEDS_POLICY)))
    assert decision.rule == "tools-to-the-cloud" and decision.targets == ("cloud",)
    assert r.decide(ask(), Caller("t", policy(NEEDS_POLICY)))[1].rule == "rest"
    with pytest.raises(FileError, match="unknown need"):
        policy(NEEDS_POLICY.replace("needs: [tools]", "needs: [telepathy]"))


def test_image_parts_need_media_which_the_edge_lacks():
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    picture = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
    ]
    request = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": picture}]})
    assert "media" in request.needs
    _, decision = router(edge, cloud).decide(request, Caller("t", PlainRules(router(edge, cloud).catalog)))
    assert decision.targets == ("cloud",)


def test_configured_capabilities_narrow_a_model():
    from edge_runtime import EdgeEngine, EdgeModelConfig
    from router.cloud.base import CloudModel
    from router.cloud.config import CloudModelConfig
    from router.edge import EdgeModel

    full = EdgeModel(EdgeEngine(EdgeModelConfig(name="edge")))
    narrow = EdgeModel(EdgeEngine(EdgeModelConfig(name="edge", capabilities=["json_output", "media"])))
    assert "tools" in full.capabilities and narrow.capabilities == frozenset({"json_output"})  # never more
    plain = CloudModelConfig(name="c", provider_model="openai/gpt-4o-mini")
    assert "tools" in CloudModel(plain).capabilities
    assert CloudModel(plain.model_copy(update={"capabilities": ["json_output"]})).capabilities == {"json_output"}
    with pytest.raises(ValueError, match="unknown need"):
        CloudModelConfig(name="c", provider_model="openai/gpt-4o-mini", capabilities=["telepathy"])


def test_web_search_is_a_need_the_edge_lacks_never_a_silent_drop():
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    request = ask(web_search_options={})
    assert "web_search" in request.needs
    _, decision = router(edge, cloud).decide(request, Caller("t", PlainRules(router(edge, cloud).catalog)))
    assert decision.targets == ("cloud",)


def test_a_decision_kept_local_keeps_only_edge_targets_and_no_escalation():
    """`router.narrowing.local_only`, which narrows every decision: whatever a policy listed
    (cloud fallbacks, a cascade to the cloud), a request that may not reach the cloud has none."""
    from router.decision import Decision, Escalation
    from router.narrowing import local_only

    models: dict[str, Tier] = {m.name: m for m in (FakeTier("edge", "edge"), FakeTier("cloud", "cloud"))}
    listed = Decision(("cloud", "edge"), "rule", cloud_allowed=False, cascade=Escalation("cloud", 0.5))
    kept = local_only(models, listed)
    assert kept.targets == ("edge",) and kept.cascade is None
    allowed = Decision(("cloud", "edge"), "rule", cascade=Escalation("cloud", 0.5))
    assert local_only(models, allowed) == allowed
