"""A request in the client's own API reaches a provider of that API as the client sent it: a
Messages request an Anthropic model, a Responses request an OpenAI model, with every field the
gateway does not have to change kept (prompt caching's breakpoints, thinking and its signatures,
reasoning state, documents, images a tool returned, the beta headers), and the answer comes back as
the provider wrote it. Where the target speaks another API (the edge, a Chat-only server), the
request is translated, and what that API cannot carry is dropped as the vendor's own API drops it
when the feature is off. Private values are masked in the body as sent, and put back in the answer
as written."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import GatewayProcess, gateway_config
from tests.fake_upstream import THOUGHT, FakeUpstream, signer_of

KEYS = {"open": "open-key-0123456789", "mask": "mask-key-0123456789", "private": "private-key-0123456789"}
ADMIN = "admin-key-native-0123"
POLICIES = {
    "mask": "defaults: {cloud: claude-fake}\nrules:\n  - {name: mask, when: {pii: any}, route: cloud, redact: true}\n"
    "  - {name: rest, route: cloud}\n",
    "private": "defaults: {cloud: claude-fake}\nrules:\n"
    "  - {name: stays, when: {pii: any}, route: edge, fallback: none}\n  - {name: rest, route: cloud}\n",
}
PRICE = {"input_per_1m": 1.0, "output_per_1m": 5.0, "cache_read_per_1m": 0.1, "cache_write_per_1m": 1.25}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDwvVHlwZS9DYXRhbG9nPj4KZW5kb2JqCnRyYWlsZXIKPDwvUm9vdCAxIDAgUj4+CiUlRU9G"

# A Claude Code turn: cached system prompt and tools, adaptive thinking with an effort, the model's
# earlier thinking (signed and redacted), an image a tool returned, a PDF, and the account's session.
CLAUDE_CODE_TURN: dict[str, Any] = {
    "model": "claude-fake",
    "max_tokens": 2048,
    "system": [
        {"type": "text", "text": "You are Claude Code, a coding agent."},
        {"type": "text", "text": "Read files before you edit them.", "cache_control": {"type": "ephemeral"}},
    ],
    "tools": [
        {
            "name": "Read",
            "description": "Read a file from the local filesystem.",
            "input_schema": {
                "type": "object",
                "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer", "minimum": 0}},
                "required": ["file_path"],
            },
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
    ],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Read chart.png and report.pdf, then sum them up."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I will read the chart first.", "signature": "EqQBCkYIsig1"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgyredacted"},
                {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "chart.png"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
                    ],
                    "cache_control": {"type": "ephemeral"},
                },
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                    "title": "report.pdf",
                    "citations": {"enabled": True},
                },
                {"type": "text", "text": "What do they say?"},
            ],
        },
    ],
    "thinking": {"type": "adaptive"},
    "output_config": {"effort": "high"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "metadata": {"user_id": "user_4f1e_account_77a0_session_0b9c"},
    "top_k": 40,
    "service_tier": "auto",
}
BETAS = "interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05"

# A Codex CLI turn with its own default request shape: tools as an `additional_tools` item (a
# namespace holding a custom tool with a Lark grammar), reasoning kept encrypted between turns,
# the session as the cache key, and an image `view_image` returned.
CODEX_TURN: dict[str, Any] = {
    "model": "gpt-fake",
    "stream": False,
    "input": [
        {
            "type": "additional_tools",
            "id": "at_01",
            "role": "developer",
            "tools": [
                {
                    "type": "namespace",
                    "name": "functions",
                    "description": "",
                    "tools": [
                        {
                            "type": "custom",
                            "name": "exec",
                            "description": "Run JavaScript.",
                            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/s"},
                        },
                        {
                            "type": "function",
                            "name": "view_image",
                            "strict": "false",
                            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                        },
                    ],
                }
            ],
        },
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is in plot.png?"}]},
        {
            "type": "reasoning",
            "id": "rs_01",
            "summary": [{"type": "summary_text", "text": "Look at the plot."}],
            "encrypted_content": "gAAAAABencrypted-reasoning-state",
        },
        {"type": "function_call", "call_id": "call_01", "name": "view_image", "arguments": '{"path": "plot.png"}'},
        {
            "type": "function_call_output",
            "call_id": "call_01",
            "output": [{"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}],
        },
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "high", "summary": "auto"},
    "store": False,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "0199a1b2-session",
    "service_tier": "priority",
    "text": {"verbosity": "low"},
}


@pytest.fixture(scope="module")
def native_gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("native")
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN)
    config["server"] = {"max_body_bytes": 1024 * 1024}
    for model in config["cloud"]["models"]:
        model["price"] = PRICE
    chat_only = {"name": "gpt-chat", "provider_model": "hosted_vllm/chat-only", "api_base": upstream.url + "/v1"}
    config["cloud"]["models"].append({**chat_only, "apis": ["chat_completions"], "price": PRICE})
    config["apps"] = [{"name": "open", "key": KEYS["open"]}]
    for app, policy in POLICIES.items():
        (tmp / f"{app}.yaml").write_text(f"app: {app}\n{policy}")
        config["apps"].append({"name": app, "key": KEYS[app], "policy": str(tmp / f"{app}.yaml")})
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def post(gateway: GatewayProcess, path: str, body: dict[str, Any], app: str = "open", **headers: str) -> httpx.Response:
    given = {"x-api-key": KEYS[app], "anthropic-version": "2023-06-01", **headers}
    return httpx.post(gateway.url + path, json=body, headers=given, timeout=60)


def events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """A stream's server-sent events, each its name and data."""
    found = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines and lines["data"] != "[DONE]":
            found.append((lines.get("event", ""), json.loads(lines["data"])))
    return found


