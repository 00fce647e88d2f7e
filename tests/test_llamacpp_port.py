"""llama.cpp's own OpenAI-compatible server tests, ported to edgeway and the bundled model.

Each case below is one of llama.cpp's (tools/server/tests/unit: test_chat_completion,
test_completion, test_tool_call, test_compat_oai_responses, test_compat_anthropic,
test_embedding), named after it, rewritten against edgeway's edge model with the model-agnostic
part of its assertions: llama.cpp's expect the exact words of its own tiny test models, which
the bundled SmolLM2 does not say. Cases that test llama.cpp's own extensions rather than the
OpenAI or Anthropic API (`/tokenize`, `/apply-template`, `__verbose`, the `grammar` field,
`timings_per_token`, `return_progress`, `n_probs`, a `schema` inside `json_object`) are not
ported; docs/edge-runtime.md lists them. `python -m pytest tests/test_llamacpp_port.py -q`
prints the pass count.
"""

from __future__ import annotations

import json

import anthropic
import httpx
import jsonschema
import openai
import pytest

from edge_runtime import EdgeEngine, EdgeModelConfig
from tests.conftest import APP_KEYS, client_for

BOOK = [{"role": "system", "content": "Book"}, {"role": "user", "content": "What is the best book"}]
EDGE = "smollm2"


def chat(gateway, **body) -> httpx.Response:
    return httpx.post(
        gateway.url + "/v1/chat/completions",
        json={"model": EDGE, **body},
        headers={"authorization": f"Bearer {APP_KEYS['alpha']}"},
        timeout=60,
    )


def events(response: httpx.Response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]


# --- test_chat_completion.py --------------------------------------------------------------------
@pytest.mark.parametrize(
    "user", ["What is the best book", [{"type": "text", "text": "What is"}, {"type": "text", "text": "the best book"}]]
)
def test_chat_completion(gateway, user):
    response = chat(
        gateway, max_tokens=8, messages=[{"role": "system", "content": "Book"}, {"role": "user", "content": user}]
    )
    assert response.status_code == 200
    body = response.json()
    assert "cmpl" in body["id"] and body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"]
    assert body["usage"]["prompt_tokens"] > 5
    assert (body["usage"]["completion_tokens"], choice["finish_reason"]) == (8, "length") or choice[
        "finish_reason"
    ] == "stop"


def test_chat_completion_stream(gateway):
    response = chat(gateway, max_tokens=8, messages=BOOK, stream=True, stream_options={"include_usage": True})
    chunks = events(response)
    first, *rest = [c for c in chunks if c["choices"]]
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert all("role" not in c["choices"][0]["delta"] for c in rest)
    assert len({c["id"] for c in chunks}) == 1  # one completion id for every event
    last = rest[-1]["choices"][0]
    assert last["finish_reason"] in ("stop", "length") and not last["delta"].get("content")
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in rest)
    assert content and chunks[-1]["usage"]["completion_tokens"] <= 8


def test_chat_completion_with_openai_library(gateway):
    answer = client_for(gateway).chat.completions.create(
        model=EDGE, messages=BOOK, max_tokens=8, seed=42, temperature=0.8
    )
    assert answer.choices[0].finish_reason in ("length", "stop") and answer.choices[0].message.content is not None


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"const": "foooooo"}}}, '"foooooo"'),
        (
            {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": "array", "items": {"type": "integer"}}},
            },
            "[",
        ),
        ({"type": "json_object"}, "{"),
    ],
)
def test_completion_with_response_format(gateway, response_format, expected):
    response = chat(
        gateway,
        max_tokens=20,
        messages=[
            {"role": "system", "content": "You are a coding assistant."},
            {"role": "user", "content": "Write an example"},
        ],
        response_format=response_format,
    )
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"].startswith(expected)


@pytest.mark.parametrize(
    "response_format",
    [{"type": "sound"}, {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 123}}}],
)
def test_completion_with_invalid_response_format(gateway, response_format):
    response = chat(gateway, max_tokens=5, messages=BOOK, response_format=response_format)
    assert response.status_code == 400 and "error" in response.json()


@pytest.mark.parametrize(
    "messages",
    [
        None,
        "string",
        [123],
        [{}],
        [{"role": 123}],
        [{"role": "system", "content": 123}],
        [{"role": "system", "content": "test"}, {}],
    ],
)
def test_invalid_chat_completion_req(gateway, messages):
    response = chat(gateway, messages=messages)
    assert response.status_code == 400 and "error" in response.json()


def test_logprobs(gateway):
    answer = client_for(gateway).chat.completions.create(
        model=EDGE, temperature=0.0, messages=BOOK, max_tokens=5, logprobs=True, top_logprobs=10
    )
    tokens = answer.choices[0].logprobs.content
    assert "".join(t.token for t in tokens) == answer.choices[0].message.content
    assert all(t.logprob <= 0.0 and t.bytes is not None and len(t.top_logprobs) > 0 for t in tokens)


