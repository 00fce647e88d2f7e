"""Anthropic's Messages API at /v1/messages, driven by the official `anthropic` SDK: edge and cloud
routes, streams, tool use, errors in Anthropic's shape, and the privacy invariant on this API."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import httpx
import jsonschema
import pytest

from tests.conftest import TERSE_CONVERSATION, TWO_APPS, GatewayProcess, two_apps
from tests.fake_upstream import Fault

WEATHER = {
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HELLO = [{"role": "user", "content": "Say hello in one short sentence."}]


@pytest.fixture(scope="module")
def messages_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    yield from two_apps(upstream, tmp_path_factory.mktemp("messages_gateway"))


def client(gateway: GatewayProcess, app: str = "open") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=TWO_APPS[app], max_retries=0)


def test_the_edge_answers_a_message_with_usage_and_routing_headers(messages_gateway):
    raw = client(messages_gateway).messages.with_raw_response.create(model="smollm2", max_tokens=12, messages=HELLO)
    message = raw.parse()
    assert raw.headers["x-edgeway-route"] == "edge"
    assert message.type == "message" and message.role == "assistant" and message.model == "smollm2"
    assert message.content[0].type == "text" and message.content[0].text.strip()
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert 0 < message.usage.output_tokens <= 12 and message.usage.input_tokens > 5


def test_a_streamed_message_from_the_edge_has_anthropics_events(messages_gateway):
    with client(messages_gateway).messages.stream(model="auto", max_tokens=12, messages=HELLO) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text.strip() and final.content[0].text == text
    assert final.stop_reason in ("end_turn", "max_tokens") and 0 < final.usage.output_tokens <= 12


def test_a_system_prompt_and_earlier_turns_reach_the_model(messages_gateway, upstream):
    client(messages_gateway).messages.create(
        model="gpt-fake",
        max_tokens=20,
        system="You are terse.",
        messages=[
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
            {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
        ],
        stop_sequences=["\n\n"],
        metadata={"user_id": "u-7"},
    )
    sent = upstream.requests[-1].body
    assert sent["messages"] == TERSE_CONVERSATION
    assert sent["stop"] == ["\n\n"] and sent["user"] == "u-7" and sent["max_tokens"] == 20


def test_tool_use_round_trips_through_a_cloud_model(messages_gateway, upstream):
    first = client(messages_gateway).messages.create(
        model="gpt-fake", max_tokens=50, tools=[WEATHER], messages=[{"role": "user", "content": "Weather in Paris?"}]
    )
    assert first.stop_reason == "tool_use"
    call = next(block for block in first.content if block.type == "tool_use")
    assert call.name == "get_weather" and call.input == {"city": "Paris"}
    sent = upstream.requests[-1].body
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["tools"][0]["function"]["parameters"] == WEATHER["input_schema"]
    client(messages_gateway).messages.create(
        model="gpt-fake",
        max_tokens=50,
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "18 C, sunny"}]},
        ],
    )
    turns = upstream.requests[-1].body["messages"]
    assert turns[1]["tool_calls"][0]["id"] == call.id
    assert turns[2] == {"role": "tool", "tool_call_id": call.id, "content": "18 C, sunny"}


def test_a_streamed_tool_call_arrives_as_a_tool_use_block(messages_gateway, upstream):
    with client(messages_gateway).messages.stream(
        model="gpt-fake", max_tokens=50, tools=[WEATHER], messages=[{"role": "user", "content": "Weather in Paris?"}]
    ) as stream:
        final = stream.get_final_message()
    call = next(block for block in final.content if block.type == "tool_use")
    assert call.input == {"city": "Paris"} and final.stop_reason == "tool_use"


def test_an_anthropic_cloud_model_answers_through_this_api(messages_gateway, upstream):
    message = client(messages_gateway).messages.create(model="claude-fake", max_tokens=20, messages=HELLO)
    assert message.content[0].text.startswith("This is the fake cloud")
    assert upstream.requests[-1].path == "/v1/messages"


def test_errors_have_anthropics_shape_and_status(messages_gateway):
    answer = httpx.post(
        messages_gateway.url + "/v1/messages",
        json={"model": "smollm2", "messages": HELLO},
        headers={"x-api-key": TWO_APPS["open"], "anthropic-version": "2023-06-01"},
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required (an integer)."},
    }
    with pytest.raises(anthropic.BadRequestError):
        client(messages_gateway).messages.create(model="smollm2", max_tokens=0, messages=HELLO)
    with pytest.raises(anthropic.NotFoundError):
        client(messages_gateway).messages.create(model="claude-9", max_tokens=5, messages=HELLO)
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=messages_gateway.url, api_key="wrong-key-000", max_retries=0).messages.create(
            model="smollm2", max_tokens=5, messages=HELLO
        )


def test_a_stop_sequence_that_ends_the_answer_is_reported_whole_and_streamed(messages_gateway):
    """Anthropic says which stop sequence ended the answer: `stop_reason: stop_sequence` and the
    sequence itself, in the message and in the stream's `message_delta`."""
    asked = {"model": "smollm2", "max_tokens": 40, "messages": HELLO, "stop_sequences": ["e"]}
    message = client(messages_gateway).messages.create(**asked, extra_body={"temperature": 0})
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "e"
    assert "e" not in message.content[0].text
    with client(messages_gateway).messages.stream(**asked, extra_body={"temperature": 0}) as stream:
        events = list(stream)
        final = stream.get_final_message()
    (delta,) = [e for e in events if e.type == "message_delta"]
    assert delta.delta.stop_reason == "stop_sequence" and delta.delta.stop_sequence == "e"
    assert final.stop_sequence == "e" and final.content[0].text == message.content[0].text