def sent_as(body: dict[str, Any], model: str, stream: bool) -> dict[str, Any]:
    """`body` as a provider of its API receives it: its model's id, and `stream` as asked."""
    out = {**copy.deepcopy(body), "model": model}
    out.pop("stream", None)
    return {**out, "stream": True} if stream else out


# --- same API: as sent --------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_claude_code_turn_reaches_anthropic_as_sent_and_its_thinking_comes_back(native_gateway, upstream, stream):
    body = {**CLAUDE_CODE_TURN, "stream": stream} if stream else CLAUDE_CODE_TURN
    answer = post(native_gateway, "/v1/messages", body, **{"anthropic-beta": BETAS})
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-edgeway-model"] == "claude-fake"
    (received,) = upstream.requests
    assert received.path == "/v1/messages"
    assert received.body == sent_as(CLAUDE_CODE_TURN, "claude-3-5-haiku-latest", stream)
    assert received.headers["anthropic-beta"] == BETAS and received.headers["anthropic-version"] == "2023-06-01"
    assert received.headers["x-api-key"] == "sk-ant-fake"  # the gateway's key, never the app's
    if not stream:
        thinking, text = answer.json()["content"]
        assert thinking == {"type": "thinking", "thinking": THOUGHT, "signature": thinking["signature"]}
        assert signer_of(thinking["signature"]) == "claude-3-5-haiku-latest"  # signed by the model that thought it
        assert text["text"].startswith("This is the fake cloud")
        return
    said = events(answer)
    assert [name for name, _ in said][:2] == ["message_start", "content_block_start"]
    deltas = [data["delta"] for name, data in said if name == "content_block_delta"]
    signatures = [d["signature"] for d in deltas if d["type"] == "signature_delta"]
    assert [signer_of(s) for s in signatures] == ["claude-3-5-haiku-latest"]
    assert "".join(d.get("thinking", "") for d in deltas) == THOUGHT
    assert said[-1][0] == "message_stop"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_codex_turn_reaches_openai_as_sent(native_gateway, upstream, stream):
    """Its own default shape (no `model = "auto"`): `additional_tools`, a custom tool, reasoning
    items with their encrypted content, `view_image`'s image, the cache key."""
    body = {**CODEX_TURN, "stream": stream}
    answer = post(native_gateway, "/v1/responses", body, **{"openai-beta": "responses=experimental"})
    assert answer.status_code == 200, answer.text
    (received,) = upstream.requests
    assert received.path == "/v1/responses"
    assert received.body == sent_as(body, "gpt-4o-mini", stream)
    assert received.headers["openai-beta"] == "responses=experimental"
    assert received.headers["authorization"] == "Bearer sk-fake"
    if stream:
        said = events(answer)
        assert said[0][0] == "response.created" and said[-1][0] == "response.completed"
    else:
        assert answer.json()["id"] == "resp_fake"  # the provider's own response


def test_a_chat_completions_request_keeps_its_cache_key_and_tier(native_gateway, upstream):
    body = {"model": "gpt-fake", "messages": [{"role": "user", "content": "Hi"}], "prompt_cache_key": "s-1",
            "service_tier": "flex", "reasoning_effort": "low", "store": False}  # fmt: skip
    answer = httpx.post(
        native_gateway.url + "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {KEYS['open']}"}
    )
    assert answer.status_code == 200
    assert upstream.requests[-1].body == {**body, "model": "gpt-4o-mini"}