def test_logprobs_stream(gateway):
    text, aggregated = "", ""
    for i, chunk in enumerate(
        client_for(gateway).chat.completions.create(
            model=EDGE, temperature=0.0, messages=BOOK, max_tokens=5, logprobs=True, top_logprobs=10, stream=True
        )
    ):
        choice = chunk.choices[0]
        if i == 0:
            assert choice.delta.role == "assistant"
        elif choice.finish_reason is None and choice.delta.content:
            text += choice.delta.content
            for token in choice.logprobs.content:
                aggregated += token.token
                assert token.logprob <= 0.0 and len(token.top_logprobs) > 0
    assert aggregated == text


def test_logit_bias(gateway):
    """The tokens of common words, biased to -100, are never written (another spelling of the
    word may be: a tokenizer has several ways to write most words, so that is what is checked)."""
    exclude = ["the", "The", "a", "is", "book", "Book", "and", "I", "it", "of"]
    engine = EdgeEngine(EdgeModelConfig(name=EDGE, n_ctx=256))
    engine.load()
    try:
        ids = {t for word in exclude for t in engine.tokenize_text(" " + word)[1:]}  # [0] is the BOS
        banned = {engine.token_bytes(t) for t in ids}
    finally:
        engine.close()
    answer = client_for(gateway).chat.completions.create(
        model=EDGE, temperature=0.0, messages=BOOK, max_tokens=64, logprobs=True, logit_bias={str(t): -100 for t in ids}
    )
    written = [bytes(t.bytes) for t in answer.choices[0].logprobs.content]
    assert written and not banned & set(written)


def test_context_size_exceeded(gateway):
    response = chat(gateway, messages=BOOK * 200)
    assert response.status_code == 400 and response.json()["error"]["code"] == "context_length_exceeded"


def test_context_size_exceeded_stream(gateway):
    response = chat(gateway, messages=BOOK * 200, stream=True)
    assert response.status_code == 400 and response.json()["error"]["code"] == "context_length_exceeded"


def test_chat_completions_multiple_choices(gateway):
    body = chat(gateway, max_tokens=8, n=2, messages=BOOK).json()
    assert len(body["choices"]) == 2
    assert all(
        c["message"]["role"] == "assistant" and c["finish_reason"] in ("length", "stop") for c in body["choices"]
    )


# --- test_completion.py (legacy text completions) ------------------------------------------------
def test_completion(gateway):
    answer = client_for(gateway).completions.create(model=EDGE, prompt="I believe the meaning of life is", max_tokens=8)
    assert answer.choices[0].text and answer.usage.completion_tokens <= 8 and answer.usage.prompt_tokens > 3


def test_completion_stream(gateway):
    pieces = list(
        client_for(gateway).completions.create(
            model=EDGE, prompt="I believe the meaning of life is", max_tokens=8, stream=True
        )
    )
    text = "".join(p.choices[0].text for p in pieces if p.choices)
    assert text and pieces[-1].choices[0].finish_reason in ("length", "stop")


def test_consistent_result_same_seed(gateway):
    ask = {
        "model": EDGE,
        "prompt": "I believe the meaning of life is",
        "max_tokens": 12,
        "seed": 42,
        "temperature": 1.0,
    }
    texts = {client_for(gateway).completions.create(**ask).choices[0].text for _ in range(3)}
    assert len(texts) == 1


def test_different_result_different_seed(gateway):
    ask = {"model": EDGE, "prompt": "I believe the meaning of life is", "max_tokens": 12, "temperature": 1.0}
    texts = {client_for(gateway).completions.create(**ask, seed=s).choices[0].text for s in range(4)}
    assert len(texts) > 1


