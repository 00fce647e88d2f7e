"""A model reads only the thinking it signed, and a client reads the model it asked for.

Anthropic signs each thinking block for the model that wrote it; a client sends the blocks back on
its later turns, and the API refuses a block another model signed, and a turn that continues a tool
loop with thinking on whose assistant turn has lost its thinking (the fake provider refuses both
as the real API does: `tests/fake_upstream.py: thinking_refusal`). Claude Code drops the thinking
of every earlier answer whose `model` is not the one it asks for, so an answer names the model the
client asked for (`auto`), and the gateway keeps the rule instead: a tool loop stays on the model
that began it, and where a conversation moves (a new user turn its ladder climbs, a fallback), the
blocks another model signed are left out of the body as sent.

A real gateway on loopback, two Anthropic models on the fake provider (Claude Haiku and Sonnet), a
ladder over them that climbs on the prompt's length (its step's prior: `router/ladder.py`).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import GatewayProcess, gateway_config
from tests.fake_upstream import AgentScript, FakeUpstream, Fault, signer_of

KEYS = {"ladder": "ladder-key-0123456789", "responses": "responses-key-0123456789"}
KEYS["shadowed"] = "shadowed-key-0123456789"
HAIKU, SONNET = "claude-haiku-4-5", "claude-sonnet-4-5"  # the provider's ids
POLICIES = {
    # a prompt of 400 tokens or more climbs (the step's prior: its length, 0.5 at 400 tokens)
    "ladder": "defaults: {cloud: claude-haiku}\nrouter: {edge_reading: never}\n"
    "rules:\n  - {name: climb, route: auto, ladder: [claude-haiku, claude-sonnet], thresholds: [0.5]}\n",
    "responses": "defaults: {cloud: gpt-fake}\nrules:\n  - {name: all-cloud, route: cloud}\n",
    # every answer compared with the ladder's next model up, in the gateway's next lull
    "shadowed": "defaults: {cloud: claude-haiku}\nrouter: {edge_reading: never}\n"
    "shadow: {sample: 1.0, judge: gpt-fake, daily_usd: 5}\n"
    "rules:\n  - {name: climb, route: auto, ladder: [claude-haiku, claude-sonnet], thresholds: [0.5]}\n",
}
TOOL = {"name": "Bash", "description": "Run a command.", "input_schema": {"type": "object"}}
LONG_OUTPUT = "file.txt\n" * 400  # a tool result past 400 tokens: the ladder would climb


@pytest.fixture(scope="module")
def thinking_gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("thinking")
    config = gateway_config(upstream.url, tmp)
    for name, provider_model in (("claude-haiku", HAIKU), ("claude-sonnet", SONNET)):
        model = {"name": name, "provider_model": f"anthropic/{provider_model}", "api_key": "sk-ant-fake"}
        # no retries: a failure the test sets up fails that model once, and its fallback answers
        config["cloud"]["models"].append({**model, "api_base": upstream.url, "retries": 0})
    config["server"] = {"max_body_bytes": 1024 * 1024}
    config["apps"] = []
    for app, policy in POLICIES.items():
        (tmp / f"{app}.yaml").write_text(f"app: {app}\n{policy}")
        config["apps"].append({"name": app, "key": KEYS[app], "policy": str(tmp / f"{app}.yaml")})
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def post(gateway: GatewayProcess, path: str, body: dict[str, Any], app: str = "ladder") -> httpx.Response:
    headers = {"x-api-key": KEYS[app], "anthropic-version": "2023-06-01"}
    return httpx.post(gateway.url + path, json=body, headers=headers, timeout=60)


def events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines and lines["data"] != "[DONE]":
            found.append((lines.get("event", ""), json.loads(lines["data"])))
    return found


def turn(messages: list[dict[str, Any]], stream: bool = False, session: str = "1") -> dict[str, Any]:
    """A Claude Code turn: thinking on, its tool, its session (Claude Code's `metadata.user_id`)."""
    body = {"model": "auto", "max_tokens": 1024, "thinking": {"type": "adaptive"}, "tools": [TOOL]}
    metadata = {"user_id": f"user_1_account_2_session_{session}"}
    return {**body, "metadata": metadata, "messages": copy.deepcopy(messages), "stream": stream}


def result(content: list[dict[str, Any]], output: str) -> dict[str, Any]:
    """The user turn that answers the tool call in `content` with `output`."""
    (call,) = [b for b in content if b["type"] == "tool_use"]
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]}


