"""Function calling on the edge: the bundled 135M model calls tools correctly under a grammar.

Sampling is held to a grammar built from the tools' parameter schemas, so even a model never
trained on tool calls answers with a call whose arguments validate, returned as `tool_calls`
with `finish_reason: tool_calls`, whole or streamed, in every API.
"""

from __future__ import annotations

import asyncio
import json
import time

import anthropic
import httpx
import jsonschema
import openai
import pytest

from router.answer import Usage
from router.edge_tools import CallStream
from tests.conftest import APP_KEYS, client_for

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def called(message, tool: dict) -> dict:
    """The one call in `message`, to `tool`, its arguments validated against the tool's schema."""
    (call,) = message.tool_calls
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == tool["function"]["name"]
    arguments = json.loads(call.function.arguments)
    jsonschema.validate(arguments, tool["function"]["parameters"])
    return arguments


def must_call_through_messages(gateway, max_tokens: int):
    """The weather question through the Messages API, a tool call required (`tool_choice: any`)."""
    claude = anthropic.Anthropic(base_url=gateway.url, api_key=APP_KEYS["alpha"], max_retries=0)
    return claude.messages.create(
        model="smollm2",
        max_tokens=max_tokens,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[{"name": "get_weather", "description": "weather", "input_schema": WEATHER["function"]["parameters"]}],
        tool_choice={"type": "any"},
        extra_body={"temperature": 0},
    )


def test_a_required_call_on_the_edge_matches_the_tools_schema(gateway, upstream):
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=60, temperature=0
    )
    answer = raw.parse()
    assert raw.headers["x-edgeway-route"] == "edge" and upstream.requests == []
    assert answer.choices[0].finish_reason == "tool_calls" and answer.choices[0].message.content is None
    assert called(answer.choices[0].message, WEATHER)["unit"] in ("celsius", "fahrenheit")


def test_a_named_function_is_the_one_called_and_the_stream_carries_the_call_as_it_is_written(gateway):
    client = client_for(gateway)
    named = {"type": "function", "function": {"name": "get_time"}}
    answer = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER, TIME], tool_choice=named, max_tokens=40, temperature=0
    )
    called(answer.choices[0].message, TIME)
    chunks = list(
        client.chat.completions.create(
            model="smollm2",
            messages=ASK,
            tools=[WEATHER],
            tool_choice="required",
            max_tokens=60,
            stream=True,
            temperature=0,
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    calls = [d.tool_calls[0] for d in deltas if d.tool_calls]
    assert len(calls) > 2 and all(c.index == 0 for c in calls)  # the name, then the arguments piece by piece
    assert calls[0].id and calls[0].function.name == "get_weather" and calls[0].function.arguments == ""
    assert all(c.id is None and c.function.name is None for c in calls[1:])
    arguments = "".join(c.function.arguments for c in calls)
    jsonschema.validate(json.loads(arguments), WEATHER["function"]["parameters"])
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_auto_may_answer_in_prose_or_call_and_either_is_well_formed(gateway):
    answer = client_for(gateway).chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER], max_tokens=40, temperature=0.9, seed=3
    )
    choice = answer.choices[0]
    if choice.message.tool_calls:
        assert choice.finish_reason == "tool_calls"
        called(choice.message, WEATHER)
    else:
        assert choice.message.content and not choice.message.content.startswith("{")
        assert choice.finish_reason in ("stop", "length")


def test_a_tool_result_goes_back_to_the_edge_and_it_answers(gateway):
    client = client_for(gateway)
    first = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=60, temperature=0
    )
    call = first.choices[0].message.tool_calls[0]
    conversation = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 18, "sky": "clear"}'},
    ]
    second = client.chat.completions.create(
        model="smollm2", messages=conversation, tools=[WEATHER], tool_choice="none", max_tokens=20, temperature=0
    )
    assert second.choices[0].message.content and second.choices[0].message.tool_calls is None


def test_the_messages_api_gets_a_tool_use_block_from_the_edge(gateway):
    message = must_call_through_messages(gateway, max_tokens=60)
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert message.stop_reason == "tool_use" and block.name == "get_weather"
    jsonschema.validate(block.input, WEATHER["function"]["parameters"])


def test_a_tool_schema_that_is_no_json_schema_is_a_clear_400(gateway):
    broken = {"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(gateway).chat.completions.create(
            model="smollm2", messages=ASK, tools=[broken], tool_choice="required"
        )
    assert caught.value.param == "tools[0]" and caught.value.code == "invalid_json_schema"