# --- test_tool_call.py --------------------------------------------------------------------------
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and country/state, e.g. 'San Francisco, CA'"}
            },
            "required": ["location"],
        },
    },
}
PYTHON = {
    "type": "function",
    "function": {
        "name": "python",
        "description": "Runs code in an ipython interpreter and returns the result of the execution after 60 seconds.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    },
}


@pytest.mark.parametrize("tool", [WEATHER, PYTHON])
def test_completion_with_required_tool(gateway, tool):
    answer = client_for(gateway).chat.completions.create(
        model=EDGE,
        messages=[{"role": "user", "content": "What is the weather in Istanbul? Use a tool."}],
        tools=[tool],
        tool_choice="required",
        max_tokens=80,
        temperature=0,
    )
    (call,) = answer.choices[0].message.tool_calls
    assert answer.choices[0].finish_reason == "tool_calls" and call.function.name == tool["function"]["name"]
    jsonschema.validate(json.loads(call.function.arguments), tool["function"]["parameters"])


def test_completion_without_tool_call(gateway):
    answer = client_for(gateway).chat.completions.create(
        model=EDGE,
        messages=[{"role": "user", "content": "Say hello."}],
        tools=[WEATHER],
        tool_choice="none",
        max_tokens=8,
    )
    assert answer.choices[0].message.tool_calls is None and answer.choices[0].message.content


def test_tool_call_stream(gateway):
    chunks = list(
        client_for(gateway).chat.completions.create(
            model=EDGE,
            messages=[{"role": "user", "content": "Weather in Istanbul?"}],
            tools=[WEATHER],
            tool_choice="required",
            max_tokens=80,
            stream=True,
            temperature=0,
        )
    )
    calls = [d.tool_calls[0] for c in chunks if c.choices for d in [c.choices[0].delta] if d.tool_calls]
    assert calls and calls[0].function.name == "get_current_weather"
    jsonschema.validate(
        json.loads("".join(c.function.arguments or "" for c in calls)), WEATHER["function"]["parameters"]
    )


# --- test_compat_oai_responses.py ---------------------------------------------------------------
def responses_client(gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=APP_KEYS["alpha"], max_retries=0)


def test_responses_with_openai_library(gateway):
    response = responses_client(gateway).responses.create(
        model=EDGE, instructions="Book", input="What is the best book", max_output_tokens=8, temperature=0.8
    )
    assert response.status in ("completed", "incomplete") and response.output_text
    assert response.usage.output_tokens <= 8 and response.id.startswith("resp_")


def test_responses_stream_with_openai_library(gateway):
    kinds, text = [], ""
    for event in responses_client(gateway).responses.create(
        model=EDGE, instructions="Book", input="What is the best book", max_output_tokens=8, stream=True
    ):
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
    # incomplete: cut by max_output_tokens, as the Responses API says it
    assert kinds[0] == "response.created" and kinds[-1] in ("response.completed", "response.incomplete") and text


def test_responses_function_call(gateway):
    function = WEATHER["function"]
    response = responses_client(gateway).responses.create(
        model=EDGE,
        input="Weather in Istanbul?",
        tools=[{"type": "function", "name": function["name"], "parameters": function["parameters"], "strict": False}],
        tool_choice="required",
        max_output_tokens=80,
        temperature=0,
    )
    (call,) = [item for item in response.output if item.type == "function_call"]
    jsonschema.validate(json.loads(call.arguments), function["parameters"])


# --- test_compat_anthropic.py -------------------------------------------------------------------
def claude(gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=APP_KEYS["alpha"], max_retries=0)


def test_anthropic_messages_basic(gateway):
    message = claude(gateway).messages.create(
        model=EDGE, max_tokens=8, messages=[{"role": "user", "content": "Say hello"}]
    )
    assert message.type == "message" and message.role == "assistant" and message.content[0].type == "text"
    assert message.stop_reason in ("end_turn", "max_tokens") and 0 < message.usage.output_tokens <= 8


def test_anthropic_messages_with_system(gateway):
    message = claude(gateway).messages.create(
        model=EDGE, max_tokens=8, system="You are a pirate.", messages=[{"role": "user", "content": "Say hello"}]
    )
    assert message.content[0].text


def test_anthropic_messages_streaming(gateway):
    with claude(gateway).messages.stream(
        model=EDGE, max_tokens=8, messages=[{"role": "user", "content": "Say hello"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text and final.content[0].text == text and final.usage.output_tokens <= 8


def test_anthropic_stop_sequences(gateway):
    message = claude(gateway).messages.create(
        model=EDGE,
        max_tokens=40,
        stop_sequences=["e"],
        messages=[{"role": "user", "content": "Count from one to ten in words."}],
    )
    assert "e" not in message.content[0].text if message.content else True
    assert message.stop_reason in ("stop_sequence", "end_turn", "max_tokens")


def test_anthropic_tool_use(gateway):
    message = claude(gateway).messages.create(
        model=EDGE,
        max_tokens=80,
        messages=[{"role": "user", "content": "Weather in Istanbul?"}],
        tools=[
            {"name": "get_current_weather", "description": "weather", "input_schema": WEATHER["function"]["parameters"]}
        ],
        tool_choice={"type": "any"},
        extra_body={"temperature": 0},
    )
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert message.stop_reason == "tool_use"
    jsonschema.validate(block.input, WEATHER["function"]["parameters"])


def test_anthropic_invalid_request(gateway):
    response = httpx.post(
        gateway.url + "/v1/messages",
        json={"model": EDGE, "messages": [{"role": "user", "content": "Hi"}]},  # no max_tokens
        headers={"x-api-key": APP_KEYS["alpha"], "anthropic-version": "2023-06-01"},
    )
    assert response.status_code == 400 and response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "invalid_request_error"


# --- test_embedding.py --------------------------------------------------------------------------
def test_embedding_single(gateway):
    answer = client_for(gateway).embeddings.create(model=EDGE, input="I believe the meaning of life is")
    vector = answer.data[0].embedding
    assert len(vector) > 100 and abs(sum(v * v for v in vector) - 1.0) < 1e-3  # normalized


def test_embedding_multiple(gateway):
    answer = client_for(gateway).embeddings.create(model=EDGE, input=["I believe", "the meaning of life", "is"])
    assert [d.index for d in answer.data] == [0, 1, 2] and answer.usage.prompt_tokens > 3