def test_count_tokens_counts_what_the_edge_model_reads(messages_gateway):
    """`messages.count_tokens`, as Claude Code calls it: for an edge model the exact count its own
    template and tokenizer give, the same the answer's usage reports; no model runs, no row is written."""
    claude = client(messages_gateway)
    conversation = {"system": "You are terse.", "messages": HELLO}
    counted = claude.messages.count_tokens(model="smollm2", **conversation)
    answered = claude.messages.create(model="smollm2", max_tokens=1, **conversation)
    assert counted.input_tokens == answered.usage.input_tokens
    with_tool = claude.messages.count_tokens(model="smollm2", tools=[WEATHER], **conversation)
    assert with_tool.input_tokens > counted.input_tokens
    estimated = claude.messages.count_tokens(model="gpt-fake", **conversation)
    assert 0 < estimated.input_tokens < 4 * counted.input_tokens
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.count_tokens(model="claude-9", **conversation)


def test_count_tokens_counts_tools_and_answers_past_the_edges_context(messages_gateway):
    """Claude Code counts a prompt with its tools before it sends it: a count that leaves tools out
    misleads its compaction, and one past the edge's context must still be a count, not an error."""
    claude = client(messages_gateway)
    tools = [{**WEATHER, "name": f"tool_{i}", "description": "A tool with a long description. " * 40} for i in range(8)]
    bare = claude.messages.count_tokens(model="gpt-fake", messages=HELLO).input_tokens
    with_tools = claude.messages.count_tokens(model="gpt-fake", messages=HELLO, tools=tools).input_tokens
    on_edge = claude.messages.count_tokens(model="smollm2", messages=HELLO, tools=tools).input_tokens
    assert with_tools > bare + 1500 and 0.5 < with_tools / on_edge < 2  # the estimate counts them as the edge does
    assert claude.messages.count_tokens(model="auto", messages=HELLO, tools=tools).input_tokens == with_tools
    longer = [{"role": "user", "content": "The tide rose over the flats again. " * 1500}]  # past 2,048 tokens
    counted = claude.messages.count_tokens(model="smollm2", messages=longer).input_tokens
    assert counted > 2048


def test_a_system_message_mid_conversation_is_kept_where_it_stands(messages_gateway, upstream):
    """Claude Code sends one on every turn (Anthropic's `mid-conversation-system` beta)."""
    raw = httpx.post(
        messages_gateway.url + "/v1/messages",
        json={
            "model": "gpt-fake",
            "max_tokens": 20,
            "system": [{"type": "text", "text": "You are terse."}],
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "system", "content": "Available agent types: none."},
                {"role": "assistant", "content": "Hello."},
                {"role": "user", "content": "What is 2+2?"},
            ],
        },
        headers={"x-api-key": TWO_APPS["open"], "anthropic-beta": "mid-conversation-system-2026-04-07"},
    )
    assert raw.status_code == 200, raw.text
    roles = [(m["role"], m["content"]) for m in upstream.requests[-1].body["messages"]]
    assert roles[:3] == [("system", "You are terse."), ("user", "Hi"), ("system", "Available agent types: none.")]
    on_edge = client(messages_gateway).messages.create(
        model="smollm2",
        max_tokens=4,
        messages=[{"role": "user", "content": "Hi"}, {"role": "system", "content": "Be brief."}],
    )
    assert on_edge.usage.input_tokens > 0