def test_any_valid_schema_is_taken_and_its_call_matches_it(gateway):
    """Claude Code's tools describe a property with no type (any value), and bound numbers the
    grammar cannot: the call still matches the schema, checked after sampling."""
    tool = {
        "type": "function",
        "function": {
            "name": "run",
            "parameters": {
                "type": "object",
                "properties": {
                    "args": {"description": "Optional input value, verbatim."},
                    "count": {"type": "integer", "minimum": 1, "maximum": 3},
                },
                "required": ["args", "count"],
            },
        },
    }
    message = client_for(gateway).chat.completions.create(
        model="smollm2", messages=ASK, tools=[tool], tool_choice="required", max_tokens=80, temperature=0
    )
    called(message.choices[0].message, tool)


def test_a_call_that_cannot_match_its_schema_is_refused_never_sent(gateway, upstream):
    # valid JSON Schema that no value matches; short, so that the call is whole, never cut by max_tokens
    impossible = {"type": "string", "maxLength": 2, "not": {"type": "string"}}
    tool = {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": impossible}, "required": ["a"]}},
    }
    reply = httpx.post(
        gateway.url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {APP_KEYS['alpha']}"},
        json={"model": "smollm2", "messages": ASK, "tools": [tool], "tool_choice": "required", "max_tokens": 40},
        timeout=120,
    )
    assert reply.status_code == 502, reply.text
    error = reply.json()["error"]
    assert error["code"] == "invalid_model_output" and "breaks the request's schema 3 times" in error["message"]
    assert upstream.requests == []  # the edge was the one target: nothing went elsewhere


def test_a_streamed_call_that_cannot_match_its_schema_ends_in_the_apis_error_event(gateway, upstream):
    """Streamed, the call's name has gone out before its arguments are checked; when no sample
    passes, the stream ends with the Messages API's error event, and no arguments were sent."""
    impossible = {"type": "string", "maxLength": 2, "not": {"type": "string"}}
    tool = {"name": "f", "input_schema": {"type": "object", "properties": {"a": impossible}, "required": ["a"]}}
    body = {
        "model": "smollm2",
        "max_tokens": 40,
        "stream": True,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [tool],
        "tool_choice": {"type": "any"},
    }
    headers = {"x-api-key": APP_KEYS["alpha"], "anthropic-version": "2023-06-01"}
    with httpx.stream("POST", gateway.url + "/v1/messages", json=body, headers=headers, timeout=120) as answer:
        events = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "error", kinds
    (started,) = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert started["type"] == "tool_use" and started["name"] == "f"
    assert not [e for e in events if e["type"] == "content_block_delta"]  # no arguments went out
    assert "breaks the request's schema 3 times" in events[-1]["error"]["message"]
    assert upstream.requests == []


def test_the_responses_api_gets_a_function_call_item_from_the_edge(gateway):
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=APP_KEYS["alpha"], max_retries=0)
    function = WEATHER["function"]
    response = client.responses.create(
        model="smollm2",
        input="What is the weather in Paris?",
        tools=[{"type": "function", "name": function["name"], "parameters": function["parameters"], "strict": False}],
        tool_choice="required",
        max_output_tokens=60,
        temperature=0,
    )
    (item,) = [i for i in response.output if i.type == "function_call"]
    assert item.name == "get_weather" and response.status == "completed"
    jsonschema.validate(json.loads(item.arguments), function["parameters"])


def test_a_call_cut_by_max_tokens_is_a_cut_call_with_the_arguments_so_far(gateway):
    """As OpenAI reports it: `tool_calls` with the arguments generated before the cut and
    `finish_reason: length`; the grammar's `{"name": ..., "arguments": ...}` envelope is never text."""
    answer = client_for(gateway).chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=14, temperature=0
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "length" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert call.function.arguments.startswith("{") and '"name"' not in call.function.arguments
    whole = client_for(gateway).chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=60, temperature=0
    )
    assert whole.choices[0].message.tool_calls[0].function.arguments.startswith(call.function.arguments.rstrip())


def test_a_cut_call_through_the_messages_api_is_a_tool_use_block_cut_at_max_tokens(gateway):
    message = must_call_through_messages(gateway, max_tokens=14)
    assert message.stop_reason == "max_tokens"
    assert [b.type for b in message.content] == ["tool_use"] and message.content[0].name == "get_weather"
    assert message.content[0].input == {}


BOUNDED_SHELL = {  # as Claude Code's Bash tool bounds its timeout: more than a grammar holds
    "name": "bash",
    "description": "Run a shell command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout": {"type": "number", "maximum": 600000}},
        "required": ["command"],
    },
}