def signers(body: dict[str, Any]) -> list[str | None]:
    """Who signed each thinking block a request's body carries (the fake's signatures name it)."""
    return [
        signer_of(b.get("signature"))
        for m in body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "thinking"
    ]


# --- the model an answer names ---------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_messages_answer_names_the_model_the_client_asked_for(thinking_gateway, upstream, stream):
    """`auto`, as Claude Code asked: it keeps the thinking of answers of the model it asks for."""
    answer = post(thinking_gateway, "/v1/messages", turn([{"role": "user", "content": "Hi"}], stream))
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-edgeway-model"] == "claude-haiku"  # which model served, the header says
    assert upstream.requests[-1].body["model"] == HAIKU
    if stream:
        (started,) = [data for name, data in events(answer) if name == "message_start"]
        assert started["message"]["model"] == "auto"
    else:
        assert answer.json()["model"] == "auto"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_answer_names_the_model_the_client_asked_for(thinking_gateway, upstream, stream):
    body = {"model": "auto", "input": "Hi", "stream": stream}
    answer = post(thinking_gateway, "/v1/responses", body, app="responses")
    assert answer.status_code == 200, answer.text
    assert upstream.requests[-1].body["model"] == "gpt-4o-mini"
    if not stream:
        assert answer.json()["model"] == "auto"
        return
    named = [data["response"]["model"] for _, data in events(answer) if "response" in data]
    assert named and set(named) == {"auto"}


# --- a tool loop stays; a move leaves another model's thinking behind --------------------------------
def test_a_tool_loop_ends_on_its_model_and_a_climb_leaves_its_thinking_behind(thinking_gateway, upstream):
    """Turn 1 is short: Haiku thinks and calls the tool. Its long result would climb the ladder, but
    the loop is Haiku's turn: it ends there, with Haiku's signed thinking as sent. The next user
    turn climbs to Sonnet, which gets the conversation without the blocks Haiku signed."""
    upstream.script = AgentScript("Bash", {"command": "ls"}, "Done.", calls=2)
    said: list[dict[str, Any]] = [{"role": "user", "content": "List the files."}]
    for step in range(3):  # two tool calls, then the answer
        answer = post(thinking_gateway, "/v1/messages", turn(said))
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-edgeway-model"] == "claude-haiku", (step, answer.headers)
        sent = upstream.requests[-1].body
        assert sent["model"] == HAIKU and sent["thinking"] == {"type": "adaptive"}
        assert signers(sent) == [HAIKU] * step  # Haiku's own thinking, as the client sent it
        content = answer.json()["content"]
        assert content[0]["type"] == "thinking" and signer_of(content[0]["signature"]) == HAIKU
        said.append({"role": "assistant", "content": content})
        if step < 2:
            said.append(result(content, LONG_OUTPUT))
    assert [b["type"] for b in said[-1]["content"]] == ["thinking", "text"]
    said.append({"role": "user", "content": "Now explain what each file is for. " + LONG_OUTPUT})
    answer = post(thinking_gateway, "/v1/messages", turn(said))
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-edgeway-model"] == "claude-sonnet"  # a new turn climbs
    sent = upstream.requests[-1].body
    assert sent["model"] == SONNET and signers(sent) == [] and sent["thinking"] == {"type": "adaptive"}
    assert [m["role"] for m in sent["messages"]] == [m["role"] for m in said]  # only the thinking left out
    tool_uses = [
        b for m in sent["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"
    ]
    assert len(tool_uses) == 2
    # and Sonnet's own thinking goes back to Sonnet on the turn after
    said.append({"role": "assistant", "content": answer.json()["content"]})
    said.append({"role": "user", "content": "Thanks. " + LONG_OUTPUT})
    answer = post(thinking_gateway, "/v1/messages", turn(said, stream=True))
    assert answer.status_code == 200 and answer.headers["x-edgeway-model"] == "claude-sonnet", answer.text
    assert signers(upstream.requests[-1].body) == [SONNET]


def test_a_fallback_mid_loop_answers_without_the_failed_models_thinking(thinking_gateway, upstream):
    """Haiku fails mid loop: Sonnet, its fallback, gets the turn without Haiku's thinking, and so
    with thinking off (a loop's turn without its thinking is refused with it on); the answer says
    which model failed."""
    upstream.script = AgentScript("Bash", {"command": "ls"}, "Done.", calls=1)
    said: list[dict[str, Any]] = [{"role": "user", "content": "List the files, please."}]
    first = post(thinking_gateway, "/v1/messages", turn(said, stream=True, session="fallback"))
    assert first.status_code == 200 and first.headers["x-edgeway-model"] == "claude-haiku", first.text
    content = _assembled(events(first))
    said += [{"role": "assistant", "content": content}, result(content, "file.txt")]
    upstream.fail_next(Fault(status=529, message="Overloaded"))
    managed = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}, {"type": "clear_tool_uses_20250919"}]}
    answer = post(thinking_gateway, "/v1/messages", {**turn(said, session="fallback"), "context_management": managed})
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-edgeway-model"] == "claude-sonnet"
    assert answer.headers["x-edgeway-fallback"].startswith("claude-haiku: ")
    failed, sent = upstream.requests[-2].body, upstream.requests[-1].body
    assert failed["model"] == HAIKU and signers(failed) == [HAIKU]  # Haiku had it as sent
    assert sent["model"] == SONNET and signers(sent) == [] and "thinking" not in sent
    # a context edit that clears thinking goes with it (the API takes one only with thinking on)
    assert failed["context_management"] == managed
    assert sent["context_management"] == {"edits": [{"type": "clear_tool_uses_20250919"}]}
    assert answer.json()["content"][0]["type"] == "text"


