"""OpenAI's Responses API at /v1/responses, driven by the official SDK's `client.responses`: both
tiers, items and instructions, function calls, structured output, streams, and the invariants."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.conftest import TERSE_CONVERSATION, TWO_APPS, GatewayProcess, two_apps
from tests.fake_upstream import AgentScript, Fault

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


# An OpenAI-compatible server that speaks Chat Completions only: a Responses request reaches it translated.
CHAT_ONLY = {
    "name": "gpt-chat",
    "provider_model": "hosted_vllm/chat-only",
    "api_key": "sk-fake",
    "apis": ["chat_completions"],
}


@pytest.fixture(scope="module")
def responses_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    cloud = [{**CHAT_ONLY, "api_base": upstream.url + "/v1"}]
    yield from two_apps(upstream, tmp_path_factory.mktemp("responses_gateway"), cloud=cloud)


def client(gateway: GatewayProcess, app: str = "open") -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=TWO_APPS[app], max_retries=0)


def test_the_edge_answers_a_string_input_with_usage(responses_gateway):
    raw = client(responses_gateway).responses.with_raw_response.create(
        model="smollm2", input="Say hello in one short sentence.", max_output_tokens=12
    )
    response = raw.parse()
    assert raw.headers["x-edgeway-route"] == "edge"
    assert response.object == "response" and response.status in ("completed", "incomplete")
    assert response.output_text.strip()
    assert 0 < response.usage.output_tokens <= 12 and response.usage.input_tokens > 5


def test_instructions_and_items_reach_a_chat_model_as_a_conversation(responses_gateway, upstream):
    client(responses_gateway).responses.create(
        model="gpt-chat",
        instructions="You are terse.",
        input=[
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]},
            {"role": "user", "content": [{"type": "input_text", "text": "What is 2+2?"}]},
        ],
        max_output_tokens=20,
    )
    sent = upstream.requests[-1].body
    assert sent["messages"] == TERSE_CONVERSATION
    assert sent["max_tokens"] == 20


def test_a_function_call_round_trips_through_a_chat_model(responses_gateway, upstream):
    first = client(responses_gateway).responses.create(model="gpt-chat", input="Weather in Paris?", tools=[WEATHER])
    call = next(item for item in first.output if item.type == "function_call")
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    client(responses_gateway).responses.create(
        model="gpt-chat",
        tools=[WEATHER],
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "18 C, sunny"},
        ],
    )
    turns = upstream.requests[-1].body["messages"]
    assert turns[1]["tool_calls"][0]["id"] == call.call_id
    assert turns[2] == {"role": "tool", "tool_call_id": call.call_id, "content": "18 C, sunny"}


def test_a_streamed_response_has_the_semantic_events_and_ends_completed(responses_gateway):
    events = list(
        client(responses_gateway).responses.create(
            model="smollm2", input="Say hello in one short sentence.", max_output_tokens=12, stream=True
        )
    )
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    assert text.strip() and final.output_text == text and final.usage.output_tokens > 0


@pytest.mark.parametrize("model", ["smollm2", "gpt-chat", "gpt-fake"])
def test_a_streamed_part_starts_empty_so_the_text_is_told_once(responses_gateway, model):
    """As OpenAI streams it: `content_part.added` carries an empty part and every piece of text
    comes in a delta, so the SDK's running snapshot ends equal to `output_text.done`."""
    with client(responses_gateway).responses.stream(
        model=model, input="Say hello in one short sentence.", max_output_tokens=12
    ) as stream:
        events = list(stream)
    (added,) = [e for e in events if e.type == "response.content_part.added"]
    assert added.part.text == ""
    snapshots = [e.snapshot for e in events if e.type == "response.output_text.delta"]
    (done,) = [e for e in events if e.type == "response.output_text.done"]
    assert done.text.strip() and snapshots[-1] == done.text


def test_the_stream_helper_gives_the_final_response_with_a_function_call(responses_gateway):
    with client(responses_gateway).responses.stream(model="gpt-fake", input="Weather?", tools=[WEATHER]) as stream:
        final = stream.get_final_response()
    call = next(item for item in final.output if item.type == "function_call")
    assert json.loads(call.arguments) == {"city": "Paris"}


@pytest.mark.parametrize("model, deltas", [("gpt-fake", True), ("gpt-fake", False), ("gpt-chat", True)])
def test_a_streamed_turn_that_only_calls_a_tool_has_its_time_to_first_event_in_the_ledger(
    responses_gateway, upstream, model, deltas
):
    """An agent's turn whose answer is a tool call has no text (and, from a provider that sends
    the call's arguments whole at its end, no deltas either): its row's `ttft_ms` is the time its
    first event took all the same (the provider's 300 ms before its first byte, and more)."""
    upstream.latency_s, upstream.call_deltas = 0.3, deltas
    body = {"model": model, "input": "Weather in Paris?", "tools": [WEATHER], "stream": True}
    headers = {"authorization": f"Bearer {TWO_APPS['open']}"}
    with httpx.stream("POST", responses_gateway.url + "/v1/responses", json=body, headers=headers) as answer:
        said = answer.read().decode()
    assert answer.status_code == 200 and "function_call" in said and "output_text.delta" not in said
    rows = httpx.get(responses_gateway.url + "/api/usage", headers=headers).json()["recent"]
    (row,) = [r for r in rows if r["request_id"] == answer.headers["x-edgeway-request-id"]]
    assert row["stream"] and 300 <= row["ttft_ms"] <= row["latency_ms"], row


