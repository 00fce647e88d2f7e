"""Every bad request gets an OpenAI-shaped error with the status OpenAI would use."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.conftest import APP_KEYS, client_for

AUTH = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
OK_MESSAGES = [{"role": "user", "content": "hi"}]


def post(gateway, body=None, *, content=None, headers=None) -> httpx.Response:
    return httpx.post(
        gateway.url + "/v1/chat/completions",
        json=body,
        content=content,
        headers={**AUTH, **(headers or {})},
        timeout=30,
    )


def assert_error(response: httpx.Response, status: int, param: str | None = None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and "Traceback" not in error["message"]
    if param is not None:
        assert error["param"] == param
    return error


@pytest.mark.parametrize(
    "body, param, words",
    [
        ({"model": "auto"}, "messages", "Missing required parameter"),
        ({"model": "auto", "messages": []}, "messages", "at least one message"),
        ({"model": "auto", "messages": "hello"}, "messages", "expected an array"),
        ({"messages": OK_MESSAGES}, "model", "model parameter"),
        ({"model": 7, "messages": OK_MESSAGES}, "model", "model parameter"),
        ({"model": "auto", "messages": [{"content": "hi"}]}, "messages[0].role", "expected one of"),
        ({"model": "auto", "messages": [{"role": "user"}]}, "messages[0].content", "Missing required"),
        ({"model": "auto", "messages": [{"role": "user", "content": 5}]}, "messages[0].content", "expected a string"),
        ({"model": "auto", "messages": ["hi"]}, "messages[0]", "expected an object"),
        ({"model": "auto", "messages": OK_MESSAGES, "max_tokens": "ten"}, "max_tokens", "expected an integer"),
        ({"model": "auto", "messages": OK_MESSAGES, "max_tokens": 0}, "max_tokens", "at least 1"),
        ({"model": "auto", "messages": OK_MESSAGES, "temperature": 3}, "temperature", "outside"),
        ({"model": "auto", "messages": OK_MESSAGES, "temperature": True}, "temperature", "expected a number"),
        ({"model": "auto", "messages": OK_MESSAGES, "stream": "yes"}, "stream", "expected a boolean"),
        ({"model": "auto", "messages": OK_MESSAGES, "stop": [1]}, "stop", "array of strings"),
        ({"model": "auto", "messages": OK_MESSAGES, "n": 0}, "n", "between 1 and 128"),
        (
            {"model": "auto", "messages": OK_MESSAGES, "stream_options": {"include_usage": True}},
            "stream_options",
            "only allowed when 'stream' is true",
        ),
        (
            {"model": "auto", "messages": [{"role": "user", "content": [{"type": "video", "video": "x"}]}]},
            "messages[0].content[0].type",
            "Unsupported content part type 'video'",
        ),
        (
            {"model": "auto", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text",
            "expected a string",
        ),
    ],
)
def test_invalid_bodies_are_400_with_the_offending_param(gateway, body, param, words):
    error = assert_error(post(gateway, body), 400, param)
    assert error["type"] == "invalid_request_error"
    assert words in error["message"]


@pytest.mark.parametrize("content", [b"{not json", b"", b"\xff\xfe\x00", b"[1, 2]", b"null"])
def test_a_body_that_is_not_a_json_object_is_400(gateway, content):
    assert_error(post(gateway, content=content, headers={"content-type": "application/json"}), 400)


def test_an_unknown_model_is_404_model_not_found(gateway):
    with pytest.raises(openai.NotFoundError) as caught:
        client_for(gateway).chat.completions.create(model="gpt-17-ultra", messages=OK_MESSAGES)
    assert caught.value.code == "model_not_found"
    assert "gpt-17-ultra" in caught.value.message


def test_a_body_over_the_configured_size_is_413(gateway):
    huge = {"model": "auto", "messages": [{"role": "user", "content": "x" * 70_000}]}
    error = assert_error(post(gateway, huge), 413)
    assert "65536" in error["message"]


def test_a_body_streamed_without_a_length_is_still_cut_at_the_limit(gateway):
    def chunks():
        yield b'{"model": "auto", "messages": [{"role": "user", "content": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}]}'

    response = httpx.post(
        gateway.url + "/v1/chat/completions",
        content=chunks(),
        headers={**AUTH, "content-type": "application/json"},
        timeout=30,
    )
    assert_error(response, 413)


def test_an_unknown_key_is_401_and_a_missing_one_too(gateway):
    with pytest.raises(openai.AuthenticationError) as caught:
        openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk-wrong-key", max_retries=0).chat.completions.create(
            model="auto", messages=OK_MESSAGES
        )
    assert caught.value.code == "invalid_api_key"
    assert_error(httpx.post(gateway.url + "/v1/chat/completions", json={"model": "auto", "messages": OK_MESSAGES}), 401)
    assert_error(httpx.get(gateway.url + "/v1/models", headers={"authorization": "Bearer nope-nope"}), 401)


def test_an_unknown_path_and_a_wrong_method_are_openai_shaped(gateway):
    assert_error(httpx.get(gateway.url + "/v1/nothing-here", headers=AUTH), 404)
    assert_error(httpx.get(gateway.url + "/v1/embeddings", headers=AUTH), 405)
    assert_error(httpx.get(gateway.url + "/v1/chat/completions", headers=AUTH), 405)


def test_the_model_list_has_auto_the_edge_and_the_cloud_models(gateway):
    models = client_for(gateway).models.list()
    owners = {m.id: m.owned_by for m in models.data}
    assert owners == {
        "auto": "edgeway-router",
        "smollm2": "edgeway-edge",
        "gpt-fake": "edgeway-cloud",
        "claude-fake": "edgeway-cloud",
    }


def test_a_client_can_look_up_one_model_and_an_unknown_one_is_a_404(gateway):
    client = client_for(gateway)
    assert client.models.retrieve("smollm2").owned_by == "edgeway-edge"
    assert client.models.retrieve("auto").owned_by == "edgeway-router"
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("gpt-9")
    assert caught.value.code == "model_not_found"


def test_health_and_readiness(gateway):
    assert httpx.get(gateway.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(gateway.url + "/readyz").json()
    assert ready["status"] == "ready" and ready["edge"][0]["loaded"] is True
    assert 0 < ready["ready_seconds"] < 30


def test_route_is_a_dry_run_that_shows_signals_and_decision(gateway, upstream):
    response = httpx.post(
        gateway.url + "/v1/route", headers=AUTH, json={"model": "auto", "messages": OK_MESSAGES, "max_tokens": 5}
    )
    body = response.json()
    assert body["decision"]["targets"] == ["smollm2", "gpt-fake"]
    assert body["decision"]["rule"] == "default-edge"
    assert body["signals"]["prompt_tokens"] > 0 and body["signals"]["max_tokens"] == 5
    assert upstream.requests == []


def test_a_tool_whose_schema_has_a_property_named_type_is_served(gateway, upstream):
    """A schema's `"type": {...}` property is an object where the walk looks for a part's type
    (Codex CLI's tools have one): served, never a 500."""
    tool = {
        "type": "function",
        "function": {
            "name": "create_goal",
            "parameters": {"type": "object", "properties": {"type": {"type": "string", "enum": ["a", "b"]}}},
        },
    }
    answer = post(gateway, {"model": "gpt-fake", "messages": OK_MESSAGES, "tools": [tool]})
    assert answer.status_code == 200, answer.text