def test_a_shadow_comparison_gives_the_other_model_no_thinking_it_did_not_sign(thinking_gateway, upstream):
    """A sampled turn of a conversation Haiku serves is answered again by Sonnet, the ladder's next
    step, for a comparison: Sonnet gets the conversation without Haiku's thinking."""
    said: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
    first = post(thinking_gateway, "/v1/messages", turn(said, session="shadowed"), app="shadowed")
    assert first.status_code == 200 and first.headers["x-edgeway-model"] == "claude-haiku", first.text
    said += [{"role": "assistant", "content": first.json()["content"]}, {"role": "user", "content": "And then?"}]
    answer = post(thinking_gateway, "/v1/messages", turn(said, session="shadowed"), app="shadowed")
    assert answer.status_code == 200 and answer.headers["x-edgeway-model"] == "claude-haiku", answer.text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_sent_to(upstream, SONNET)) < 2:
        time.sleep(0.2)
    (shadow,) = [body for body in _sent_to(upstream, SONNET) if len(body["messages"]) == 3]  # the second turn's
    assert signers(shadow) == [] and [b["type"] for b in shadow["messages"][1]["content"]] == ["text"]
    assert signers(_sent_to(upstream, HAIKU)[-1]) == [HAIKU]  # as the client sent it, to the model that signed it


def _sent_to(upstream: FakeUpstream, model: str) -> list[dict[str, Any]]:
    return [r.body for r in upstream.requests if r.path == "/v1/messages" and r.body.get("model") == model]


def _assembled(said: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """A streamed Messages answer's content blocks, put together as a client does."""
    blocks: list[dict[str, Any]] = []
    for name, data in said:
        if name == "content_block_start":
            blocks.append(dict(data["content_block"]))
        elif name == "content_block_delta":
            block, delta = blocks[data["index"]], data["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                block["input"] = json.loads(delta["partial_json"])
    return blocks