# --- another API: translated, as the vendor drops what is off -------------------------------------
def test_a_claude_code_turn_to_a_chat_model_reads_the_image_and_the_pdf(native_gateway, upstream):
    answer = post(native_gateway, "/v1/messages", {**CLAUDE_CODE_TURN, "model": "gpt-chat"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["type"] == "message"  # in Anthropic's shape, from a chat model's answer
    sent = upstream.requests[-1].body
    assert "thinking" not in json.dumps(sent) and "cache_control" not in json.dumps(sent)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "user"]
    shown = sent["messages"][4]["content"]
    assert shown[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    asked = sent["messages"][5]["content"]
    assert {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
    } in asked


def test_a_codex_turn_to_a_chat_model_sees_the_image_and_calls_its_custom_tool(native_gateway, upstream):
    answer = post(native_gateway, "/v1/responses", {**CODEX_TURN, "model": "gpt-chat"})
    assert answer.status_code == 200, answer.text
    sent = upstream.requests[-1].body
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names == ["exec", "view_image"]
    assert sent["tools"][0]["function"]["parameters"]["required"] == ["input"]
    assert "start: /.+/s" in sent["tools"][0]["function"]["description"]
    tool, shown = sent["messages"][-2], sent["messages"][-1]
    assert tool["role"] == "tool" and shown["content"][1]["image_url"]["url"].startswith("data:image/png")
    (call,) = [item for item in answer.json()["output"] if item["type"] == "custom_tool_call"]
    assert call["name"] == "exec" and isinstance(call["input"], str)  # the fake calls the first tool


def test_earlier_thinking_is_dropped_for_the_edge_as_anthropic_drops_it(native_gateway, upstream):
    text_only = copy.deepcopy(CLAUDE_CODE_TURN)
    text_only["messages"][2]["content"] = [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": "a bar chart",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    answer = post(native_gateway, "/v1/messages", {**text_only, "model": "smollm2", "max_tokens": 8})
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-edgeway-route"] == "edge"
    assert all(block["type"] != "thinking" for block in answer.json()["content"])
    assert upstream.requests == []


# --- what it cost -------------------------------------------------------------------------------
def usage_row(gateway: GatewayProcess, request_id: str) -> dict[str, Any]:
    rows = httpx.get(gateway.url + "/api/usage", headers={"authorization": f"Bearer {ADMIN}"}).json()["recent"]
    return next(r for r in rows if r["request_id"] == request_id)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_cache_reads_and_writes_are_priced_at_the_providers_rates(native_gateway, upstream, stream):
    upstream.cache_read_tokens, upstream.cache_write_tokens = 300, 100
    body = {
        "model": "claude-fake",
        "max_tokens": 50,
        "stream": stream,
        "messages": [{"role": "user", "content": "x" * 2000}],
    }
    answer = post(native_gateway, "/v1/messages", body)
    assert answer.status_code == 200
    usage = answer.json()["usage"] if not stream else events(answer)[0][1]["message"]["usage"]
    assert usage["cache_read_input_tokens"] == 300 and usage["cache_creation_input_tokens"] == 100
    row = usage_row(native_gateway, answer.headers["x-edgeway-request-id"])
    prompt = usage["input_tokens"] + 400
    assert (row["prompt_tokens"], row["cache_read_tokens"], row["cache_write_tokens"]) == (prompt, 300, 100)
    expected = ((prompt - 400) * 1.0 + 300 * 0.1 + 100 * 1.25 + row["completion_tokens"] * 5.0) / 1e6
    assert row["cost_usd"] == pytest.approx(expected, rel=1e-9)
    uncached = (prompt * 1.0 + row["completion_tokens"] * 5.0) / 1e6
    assert row["prompt_cache_saved_usd"] == pytest.approx(uncached - expected, rel=1e-9)


def test_a_chat_models_cached_tokens_reach_each_apis_own_fields(native_gateway, upstream):
    upstream.cache_read_tokens = 7
    messages = post(native_gateway, "/v1/messages", {"model": "gpt-chat", "max_tokens": 20, "messages": [
        {"role": "user", "content": "Hi there"}]}).json()["usage"]  # fmt: skip
    assert messages["cache_read_input_tokens"] == 7
    responses = post(native_gateway, "/v1/responses", {"model": "gpt-chat", "input": "Hi there"}).json()["usage"]
    assert responses["input_tokens_details"] == {"cached_tokens": 7}


# --- privacy on the body as sent ------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_masked_value_leaves_masked_in_every_field_and_comes_back_in_the_native_answer(
    native_gateway, upstream, stream
):
    upstream.echo = True  # the fake says back the last user text, four characters at a time
    body = {
        "model": "auto",
        "max_tokens": 200,
        "stream": stream,
        "system": [
            {"type": "text", "text": "Write to jane.roe@example.com soon.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Reply to jane.roe@example.com now"}]}],
    }
    answer = post(native_gateway, "/v1/messages", body, app="mask")
    assert answer.status_code == 200, answer.text
    sent = upstream.requests[-1].body
    assert "jane.roe" not in json.dumps(sent)
    assert sent["system"][0] == {
        "type": "text",
        "text": "Write to [EMAIL_1] soon.",
        "cache_control": {"type": "ephemeral"},
    }
    said = (
        answer.json()["content"][0]["text"]
        if not stream
        else "".join(d["delta"].get("text", "") for n, d in events(answer) if n == "content_block_delta")
    )
    assert said == "Reply to jane.roe@example.com now"


def test_a_private_document_stays_on_the_edge(native_gateway, upstream):
    card = {"type": "text", "media_type": "text/plain", "data": "Card 4111 1111 1111 1111"}
    said = [{"type": "document", "source": card}, {"type": "text", "text": "Summarize."}]
    body = {"model": "auto", "max_tokens": 8, "messages": [{"role": "user", "content": said}]}
    answer = post(native_gateway, "/v1/messages", body, app="private")
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-edgeway-route"] == "edge" and upstream.requests == []