@pytest.mark.parametrize("ask", ["Write a short poem about the sea.", "List the files here with ls."])
def test_a_checked_tool_does_not_hold_back_the_stream(gateway, ask):
    """A tool whose schema is checked after sampling no longer holds the whole answer: the first
    event comes with the first tokens, prose streams as written, a call's name goes out at once
    and its arguments once they pass (a client would otherwise see nothing until the end)."""
    claude = anthropic.Anthropic(base_url=gateway.url, api_key=APP_KEYS["alpha"], max_retries=0)
    arrived: list[tuple[float, str]] = []
    with claude.messages.stream(
        model="smollm2",
        max_tokens=40,
        messages=[{"role": "user", "content": ask}],
        tools=[BOUNDED_SHELL],
        extra_body={"temperature": 0},
    ) as stream:
        for event in stream:
            arrived.append((time.monotonic(), event.type))
        message = stream.get_final_message()
    content = [t for t, kind in arrived if kind in ("text", "content_block_start")]
    assert content and arrived[-1][1] == "message_stop"
    assert arrived[-1][0] - content[0] > 0.1, arrived  # written over time, not sent at once at the end
    for block in message.content:
        if block.type == "tool_use":
            jsonschema.validate(block.input, BOUNDED_SHELL["input_schema"])


def test_a_streamed_tool_call_delta_carries_no_content(gateway):
    """OpenAI leaves `content` out (or null) beside `tool_calls`; llama.cpp's server tests reject `""`."""
    body = {
        "model": "smollm2",
        "messages": ASK,
        "tools": [WEATHER],
        "tool_choice": "required",
        "max_tokens": 60,
        "temperature": 0,
        "stream": True,
    }
    with httpx.stream(
        "POST",
        gateway.url + "/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {APP_KEYS['alpha']}"},
    ) as answer:
        lines = [line[6:] for line in answer.iter_lines() if line.startswith("data: {")]
    deltas = [json.loads(line)["choices"][0]["delta"] for line in lines if json.loads(line)["choices"]]
    with_calls = [d for d in deltas if d.get("tool_calls")]
    assert with_calls and all(d.get("content") is None for d in with_calls)


# --- the call as it streams (router.edge_tools.CallStream), with a fake generation's chunks ----------
class Written:
    """An edge stream's chunks for `pieces` of text, then `finish`."""

    def __init__(self, pieces: list[str], finish: str) -> None:
        self.pieces, self.finish = pieces, finish
        self.usage = Usage(5, len(pieces))

    async def __aiter__(self):
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "smollm2"}
        yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
        for piece in self.pieces:
            yield {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": self.finish}]}

    async def aclose(self) -> None:
        return None


def streamed(pieces: list[str], finish: str = "stop") -> list[dict]:
    async def collect() -> list[dict]:
        return [chunk async for chunk in CallStream(Written(pieces, finish))]

    return asyncio.run(collect())


def in_pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def calls_of(chunks: list[dict]) -> list[dict]:
    return [c for chunk in chunks for c in chunk["choices"][0]["delta"].get("tool_calls") or []]


@pytest.mark.parametrize("size", [1, 2, 5, 200])
def test_a_call_streams_its_name_then_its_arguments_never_the_envelope(size):
    arguments = '{"city": "Pa}ris {\\"x\\"", "days": [1, {"n": 2}]}'
    chunks = streamed(in_pieces(f'{{"name": "get_weather", "arguments": {arguments}}}', size))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    calls = calls_of(chunks)
    assert calls[0]["id"].startswith("call_") and calls[0]["function"] == {"name": "get_weather", "arguments": ""}
    assert "".join(c["function"]["arguments"] for c in calls) == arguments
    assert all("content" not in chunk["choices"][0]["delta"] for chunk in chunks[1:])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    if size < len(arguments):
        assert len(calls) > 2  # the arguments in pieces, as they were written


def test_prose_streams_as_it_is_written():
    chunks = streamed(["It is ", "sunny."])
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "It is sunny."
    assert not calls_of(chunks) and chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("written", "name", "arguments"),
    [
        ('{"name": "get_weather", "arguments": {"city": "Par', "get_weather", '{"city": "Par'),
        ('{"name": "get_wea', "get_wea", ""),
    ],
)
def test_a_call_cut_by_max_tokens_ends_with_what_was_written_and_length(written, name, arguments):
    chunks = streamed(in_pieces(written), finish="length")
    calls = calls_of(chunks)
    assert calls[0]["function"]["name"] == name
    assert "".join(c["function"]["arguments"] for c in calls) == arguments
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
