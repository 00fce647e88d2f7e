"""The bundled SmolLM2 model served for real through the OpenAI SDK."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest

from tests.conftest import APP_KEYS, async_client_for, client_for

HELLO = [{"role": "user", "content": "Say hello in one short sentence."}]


def test_a_plain_answer_from_the_edge_model_with_usage_and_routing_headers(gateway):
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="auto", messages=HELLO, max_tokens=12, seed=1
    )
    answer = raw.parse()
    assert raw.headers["x-edgeway-route"] == "edge"
    assert raw.headers["x-edgeway-model"] == "smollm2"
    assert raw.headers["x-edgeway-rule"] == "default-edge"
    assert len(raw.headers["x-edgeway-request-id"]) == 32
    assert answer.model == "smollm2"
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].message.content.strip()
    assert answer.choices[0].finish_reason in ("stop", "length")
    assert 0 < answer.usage.completion_tokens <= 12
    assert answer.usage.prompt_tokens > 5
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_max_tokens_cuts_the_answer_with_finish_reason_length(gateway):
    answer = client_for(gateway).chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Write a long story about a dragon."}],
        max_tokens=3,
        temperature=0,
    )
    assert answer.usage.completion_tokens == 3
    assert answer.choices[0].finish_reason == "length"


def test_the_same_seed_gives_the_same_answer_and_temperature_zero_is_deterministic(gateway):
    client = client_for(gateway)
    story = [{"role": "user", "content": "Invent a name for a cat."}]
    first, second = (
        client.chat.completions.create(model="smollm2", messages=story, max_tokens=16, temperature=1.0, seed=1234)
        .choices[0]
        .message.content
        for _ in range(2)
    )
    assert first == second
    greedy = {
        client.chat.completions.create(model="smollm2", messages=story, max_tokens=16, temperature=0)
        .choices[0]
        .message.content
        for _ in range(2)
    }
    assert len(greedy) == 1
    seeds = {
        client.chat.completions.create(
            model="smollm2", messages=story, max_tokens=16, temperature=1.5, top_p=1.0, seed=s
        )
        .choices[0]
        .message.content
        for s in range(4)
    }
    assert len(seeds) > 1, "different seeds at a high temperature should not all agree"


def test_a_stop_sequence_ends_the_answer_before_it(gateway):
    client = client_for(gateway)
    messages = [{"role": "user", "content": "Count from 1 to 20, separated by commas."}]
    full = (
        client.chat.completions.create(model="smollm2", messages=messages, max_tokens=40, temperature=0)
        .choices[0]
        .message.content
    )
    words = [w for w in full.split() if len(w) >= 2]
    assert len(words) >= 3, full
    stop = words[2]
    cut = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=40, temperature=0, stop=[stop])
    assert cut.choices[0].finish_reason == "stop"
    assert stop not in cut.choices[0].message.content
    assert full.startswith(cut.choices[0].message.content)


def test_a_streamed_answer_ends_with_a_usage_chunk_when_asked(gateway):
    stream = client_for(gateway).chat.completions.create(
        model="auto", messages=HELLO, max_tokens=10, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text.strip()
    assert finishes in (["stop"], ["length"])
    assert chunks[-1].choices == []
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) <= chunks[-1].usage.completion_tokens
    assert 0 < chunks[-1].usage.completion_tokens <= 10
    assert all(c.usage is None for c in chunks[:-1])


def test_the_streamed_text_equals_the_unstreamed_text_for_the_same_seed(gateway):
    client = client_for(gateway)
    args = dict(model="smollm2", messages=HELLO, max_tokens=20, temperature=0.8, seed=7)
    whole = client.chat.completions.create(**args).choices[0].message.content
    streamed = "".join(
        c.choices[0].delta.content or "" for c in client.chat.completions.create(**args, stream=True) if c.choices
    )
    assert streamed == whole


async def test_the_async_client_streams_and_answers(gateway):
    client = async_client_for(gateway)
    answer = await client.chat.completions.create(model="auto", messages=HELLO, max_tokens=5)
    assert answer.choices[0].message.content
    pieces = [
        c async for c in await client.chat.completions.create(model="auto", messages=HELLO, max_tokens=5, stream=True)
    ]
    assert pieces[-1].choices[0].finish_reason in ("stop", "length")
    await client.close()


def _edge_state(gateway) -> dict:
    return httpx.get(gateway.url + "/readyz").json()["edge"][0]


def wait_until_cancelled(gateway, before: dict, seconds: float) -> dict:
    """The edge state once a generation more than `before` was cancelled and none runs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = _edge_state(gateway)
        if state["cancelled"] > before["cancelled"] and state["running"] == 0:
            return state
        time.sleep(0.05)
    pytest.fail(f"the abandoned generation ran on: {state}")


