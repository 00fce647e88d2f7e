"""OpenTelemetry: edgeway exports a trace of each request to a real OTLP receiver on loopback.

One SERVER span per request with the GenAI attributes and edgeway's routing and money, under the
client's `traceparent`; child spans for classifying, deciding and each model attempt (a retry is
another attempt); the edge attempt has its queue wait and generation; the cloud call carries the
trace onward. Private values appear in no span, and an opted-in app's prompt only masked.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import PRIVATE_POLICY, GatewayProcess, gateway_config
from tests.fake_upstream import FakeUpstream, Fault
from tests.otlp_receiver import GrpcReceiver, HttpReceiver, ReceivedSpan, SpanSink

KEYS = {"private": "private-key-0123456789", "logged": "logged-key-0123456789", "shadowed": "shadowed-key-0123456789"}
SERVER, CLIENT = 2, 3  # the proto's SpanKind values
ERROR = 2  # the proto's StatusCode.STATUS_CODE_ERROR
EMAIL, PHONE = "jane.doe@example.com", "+1 415 555 0134"
PRIVATE = f"Email {EMAIL} or call {PHONE} about the invoice, please."


def traced_gateway(upstream: FakeUpstream, tmp: Path, receiver: HttpReceiver | GrpcReceiver, protocol: str):
    (tmp / "private.yaml").write_text(PRIVATE_POLICY)
    (tmp / "logged.yaml").write_text(PRIVATE_POLICY.replace("app: private", "app: logged"))
    shadow = "shadow: {sample: 1.0, judge: gpt-fake, daily_usd: 5}\nrules:"
    (tmp / "shadowed.yaml").write_text(
        PRIVATE_POLICY.replace("app: private", "app: shadowed").replace("rules:", shadow)
    )
    config = gateway_config(upstream.url, tmp)
    config["apps"] = [
        {"name": "private", "key": KEYS["private"], "policy": str(tmp / "private.yaml")},
        {"name": "logged", "key": KEYS["logged"], "policy": str(tmp / "logged.yaml"), "log_prompts": True},
        {"name": "shadowed", "key": KEYS["shadowed"], "policy": str(tmp / "shadowed.yaml")},
    ]
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "edgeway-under-test",
    }
    return GatewayProcess(config, tmp, env=env)


@pytest.fixture(scope="module")
def receiver() -> Iterator[HttpReceiver]:
    with HttpReceiver() as server:
        yield server


@pytest.fixture(scope="module")
def traced(upstream: FakeUpstream, receiver: HttpReceiver, tmp_path_factory: pytest.TempPathFactory):
    process = traced_gateway(upstream, tmp_path_factory.mktemp("traced"), receiver, "http/protobuf")
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def traceparent() -> tuple[str, str, str]:
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{parent}-01", trace_id, parent


def ask(gateway: GatewayProcess, content: str, app: str = "private", **extra) -> tuple[httpx.Response, str, str]:
    header, trace_id, parent = traceparent()
    response = httpx.post(
        gateway.url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {KEYS[app]}", "traceparent": header},
        json={"model": "auto", "messages": [{"role": "user", "content": content}], "max_tokens": 8, **extra},
        timeout=60,
    )
    return response, trace_id, parent


def root_of(sink: SpanSink, trace_id: str) -> tuple[ReceivedSpan, list[ReceivedSpan]]:
    """The request's span once it has arrived (it ends last), and all spans of its trace."""
    sink.wait_for(lambda spans: any(s.trace_id == trace_id and s.kind == SERVER for s in spans))
    spans = sink.trace(trace_id)
    (root,) = [s for s in spans if s.kind == SERVER]
    return root, spans


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> dict[str, list[ReceivedSpan]]:
    found: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        if span.parent_id == parent.span_id:
            found.setdefault(span.name, []).append(span)
    return found


def test_a_cloud_request_is_a_genai_span_under_the_clients_trace_and_the_provider_gets_it_onward(
    traced, receiver, upstream
):
    response, trace_id, parent = ask(traced, "What is the capital of France?")
    assert response.status_code == 200, response.text
    root, spans = root_of(receiver.sink, trace_id)

    assert root.parent_id == parent and root.name == "chat auto" and root.service == "edgeway-under-test"
    attributes = root.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "auto" and attributes["gen_ai.response.model"] == "gpt-fake"
    assert attributes["gen_ai.request.max_tokens"] == 8
    assert attributes["gen_ai.usage.input_tokens"] > 0 and attributes["gen_ai.usage.output_tokens"] > 0
    assert attributes["edgeway.app"] == "private" and attributes["edgeway.route"] == "cloud"
    assert attributes["edgeway.rule"] == "rest" and attributes["edgeway.privacy.types"] == []
    assert attributes["edgeway.request_id"] == response.headers["x-edgeway-request-id"]
    assert attributes["http.response.status_code"] == 200 and "edgeway.cost_usd" in attributes

    steps = children(spans, root)
    assert set(steps) == {"edgeway.classify", "edgeway.decide", "chat gpt-fake"}
    assert steps["edgeway.decide"][0].attributes["edgeway.targets"] == ["gpt-fake"]
    (attempt,) = steps["chat gpt-fake"]
    assert attempt.kind == CLIENT and attempt.attributes["edgeway.attempt"] == 1
    assert attempt.attributes["edgeway.tier"] == "cloud" and attempt.attributes["gen_ai.usage.output_tokens"] > 0

    sent = upstream.requests[-1].headers["traceparent"]
    assert sent.split("-")[1:3] == [trace_id, attempt.span_id]  # the provider's parent is the attempt


