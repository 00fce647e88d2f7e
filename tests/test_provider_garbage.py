"""A provider that answers garbage: every malformed shape is a 502 naming the provider (or, for usage
alone, an answer whose tokens are counted from what was delivered), a stream ends with an error
event, and the ledger keeps a row for every request, never with negative or non-numeric usage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.conftest import GatewayProcess, gateway_config
from tests.fake_upstream import Fault

KEY = "garbage-key-0123456789"
ADMIN = "admin-key-0123456789"
POLICY = """
app: garbage
defaults: {cloud: gpt-fake}
budget: {daily_usd: 1.0, on_exhausted: deny}
rules:
  - name: claude
    when: {tags: [claude]}
    route: claude-fake
  - name: cloud-only
    route: cloud
"""


@pytest.fixture(scope="module")
def garbage_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("garbage")
    (tmp / "garbage.yaml").write_text(POLICY)
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN)
    config["cloud"]["models"][0]["price"] = {"input_per_1m": 100, "output_per_1m": 100}
    config["cloud"]["models"][0]["retries"] = 0
    config["cloud"]["models"][1]["retries"] = 0
    config["apps"] = [{"name": "garbage", "key": KEY, "policy": str(tmp / "garbage.yaml")}]
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client(gateway: GatewayProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0)


def ask(gateway: GatewayProcess, stream: bool = False) -> Any:
    return client(gateway).chat.completions.create(
        model="auto", stream=stream, messages=[{"role": "user", "content": "What is the capital of France?"}]
    )


def usage(gateway: GatewayProcess) -> dict[str, Any]:
    answer = httpx.get(
        gateway.url + "/api/usage", params={"app": "garbage"}, headers={"authorization": f"Bearer {ADMIN}"}
    )
    return answer.json()


def last_row(gateway: GatewayProcess) -> dict[str, Any]:
    return usage(gateway)["recent"][0]


def budget_left(gateway: GatewayProcess) -> float:
    return usage(gateway)["budgets"][0]["left_usd"]


def rows(gateway: GatewayProcess) -> int:
    return usage(gateway)["totals"]["requests"]


def assert_sane(row: dict[str, Any]) -> None:
    for key in ("prompt_tokens", "completion_tokens"):
        assert isinstance(row[key], int) and row[key] >= 0, row
    assert isinstance(row["cost_usd"], float) and row["cost_usd"] >= 0, row


WHOLE_GARBAGE = {
    "a JSON array": b"[1,2,3]",
    "no choices": b'{"id": "x", "object": "chat.completion"}',
    "choices not objects": b'{"choices": [1, 2]}',
    "content a number": b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": 7}}]}',
    "tool calls a string": b'{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": "x"}}]}',
    "not JSON": b"<html>502 Bad Gateway</html>",
}


@pytest.mark.parametrize("shape", sorted(WHOLE_GARBAGE))
def test_a_malformed_answer_is_a_502_naming_the_provider_and_the_request_keeps_its_row(
    garbage_gateway, upstream, shape
):
    before = rows(garbage_gateway)
    upstream.fail_next(Fault(body=WHOLE_GARBAGE[shape]))
    with pytest.raises(openai.APIStatusError) as caught:
        ask(garbage_gateway)
    assert caught.value.status_code == 502
    assert "gpt-fake" in caught.value.message
    assert rows(garbage_gateway) == before + 1
    row = last_row(garbage_gateway)
    assert row["status"] == 502 and row["error"] == "upstream_error"
    assert_sane(row)


USAGE_GARBAGE = {
    "a number": 7,
    "strings": {"prompt_tokens": "12", "completion_tokens": "5"},
    "negative": {"prompt_tokens": -1_000_000, "completion_tokens": -5},
    "fractions": {"prompt_tokens": 1.5, "completion_tokens": 2.5},
    "booleans": {"prompt_tokens": True, "completion_tokens": True},
    "missing": None,
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("shape", sorted(USAGE_GARBAGE))
def test_invalid_usage_is_counted_from_what_was_delivered_and_never_raises_the_budget(
    garbage_gateway, upstream, shape, stream
):
    left = budget_left(garbage_gateway)
    upstream.fail_next(Fault(usage=USAGE_GARBAGE[shape]))
    answer = ask(garbage_gateway, stream)
    text = "".join(c.choices[0].delta.content or "" for c in answer if c.choices) if stream else None
    if not stream:
        text = answer.choices[0].message.content
        assert answer.usage.completion_tokens > 0 and answer.usage.prompt_tokens > 0
    assert text.startswith("This is the fake cloud")
    row = last_row(garbage_gateway)
    assert row["status"] == 200
    assert_sane(row)
    assert row["completion_tokens"] > 0 and row["prompt_tokens"] > 0  # estimated from the delivered text
    assert budget_left(garbage_gateway) < left  # charged what was delivered; never credited


def test_a_stream_event_that_is_not_a_chunk_ends_the_stream_with_an_error_event(garbage_gateway, upstream):
    upstream.fail_next(Fault(event_after_chunks=(3, b"123")))
    with pytest.raises(openai.APIError) as caught:
        for _ in ask(garbage_gateway, stream=True):
            pass
    assert "gpt-fake" in str(caught.value)
    row = last_row(garbage_gateway)
    assert row["status"] == 502 and row["error"] == "upstream_error"
    assert row["completion_tokens"] > 0  # the chunks delivered before the garbage count
    assert_sane(row)


def test_a_stream_request_answered_without_server_sent_events_is_a_502(garbage_gateway, upstream):
    upstream.fail_next(Fault(body=b'{"choices": []}', content_type="application/json"))
    with pytest.raises(openai.APIStatusError) as caught:
        for _ in ask(garbage_gateway, stream=True):
            pass
    assert caught.value.status_code == 502 and "text/event-stream" in caught.value.message
    assert last_row(garbage_gateway)["status"] == 502


def test_a_stream_that_breaks_after_chunks_is_recorded_with_the_tokens_delivered(garbage_gateway, upstream):
    upstream.fail_next(Fault(drop_after_chunks=4))
    delivered = []
    with pytest.raises(openai.APIError):
        for chunk in ask(garbage_gateway, stream=True):
            delivered += [c.delta.content or "" for c in chunk.choices]
    assert "".join(delivered).startswith("This is the")
    row = last_row(garbage_gateway)
    assert row["status"] == 502 and row["completion_tokens"] > 0
    assert_sane(row)


# --- a provider of the client's own API: what it answers is checked as strictly -------------------
NATIVE = {  # the API, its path at the gateway, a body that asks the model in it (Anthropic's: told by a tag)
    "messages": (
        "/v1/messages",
        {"model": "claude-fake", "max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]},
    ),
    "responses": ("/v1/responses", {"model": "gpt-fake", "input": "Hi"}),
}


def native_headers(api: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEY}", **({"x-edgeway-tags": "claude"} if api == "messages" else {})}


@pytest.mark.parametrize("api", sorted(NATIVE))
@pytest.mark.parametrize(
    "garbage",
    [
        b"not json",
        b"[1, 2]",
        b'{"type": "message", "content": "text, not blocks"}',
        b'{"output": [42]}',
        b'{"type": "message", "content": [7]}',
    ],  # fmt: skip
)
def test_a_native_answer_that_is_not_its_apis_is_a_502_in_that_apis_shape(garbage_gateway, upstream, api, garbage):
    path, body = NATIVE[api]
    upstream.fail_next(Fault(body=garbage))
    answer = httpx.post(garbage_gateway.url + path, json=body, headers=native_headers(api), timeout=30)
    assert answer.status_code == 502, answer.text
    said = answer.json()
    message = said["error"]["message"]
    assert ("claude-fake" in message or "gpt-fake" in message) and (api != "messages" or said["type"] == "error")


@pytest.mark.parametrize("api", sorted(NATIVE))
@pytest.mark.parametrize(
    "stream",
    [b"event: x\ndata: not json\n\n", b'event: message_start\ndata: {"type": "message_start", "message": {}}\n\n'],
)
def test_a_native_stream_that_breaks_its_api_ends_with_an_error_event(garbage_gateway, upstream, api, stream):
    path, body = NATIVE[api]
    upstream.fail_next(Fault(body=stream, content_type="text/event-stream"))
    answer = httpx.post(
        garbage_gateway.url + path,
        json={**body, "stream": True},
        headers={"authorization": f"Bearer {KEY}"},
        timeout=30,
    )
    assert answer.status_code in (200, 502), answer.text
    assert "error" in answer.text and "Internal error" not in answer.text