def test_a_client_that_gives_up_on_a_whole_answer_stops_its_generation(gateway):
    before = _edge_state(gateway)
    body = {
        "model": "smollm2",
        "max_tokens": 1500,
        "messages": [{"role": "user", "content": "Write a very long essay about the history of Carthage."}],
    }
    headers = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
    with pytest.raises(httpx.ReadTimeout):  # the client waits one second for the whole answer, then leaves
        httpx.post(gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=1)
    state = wait_until_cancelled(gateway, before, seconds=10)
    assert state["completed"] == before["completed"]


def test_a_client_that_leaves_mid_stream_stops_its_generation(gateway):
    before = _edge_state(gateway)
    body = {
        "model": "smollm2",
        "max_tokens": 1500,
        "stream": True,
        "messages": [{"role": "user", "content": "Write a very long essay about the history of Rome."}],
    }
    headers = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
    with httpx.Client(timeout=30) as http:
        with http.stream("POST", gateway.url + "/v1/chat/completions", json=body, headers=headers) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            received = [next(lines) for _ in range(6)]
            assert any(line.startswith("data:") for line in received)
    # The abandoned generation is cancelled well before its 1,500 tokens; the engine is idle again.
    state = wait_until_cancelled(gateway, before, seconds=20)
    assert state["queued"] == 0
    # and the next request is served at once rather than after the abandoned essay
    answer = client_for(gateway).chat.completions.create(model="smollm2", messages=HELLO, max_tokens=3)
    assert answer.usage.completion_tokens <= 3


CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
ASK_CITY = [{"role": "user", "content": "Give the largest city of France and its population as JSON."}]


@pytest.mark.parametrize("stream", [False, True])
def test_a_json_schema_answer_from_the_edge_parses_and_matches_the_schema(gateway, stream):
    response_format = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}}
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="smollm2", messages=ASK_CITY, max_tokens=60, temperature=0, response_format=response_format,
        stream=stream,
    )  # fmt: skip
    assert raw.headers["x-edgeway-route"] == "edge"
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    else:
        text = raw.parse().choices[0].message.content
    answer = json.loads(text)
    assert set(answer) == {"city", "population"}
    assert isinstance(answer["city"], str) and isinstance(answer["population"], int)


def test_json_mode_on_the_edge_answers_a_json_object(gateway):
    answer = client_for(gateway).chat.completions.create(
        model="smollm2", messages=ASK_CITY, max_tokens=60, temperature=0.7, seed=3,
        response_format={"type": "json_object"},
    )  # fmt: skip
    if answer.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(answer.choices[0].message.content), dict)
    else:  # cut by max_tokens: still the start of an object
        assert answer.choices[0].message.content.lstrip().startswith("{")


def test_a_schema_the_edge_cannot_enforce_is_a_400(gateway):
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(gateway).chat.completions.create(
            model="smollm2", messages=ASK_CITY, max_tokens=10,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}},
        )  # fmt: skip
    assert caught.value.code == "invalid_json_schema"


def test_logprobs_from_the_edge_cover_every_token_with_its_alternatives(gateway):
    answer = client_for(gateway).chat.completions.create(
        model="smollm2", messages=HELLO, max_tokens=6, temperature=0, logprobs=True, top_logprobs=3
    )
    content = answer.choices[0].logprobs.content
    assert len(content) == answer.usage.completion_tokens
    assert "".join(t.token for t in content) == answer.choices[0].message.content
    for token in content:
        assert token.logprob <= 0 and len(token.top_logprobs) == 3
        assert token.top_logprobs[0].logprob >= token.top_logprobs[-1].logprob
        assert token.logprob == pytest.approx(token.top_logprobs[0].logprob, abs=1e-4)  # greedy: the likeliest


def test_streamed_logprobs_arrive_with_the_text_they_belong_to(gateway):
    chunks = list(
        client_for(gateway).chat.completions.create(
            model="smollm2", messages=HELLO, max_tokens=6, temperature=0, logprobs=True, stream=True
        )
    )
    pieces = [c.choices[0] for c in chunks if c.choices and c.choices[0].delta.content]
    tokens = [t for p in pieces for t in p.logprobs.content]
    assert "".join(t.token for t in tokens) == "".join(p.delta.content for p in pieces)


def test_top_logprobs_without_logprobs_is_a_400(gateway):
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(gateway).chat.completions.create(model="smollm2", messages=HELLO, max_tokens=2, top_logprobs=2)
    assert caught.value.param == "top_logprobs"