def test_a_clients_tracestate_and_baggage_reach_no_provider_and_no_span(traced, receiver, upstream):
    """Both are a client's free text: a card number in them would reach the provider verbatim."""
    header, trace_id, parent = traceparent()
    response = httpx.post(
        traced.url + "/v1/chat/completions",
        headers={
            "authorization": f"Bearer {KEYS['private']}",
            "traceparent": header,
            "tracestate": "vendor=jane.roe@example.com,card=4111111111111111",
            "baggage": "user=4111111111111111,mail=jane.roe%40example.com",
        },
        json={"model": "auto", "messages": [{"role": "user", "content": "What is the capital of Peru?"}]},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    sent = upstream.requests[-1].headers
    assert "tracestate" not in sent and "baggage" not in sent
    assert sent["traceparent"].split("-")[1] == trace_id  # the trace itself goes on
    root, spans = root_of(receiver.sink, trace_id)
    assert root.parent_id == parent
    assert all("4111" not in s.text() and "jane.roe" not in s.text() and not s.trace_state for s in spans)


def test_a_retry_is_a_second_attempt_the_first_marked_failed(traced, receiver, upstream):
    upstream.fail_next(Fault(status=503), times=1)
    response, trace_id, _ = ask(traced, "Name a prime number.")
    assert response.status_code == 200, response.text
    root, spans = root_of(receiver.sink, trace_id)
    attempts = sorted(children(spans, root)["chat gpt-fake"], key=lambda s: s.attributes["edgeway.attempt"])
    assert [a.attributes["edgeway.attempt"] for a in attempts] == [1, 2]
    assert attempts[0].status == ERROR and attempts[0].attributes["error.type"] == "upstream_error"
    assert attempts[1].status != ERROR and "error.type" not in attempts[1].attributes
    assert upstream.requests[0].headers["traceparent"].split("-")[2] == attempts[0].span_id


@pytest.mark.parametrize("stream", [False, True])
def test_a_private_request_is_traced_on_the_edge_with_its_types_never_its_values(traced, receiver, upstream, stream):
    response, trace_id, _ = ask(traced, PRIVATE, stream=stream)
    assert response.status_code == 200, response.text
    root, spans = root_of(receiver.sink, trace_id)
    assert root.attributes["edgeway.route"] == "edge" and root.attributes["edgeway.rule"] == "pii-stays-local"
    assert root.attributes["edgeway.stream"] is stream
    assert {"EMAIL", "PHONE"} <= set(root.attributes["edgeway.privacy.types"])
    assert root.attributes["gen_ai.usage.output_tokens"] > 0
    (attempt,) = children(spans, root)["chat smollm2"]
    phases = children(spans, attempt)
    (queue,), (generate,) = phases["edgeway.edge.queue"], phases["edgeway.edge.generate"]
    assert queue.start_ns <= queue.end_ns <= generate.start_ns < generate.end_ns <= root.end_ns
    assert generate.attributes["gen_ai.usage.output_tokens"] == root.attributes["gen_ai.usage.output_tokens"]
    for span in spans:
        text = span.text()
        # The phone's digits as written and run together: a bare "555" would also match a random hex id.
        for value in ("jane.doe", PHONE.removeprefix("+1 "), PHONE.replace(" ", "")[2:], "invoice"):
            assert value not in text, span
    assert upstream.requests == []


def test_an_opted_in_apps_prompt_is_in_its_span_masked_as_in_its_ledger(traced, receiver):
    response, trace_id, _ = ask(traced, PRIVATE, app="logged")
    assert response.status_code == 200, response.text
    root, spans = root_of(receiver.sink, trace_id)
    prompt = root.attributes["edgeway.prompt"]
    assert "[EMAIL]" in prompt and "[PHONE]" in prompt and "invoice" in prompt
    assert all("jane.doe" not in s.text() and "555 0134" not in s.text() for s in spans)


def test_a_refused_request_is_a_span_with_its_status_and_error(traced, receiver):
    header, trace_id, _ = traceparent()
    response = httpx.post(
        traced.url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {KEYS['private']}", "traceparent": header},
        json={"model": "no-such-model", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert response.status_code == 404
    root, spans = root_of(receiver.sink, trace_id)
    assert root.attributes["http.response.status_code"] == 404
    assert root.attributes["error.type"] == "model_not_found" and root.name == "chat (unknown model)"
    assert root.attributes["gen_ai.request.model"] == "(unknown model)"  # a client's string: maybe an address
    assert root.status != ERROR  # the client's mistake is not the server's failure
    assert children(spans, root)["edgeway.classify"][0].attributes["error.type"] == "model_not_found"


def served_ids(gateway: GatewayProcess, count: int, traceparent_header: str | None = None) -> list[str]:
    headers = {"authorization": f"Bearer {KEYS['private']}"}
    if traceparent_header:
        headers["traceparent"] = traceparent_header
    ids = []
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=60) as client:
        for _ in range(count):
            answer = client.post(
                "/v1/chat/completions",
                json={"model": "gpt-fake", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
            )
            ids.append(answer.headers["x-edgeway-request-id"])
    return ids


def traced_ids(sink, ids: list[str]) -> set[str]:
    with sink.lock:
        return {s.attributes.get("edgeway.request_id") for s in sink.spans if s.kind == SERVER} & set(ids)


def test_by_default_a_tenth_of_the_requests_are_traced_whole(traced, receiver):
    """Sampled when they arrive (parent-based, 10%): an unsampled request costs no span work."""
    ids = served_ids(traced, 200)
    time.sleep(1.0)  # the last batches go out
    kept = traced_ids(receiver.sink, ids)
    assert 4 <= len(kept) <= 50, len(kept)  # 20 expected; outside this, 1 run in a million


def test_an_unsampled_request_that_fails_is_kept_with_its_span_under_the_clients_trace(traced, receiver, upstream):
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    unsampled = f"00-{trace_id}-{parent}-00"  # the client's trace, not sampled: followed as not sampled
    assert traced_ids(receiver.sink, served_ids(traced, 3, unsampled)) == set()  # fine requests: no span
    upstream.fail_next(Fault(status=500, message="down"), times=3)
    (failed,) = served_ids(traced, 1, unsampled)
    receiver.sink.wait_for(lambda spans: any(s.attributes.get("edgeway.request_id") == failed for s in spans))
    (span,) = [s for s in receiver.sink.trace(trace_id) if s.attributes.get("edgeway.request_id") == failed]
    assert span.parent_id == parent and span.kind == SERVER and span.status == ERROR
    assert span.attributes["http.response.status_code"] == 502 and span.attributes["edgeway.sampled"] is False
    assert span.end_ns - span.start_ns > 0 and span.name == "POST /v1/chat/completions"


def test_a_shadow_comparison_is_a_child_span_of_its_request_with_its_attempts(traced, receiver):
    response, trace_id, _ = ask(traced, "Name a colour.", app="shadowed")
    assert response.status_code == 200 and response.headers["x-edgeway-route"] == "cloud"
    receiver.sink.wait_for(lambda spans: any(s.trace_id == trace_id and s.name == "edgeway.shadow" for s in spans))
    root, spans = root_of(receiver.sink, trace_id)
    (shadow,) = children(spans, root)["edgeway.shadow"]
    assert shadow.start_ns >= root.end_ns  # after the response: the client did not wait for it
    assert shadow.attributes["edgeway.shadow.of"] == "cloud" and shadow.attributes["edgeway.shadow.verdict"] == "tie"
    attempts = children(spans, shadow)
    assert len(attempts["chat smollm2"]) == 1 and len(attempts["chat gpt-fake"]) == 2  # the edge answer, two judgements
    assert all(a.attributes["edgeway.shadow"] is True for a in attempts["chat gpt-fake"])


def test_traces_go_over_grpc_when_the_protocol_says_so(upstream, tmp_path):
    with GrpcReceiver() as receiver:
        process = traced_gateway(upstream, tmp_path, receiver, "grpc")
        try:
            process.wait_ready()
            response, trace_id, parent = ask(process, "What is the capital of Peru?")
            assert response.status_code == 200, response.text
            root, spans = root_of(receiver.sink, trace_id)
        finally:
            process.stop()
    assert root.parent_id == parent and root.attributes["edgeway.route"] == "cloud"
    assert {"edgeway.classify", "edgeway.decide", "chat gpt-fake"} <= set(children(spans, root))


def test_without_an_exporter_the_clients_trace_still_reaches_the_provider(gateway, upstream):
    """Tracing off (no OTEL_* variables): no spans are made, and the `traceparent` goes on as sent."""
    header, trace_id, parent = traceparent()
    response = httpx.post(
        gateway.url + "/v1/chat/completions",
        headers={"authorization": "Bearer beta-key-0123456789", "traceparent": header},
        json={"model": "auto", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8},
    )
    assert response.status_code == 200 and response.headers["x-edgeway-route"] == "cloud"
    assert upstream.requests[-1].headers["traceparent"] == header


def test_a_litellm_providers_call_carries_the_trace_onward_too(traced, receiver, upstream):
    """The Anthropic cloud model goes through LiteLLM: the trace context rides in its headers."""
    header, trace_id, _ = traceparent()
    response = httpx.post(
        traced.url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {KEYS['private']}", "traceparent": header},
        json={"model": "claude-fake", "messages": [{"role": "user", "content": "Capital of Peru?"}], "max_tokens": 8},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    root, spans = root_of(receiver.sink, trace_id)
    (attempt,) = children(spans, root)["chat claude-fake"]
    sent = [r for r in upstream.requests if r.path == "/v1/messages"][-1]
    assert sent.headers["traceparent"].split("-")[1:3] == [trace_id, attempt.span_id]