def test_structured_output_on_the_edge_matches_the_schema(responses_gateway):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
        "additionalProperties": False,
    }
    response = client(responses_gateway).responses.create(
        model="smollm2",
        input="Give the largest city of France and its population as JSON.",
        max_output_tokens=60,
        temperature=0,
        text={"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}},
    )
    assert set(json.loads(response.output_text)) == {"city", "population"}


def test_a_cut_answer_is_incomplete_with_its_reason(responses_gateway):
    response = client(responses_gateway).responses.create(
        model="smollm2", input="Write a long story about a dragon.", max_output_tokens=3, temperature=0
    )
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"


def test_previous_response_id_is_refused_because_nothing_is_kept(responses_gateway):
    with pytest.raises(openai.BadRequestError) as caught:
        client(responses_gateway).responses.create(model="smollm2", input="Go on.", previous_response_id="resp_1")
    assert caught.value.param == "previous_response_id"


def test_a_hosted_tool_goes_to_a_responses_provider_and_is_a_clear_400_where_none_may(responses_gateway, upstream):
    """What Chat Completions cannot carry (a hosted tool but search, an item of a kind it has not)
    goes only to a provider that takes Responses; elsewhere the client hears what and why."""
    search_files = {"type": "file_search", "vector_store_ids": ["vs_1"]}
    client(responses_gateway).responses.create(model="gpt-fake", input="Hi", tools=[search_files])
    assert upstream.requests[-1].path == "/v1/responses" and upstream.requests[-1].body["tools"] == [search_files]
    for model in ("gpt-chat", "smollm2"):
        with pytest.raises(openai.BadRequestError) as caught:
            client(responses_gateway).responses.create(model=model, input="Hi", tools=[search_files])
        assert caught.value.code == "unsupported_parameter" and "'file_search' tool" in caught.value.message


CRM = {  # Codex CLI groups its sub-agent tools so; here a name collides with a top-level tool's
    "type": "namespace",
    "name": "crm",
    "description": "The customer records.",
    "tools": [
        {
            "type": "function",
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
        {"type": "function", "name": "close_case", "parameters": {"type": "object", "properties": {}}},
    ],
}
LOOKUP = {
    "type": "function",
    "name": "lookup",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


@pytest.mark.parametrize("stream", [False, True])
def test_a_namespaces_tools_are_flattened_for_the_model_and_its_call_given_back_grouped(
    responses_gateway, upstream, stream
):
    upstream.script = AgentScript(tool="crm__lookup", arguments={"id": "c-7"}, answer="Found it.")
    made = client(responses_gateway).responses.create(
        model="gpt-chat", input="Find case c-7.", tools=[CRM, LOOKUP], stream=stream
    )
    if stream:
        events = list(made)
        made = next(e.response for e in events if e.type == "response.completed")
        added = next(e.item for e in events if e.type == "response.output_item.added")
        assert added.name == "lookup" and added.namespace == "crm"
    sent = upstream.requests[-1].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["crm__lookup", "close_case", "lookup"]
    assert sent["tools"][1]["function"]["description"].startswith("(crm: The customer records.)")
    (call,) = [item for item in made.output if item.type == "function_call"]
    assert (call.name, call.namespace, json.loads(call.arguments)) == ("lookup", "crm", {"id": "c-7"})
    follow = client(responses_gateway).responses.create(
        model="gpt-chat",
        tools=[CRM, LOOKUP],
        input=[
            {"role": "user", "content": "Find case c-7."},
            {"type": "function_call", "call_id": call.call_id, "name": "lookup", "namespace": "crm", "arguments": "{}"},
            {"type": "function_call_output", "call_id": call.call_id, "output": "case c-7: open"},
        ],
    )
    assert upstream.requests[-1].body["messages"][1]["tool_calls"][0]["function"]["name"] == "crm__lookup"
    assert follow.output_text.strip() == "Found it."


def test_hosted_web_search_goes_to_a_model_that_searches_and_is_refused_where_none_may(responses_gateway, upstream):
    search = {"type": "web_search", "search_context_size": "low", "external_web_access": False}
    client(responses_gateway).responses.create(model="gpt-chat", input="News today?", tools=[search, WEATHER])
    sent = upstream.requests[-1].body
    assert sent["web_search_options"] == {"search_context_size": "low"}
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]
    with pytest.raises(openai.BadRequestError) as caught:
        client(responses_gateway).responses.create(model="smollm2", input="News today?", tools=[search])
    assert caught.value.param == "tools" and caught.value.code == "unsupported_parameter"
    assert "Hosted tool 'web_search' is not supported" in caught.value.message


def test_a_broken_stream_ends_with_an_error_event(responses_gateway, upstream):
    upstream.fail_next(Fault(drop_after_chunks=3))
    with pytest.raises(openai.APIError):
        for _ in client(responses_gateway).responses.create(model="gpt-fake", input="Hi", stream=True):
            pass


@pytest.mark.parametrize(
    "given",
    [
        "my SSN is 123-45-6789, what is 2+2?",
        [{"role": "user", "content": [{"type": "input_text", "text": "card 4111 1111 1111 1111"}]}],
        [
            {"role": "user", "content": "Look me up."},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "lookup",
                "arguments": '{"email": "jane.roe@example.com"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "found"},
        ],
    ],
)
def test_private_input_stays_on_the_edge_through_this_api_too(responses_gateway, upstream, given):
    raw = client(responses_gateway, "private").responses.with_raw_response.create(
        model="auto", input=given, max_output_tokens=4
    )
    assert raw.headers["x-edgeway-route"] == "edge"
    assert upstream.bytes_received == 0