def test_a_cloud_stream_reports_its_usage_in_anthropics_events(messages_gateway, upstream):
    with client(messages_gateway).messages.stream(model="gpt-fake", max_tokens=30, messages=HELLO) as stream:
        events = list(stream)
    (start,) = [e for e in events if e.type == "message_start"]
    (delta,) = [e for e in events if e.type == "message_delta"]
    assert start.message.usage.input_tokens > 0  # the estimate it was admitted by, as the stream starts
    reported = max(1, len(json.dumps(upstream.requests[-1].body["messages"])) // 4)  # what the fake counts
    assert delta.usage.input_tokens == reported  # the provider's count, once the stream has it
    assert delta.usage.output_tokens > 0


def test_output_config_format_asks_for_json_of_that_schema(messages_gateway, upstream):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    claude = client(messages_gateway)
    message = claude.messages.create(
        model="smollm2",
        max_tokens=40,
        messages=[{"role": "user", "content": "Name a city."}],
        extra_body={"output_config": {"format": {"type": "json_schema", "schema": schema}}, "temperature": 0},
    )
    jsonschema.validate(json.loads(message.content[0].text), schema)
    claude.messages.create(
        model="gpt-fake",
        max_tokens=40,
        messages=[{"role": "user", "content": "Name a city."}],
        extra_body={"output_config": {"format": {"type": "json_schema", "schema": schema}}},
    )
    sent = upstream.requests[-1].body["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
    refused = httpx.post(
        messages_gateway.url + "/v1/messages",
        json={"model": "smollm2", "max_tokens": 5, "messages": HELLO, "output_config": {"format": {"type": "xml"}}},
        headers={"x-api-key": TWO_APPS["open"]},
    )
    assert refused.status_code == 400 and refused.json()["error"]["type"] == "invalid_request_error"
    assert "output_config.format.type" in refused.json()["error"]["message"]


def test_anything_under_v1_messages_answers_in_anthropics_shape(messages_gateway):
    answer = httpx.post(
        messages_gateway.url + "/v1/messages/batches/nothing",
        json={},
        headers={"x-api-key": TWO_APPS["open"], "anthropic-version": "2023-06-01"},
    )
    assert answer.status_code == 404
    assert answer.json()["type"] == "error" and answer.json()["error"]["type"] == "not_found_error"
    assert "under /v1" not in answer.json()["error"]["message"]


def test_a_stream_that_breaks_ends_with_an_error_event(messages_gateway, upstream):
    upstream.fail_next(Fault(drop_after_chunks=3))
    with pytest.raises(anthropic.APIError):
        with client(messages_gateway).messages.stream(model="gpt-fake", max_tokens=50, messages=HELLO) as stream:
            for _ in stream.text_stream:
                pass


@pytest.mark.parametrize(
    "content",
    [
        "my SSN is 123-45-6789, what is 2+2?",
        [{"type": "text", "text": "What is 2+2?"}, {"type": "text", "text": "card 4111 1111 1111 1111"}],
        [{"type": "tool_result", "tool_use_id": "t1", "content": "customer jane.roe@example.com"}],
    ],
)
def test_a_private_message_stays_on_the_edge_through_this_api_too(messages_gateway, upstream, content):
    messages = [{"role": "user", "content": content}]
    if isinstance(content, list) and content[0]["type"] == "tool_result":
        messages = [
            {"role": "user", "content": "Look me up."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]},
            *messages,
        ]
    raw = client(messages_gateway, "private").messages.with_raw_response.create(
        model="auto", max_tokens=4, messages=messages
    )
    assert raw.headers["x-edgeway-route"] == "edge"
    assert upstream.bytes_received == 0


def test_the_key_may_come_as_a_bearer_token_too(messages_gateway):
    answer = httpx.post(
        messages_gateway.url + "/v1/messages",
        json={"model": "smollm2", "max_tokens": 3, "messages": HELLO},
        headers={"authorization": f"Bearer {TWO_APPS['open']}"},
    )
    assert answer.status_code == 200 and answer.json()["type"] == "message"
