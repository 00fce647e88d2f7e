"""The log as an operator reads it: a provider that cannot be reached, said in the system's own
words and counted in attempts; the access line's fields as keys of their own under
`--log-format json`; and a client's private values masked where they stand, nothing else."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import openai
import pytest

from gateway.bench.ports import free_port
from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config

CLOSED_PORT = free_port()  # nothing listens here: a provider that refuses every connection
SSN = "123-45-6789"
DOWN = """
app: beta
defaults: {cloud: down}
rules:
  - name: to-the-cloud
    route: cloud
    fallback: none
"""


@pytest.fixture(scope="module")
def gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    """A gateway logging JSON, beta's requests going to a cloud model no one answers for."""
    tmp = tmp_path_factory.mktemp("operator-log")
    config = gateway_config(upstream.url, tmp)
    config["cloud"]["models"].append(
        {
            "name": "down",
            "provider_model": "openai/gpt-4o-mini",
            "api_key": "sk-fake",
            "api_base": f"http://127.0.0.1:{CLOSED_PORT}/v1",
            "connect_timeout_s": 1,
        }  # fmt: skip
    )
    (tmp / "beta.yaml").write_text(DOWN)
    process = GatewayProcess(config, tmp, args=["--log-format", "json"])
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def lines(gateway: GatewayProcess) -> list[dict]:
    return [json.loads(line) for line in gateway.log().splitlines() if line.startswith("{")]


def access_line(gateway: GatewayProcess, request_id: str) -> dict:
    """The request's access line, once written (after the last byte went out)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [line for line in lines(gateway) if line.get("request_id") == request_id]
        if found:
            (line,) = found
            return line
        time.sleep(0.05)
    raise AssertionError(f"no access line for {request_id}:\n{gateway.log()[-3000:]}")


def test_the_access_lines_fields_are_keys_of_their_own(gateway):
    answer = client_for(gateway, "alpha").chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=2
    )
    request_id = answer.headers["x-edgeway-request-id"]
    line = access_line(gateway, request_id)
    assert line["logger"] == "edgeway.access"
    assert (line["status"], line["app"], line["route"], line["model"]) == (200, "alpha", "edge", "smollm2")
    assert line["rule"] == answer.headers["x-edgeway-rule"] and line["method"] == "POST"
    assert isinstance(line["latency_ms"], float) and line["latency_ms"] > 0
    assert line["message"].startswith(f"request {request_id} POST /v1/chat/completions 200 ")  # the plain line too
    refused = client_for(gateway, "alpha").chat.completions.with_raw_response.create
    with pytest.raises(openai.NotFoundError) as missing:
        refused(model="no-such-model", messages=[{"role": "user", "content": "Hi"}])
    said = missing.value.response.headers["x-edgeway-request-id"]
    line = access_line(gateway, said)
    assert (line["status"], line["route"], line["model"], line["error"]) == (404, None, None, "model_not_found")


def test_an_unreachable_provider_is_said_in_the_systems_words_and_counted_in_attempts(gateway):
    """Two requests with a private value to a provider that refuses connections: each tried three
    times (two retries); the fifth failed attempt opens the circuit, which the second request's
    error says in attempts and requests. The log says why each failed as the system said it; the
    SSN the client sent is masked wherever it appears."""
    client = client_for(gateway, "beta")
    with pytest.raises(openai.APIStatusError) as first:
        client.chat.completions.create(model="auto", messages=[{"role": "user", "content": f"My SSN is {SSN}."}])
    assert first.value.status_code in (502, 503)
    with pytest.raises(openai.APIStatusError) as second:
        client.chat.completions.create(model="auto", messages=[{"role": "user", "content": f"My SSN is {SSN}."}])
    message = second.value.body["message"] if isinstance(second.value.body, dict) else str(second.value)
    assert "the circuit is open after 5 failed attempts in a row (2 requests, retries included)" in message
    failed = [line["message"] for line in lines(gateway) if "down failed" in line["message"]]
    assert len(failed) == 2, failed
    assert f"could not connect to 127.0.0.1:{CLOSED_PORT} ([Errno 111] Connect" in failed[0], failed[0]
    assert "the circuit is open after 5 failed attempts" in failed[1]
    assert not [said for said in failed if "[PERSON]" in said or "[ORGANIZATION]" in said], failed
    assert SSN not in gateway.log()
    assert APP_KEYS["beta"] not in gateway.log()
