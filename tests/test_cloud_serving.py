"""Cloud models behind the same URL: forwarded directly (OpenAI-compatible) or translated by
LiteLLM (Anthropic), both reaching the fake upstream over loopback."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from tests.conftest import client_for
from tests.fake_upstream import Fault

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_a_named_openai_compatible_model_is_forwarded_with_its_fields_untouched(gateway, upstream):
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="gpt-fake",
        messages=QUESTION,
        max_tokens=50,
        temperature=0.3,
        tools=[WEATHER_TOOL],
        tool_choice="auto",
        response_format={"type": "text"},
        user="u-42",
        logit_bias={"50256": -100},
    )
    answer = raw.parse()
    assert raw.headers["x-edgeway-route"] == "cloud"
    assert raw.headers["x-edgeway-model"] == "gpt-fake"
    assert raw.headers["x-edgeway-rule"] == "requested-model"
    call = answer.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and answer.choices[0].finish_reason == "tool_calls"
    sent = upstream.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-fake"
    assert sent.body["model"] == "gpt-4o-mini"
    for key in ("tools", "tool_choice", "response_format", "user", "logit_bias", "temperature", "max_tokens"):
        assert key in sent.body
    assert sent.body["tools"] == [WEATHER_TOOL]
    assert sent.body["messages"] == QUESTION


def test_auto_with_tools_is_answered_by_a_model_that_calls_them(gateway, upstream):
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=50, tools=[WEATHER_TOOL], tool_choice="required"
    )
    assert raw.headers["x-edgeway-route"] in ("edge", "cloud")  # the edge calls tools by grammar too
    assert raw.parse().choices[0].message.tool_calls[0].function.name == "get_weather"


def test_the_edge_named_with_what_it_cannot_honor_says_so(gateway, upstream):
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(gateway).chat.completions.create(
            model="smollm2", messages=QUESTION, modalities=["text", "audio"], audio={"voice": "alloy", "format": "wav"}
        )
    assert caught.value.code == "unsupported_parameter" and caught.value.param == "modalities"
    assert upstream.requests == []


def test_a_streamed_cloud_answer_carries_usage_only_when_asked(gateway, upstream):
    client = client_for(gateway)
    plain = list(client.chat.completions.create(model="gpt-fake", messages=QUESTION, stream=True))
    assert all(c.usage is None for c in plain)
    assert "".join(c.choices[0].delta.content or "" for c in plain).startswith("This is the fake cloud")
    with_usage = list(
        client.chat.completions.create(
            model="gpt-fake", messages=QUESTION, stream=True, stream_options={"include_usage": True}
        )
    )
    assert with_usage[-1].choices == [] and with_usage[-1].usage.completion_tokens == 13
    assert with_usage[-2].choices[0].finish_reason == "stop"


def test_an_app_whose_default_is_the_cloud_gets_the_cloud_for_auto(gateway, upstream):
    raw = client_for(gateway, "beta").chat.completions.with_raw_response.create(model="auto", messages=QUESTION)
    assert raw.headers["x-edgeway-route"] == "cloud"
    assert raw.headers["x-edgeway-rule"] == "app-default-cloud"
    assert raw.parse().choices[0].message.content.startswith("This is the fake cloud")


def test_an_anthropic_model_is_reached_through_litellm_translation(gateway, upstream):
    client = client_for(gateway, timeout=60)
    raw = client.chat.completions.with_raw_response.create(
        model="claude-fake", messages=[{"role": "system", "content": "Be brief."}, *QUESTION], max_tokens=64
    )
    answer = raw.parse()
    assert raw.headers["x-edgeway-model"] == "claude-fake"
    assert answer.choices[0].message.content.startswith("This is the fake cloud")
    assert answer.usage.completion_tokens == 13
    sent = upstream.requests[-1]
    assert sent.path == "/v1/messages"  # Anthropic's wire format, not OpenAI's
    assert sent.headers["x-api-key"] == "sk-ant-fake"
    assert sent.body["model"] == "claude-3-5-haiku-latest"
    assert sent.body["max_tokens"] == 64
    assert "Be brief." in str(sent.body.get("system"))


def test_a_streamed_anthropic_answer_is_translated_into_openai_chunks(gateway, upstream):
    chunks = list(
        client_for(gateway, timeout=60).chat.completions.create(
            model="claude-fake", messages=QUESTION, max_tokens=64, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("This is the fake cloud")
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 13
    assert upstream.requests[-1].body["stream"] is True


def test_an_upstream_error_is_a_502_with_the_providers_reason(gateway, upstream):
    upstream.fail_next(Fault(status=500, message="the fake provider is on fire"), times=3)  # first try + 2 retries
    with pytest.raises(openai.APIStatusError) as caught:
        client_for(gateway).chat.completions.create(model="gpt-fake", messages=QUESTION)
    assert caught.value.status_code == 502
    assert "the fake provider is on fire" in caught.value.message
    assert caught.value.body["type"] == "upstream_error"


def test_an_upstream_that_does_not_answer_in_time_is_a_504(gateway, upstream):
    upstream.fail_next(Fault(stall_s=3), times=3)
    with pytest.raises(openai.APIStatusError) as caught:
        client_for(gateway).chat.completions.create(model="gpt-fake", messages=QUESTION)
    assert caught.value.status_code == 504
    assert len(upstream.requests) == 3


def test_a_request_the_provider_rejects_is_a_400_with_its_message_and_is_not_retried(gateway, upstream):
    upstream.fail_next(Fault(status=400, message="tools[0].function.name is invalid"))
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(gateway).chat.completions.create(model="gpt-fake", messages=QUESTION)
    assert "tools[0].function.name is invalid" in caught.value.message
    assert len(upstream.requests) == 1


def test_a_provider_404_is_a_404_and_another_tier_may_answer(gateway, upstream):
    """The provider does not serve the configured model: a 404 the client hears as a 404 (not a
    400 it would try to fix), tried once; on `auto` the next target answers instead."""
    upstream.fail_next(Fault(status=404, message="The model `gpt-4o-mini` does not exist"))
    with pytest.raises(openai.NotFoundError) as caught:
        client_for(gateway).chat.completions.create(model="gpt-fake", messages=QUESTION)
    assert caught.value.code == "upstream_not_found" and "does not exist" in caught.value.message
    assert len(upstream.requests) == 1
    upstream.fail_next(Fault(status=404, message="The model `gpt-4o-mini` does not exist"))
    raw = client_for(gateway, "beta").chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=5
    )
    assert raw.headers["x-edgeway-route"] == "edge" and len(upstream.requests) == 2


def test_a_passing_failure_is_retried_with_backoff(gateway, upstream):
    upstream.fail_next(Fault(status=502, message="bad gateway"), times=2)
    answer = client_for(gateway).chat.completions.create(model="gpt-fake", messages=QUESTION)
    assert answer.choices[0].message.content.startswith("This is the fake cloud")
    assert len(upstream.requests) == 3


def test_a_stream_that_stalls_after_its_first_chunk_ends_with_an_error_not_a_hang(gateway, upstream):
    upstream.fail_next(Fault(stall_after_chunks=2, stall_s=4))
    started = time.monotonic()
    with pytest.raises(openai.APIError):
        for _ in client_for(gateway, timeout=20).chat.completions.create(
            model="gpt-fake", messages=QUESTION, stream=True
        ):
            pass
    assert time.monotonic() - started < 4  # ended by the 1 s read timeout, well before the stall ends


@pytest.mark.parametrize("fault", [Fault(stall_after_chunks=0, stall_s=4), Fault(drop_after_chunks=0)])
def test_a_stream_that_fails_before_its_first_chunk_is_retried_and_falls_back(gateway, upstream, fault):
    """The provider sends its headers, then stalls (or drops the connection): nothing reached the
    client yet, so the stream is retried and falls back as an unstreamed request would."""
    upstream.fail_next(fault, times=3)  # the first try and its two retries
    raw = client_for(gateway, "beta", timeout=30).chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=5, stream=True
    )
    assert raw.http_response.status_code == 200 and raw.headers["x-edgeway-route"] == "edge"
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    assert text and len(upstream.requests) == 3


def test_a_failing_cloud_falls_back_to_the_edge_for_auto(gateway, upstream):
    """The edge answers, and the answer and the access line say which model failed first, and why."""
    upstream.fail_next(Fault(status=503, message="overloaded"), times=3)
    raw = client_for(gateway, "beta").chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=5
    )
    assert raw.headers["x-edgeway-route"] == "edge"
    assert raw.headers["x-edgeway-rule"] == "app-default-cloud"
    assert raw.headers["x-edgeway-fallback"] == "gpt-fake: 502 upstream_error"
    assert raw.parse().choices[0].message.content
    request_id = raw.headers["x-edgeway-request-id"]
    line = gateway.access_line(request_id)
    assert line.endswith('route=edge model=smollm2 rule=app-default-cloud fallback="gpt-fake: 502 upstream_error"')


def test_an_answer_the_first_target_gave_says_no_fallback(gateway, upstream):
    raw = client_for(gateway, "beta").chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=5
    )
    assert raw.headers["x-edgeway-route"] == "cloud" and "x-edgeway-fallback" not in raw.headers


def test_a_stream_that_breaks_after_the_first_token_ends_with_an_error_the_sdk_raises(gateway, upstream):
    upstream.fail_next(Fault(drop_after_chunks=3))
    stream = client_for(gateway).chat.completions.create(model="gpt-fake", messages=QUESTION, stream=True)
    received = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            received.append(chunk)
    assert len(received) >= 3
    assert "gpt-fake" in str(caught.value)


def test_a_prompt_too_long_for_the_edge_context_goes_to_the_cloud(gateway, upstream):
    long_text = "Summarize this. " + "The quick brown fox jumps over the lazy dog. " * 400
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": long_text}], max_tokens=20
    )
    assert raw.headers["x-edgeway-route"] == "cloud"
    assert raw.headers["x-edgeway-rule"] == "exceeds-edge-context"
    assert upstream.saw_text("quick brown fox")


def test_an_image_goes_to_the_cloud_since_the_edge_model_reads_text_only(gateway, upstream):
    content = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": content}]
    )
    assert raw.headers["x-edgeway-route"] == "cloud"
    assert upstream.requests[-1].body["messages"][0]["content"] == content


def test_a_circuit_opens_after_repeated_failures_fails_fast_and_probes_after_its_cooldown(upstream, tmp_path):
    from tests.conftest import GatewayProcess, gateway_config

    config = gateway_config(upstream.url, tmp_path)
    config["cloud"]["models"][0].update(retries=0, circuit_failures=3, circuit_cooldown_s=1)
    gateway = GatewayProcess(config, tmp_path).wait_ready()
    try:
        client = client_for(gateway)
        upstream.fail_next(Fault(status=500), times=3)
        for _ in range(3):
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(model="gpt-fake", messages=QUESTION)
        assert httpx.get(gateway.url + "/readyz").json()["circuits"]["gpt-fake"]["state"] == "open"
        assert 'edgeway_upstream_circuit_state{model="gpt-fake"} 2.0' in httpx.get(gateway.url + "/metrics").text
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="gpt-fake", messages=QUESTION)
        assert caught.value.code == "circuit_open" and len(upstream.requests) == 3  # not even tried
        # auto falls back to the edge at once instead of waiting on the dead provider
        raw = client_for(gateway, "beta").chat.completions.with_raw_response.create(
            model="auto", messages=QUESTION, max_tokens=3
        )
        assert raw.headers["x-edgeway-route"] == "edge"
        time.sleep(1.1)  # the cooldown: one probe goes through, succeeds, and closes the circuit
        assert client.chat.completions.create(model="gpt-fake", messages=QUESTION).choices[0].message.content
        assert httpx.get(gateway.url + "/readyz").json()["circuits"]["gpt-fake"]["state"] == "closed"
    finally:
        gateway.stop()


def test_a_latency_budget_the_edge_queue_would_miss_sends_the_request_to_the_cloud_first(gateway, upstream):
    import threading

    client = client_for(gateway, timeout=60)
    busy = threading.Thread(
        target=lambda: client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Write a long essay."}], max_tokens=300
        )
    )
    busy.start()
    # the edge now holds ~300 tokens of work: seconds of waiting, once the busy request is admitted
    deadline = time.monotonic() + 30
    while not _edge_holds_work(gateway) and time.monotonic() < deadline:
        time.sleep(0.05)
    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=5, extra_headers={"x-edgeway-latency-budget-ms": "50"}
    )
    assert raw.headers["x-edgeway-route"] == "cloud"
    busy.join()
    relaxed = client.chat.completions.with_raw_response.create(
        model="auto", messages=QUESTION, max_tokens=3, extra_headers={"x-edgeway-latency-budget-ms": "600000"}
    )
    assert relaxed.headers["x-edgeway-route"] == "edge"


def _edge_holds_work(gateway) -> bool:
    metrics = httpx.get(gateway.url + "/metrics").text
    held = [line for line in metrics.splitlines() if line.startswith("edgeway_edge_outstanding_tokens{")]
    return any(float(line.rsplit(" ", 1)[1]) > 0 for line in held)
