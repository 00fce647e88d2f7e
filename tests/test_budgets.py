"""A daily budget as an operator sets it and a client meets it: each request's worst case (its
max_tokens at its model's price) is checked against what is left before anything is sent, so a
request that cannot fit is never admitted and the day never ends over its cap; the refusal says
which cap, what is spent of it and when it resets, with Retry-After, in each API's error shape.

Here every request costs exactly $0.03 (3 answer tokens at $0.01, its prompt free) against a
$0.20 day: six fit ($0.18), the seventh ($0.21) does not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import anthropic
import httpx
import openai
import pytest

from tests.conftest import GatewayProcess, gateway_config

KEYS = {"denied": "denied-key-0123456789", "edged": "edged-key-0123456789"}
POLICY = """
app: {app}
defaults: {{cloud: gpt-fake}}
budget: {{daily_usd: 0.20, on_exhausted: {exhausted}}}
rules:
  - name: to-cloud
    route: cloud
    fallback: edge
"""
PRICE = {"input_per_1m": 0, "output_per_1m": 10_000}  # $0.01 an answer token; the prompt free
MAX_TOKENS = 3  # so each request's worst case, and what it costs, is $0.03
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def metered(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    """Two apps on one $0.20 day each: `denied` refuses what does not fit, `edged` sends it to the edge."""
    tmp = tmp_path_factory.mktemp("budgets")
    config = gateway_config(upstream.url, tmp)
    config["cloud"]["models"][0]["price"] = PRICE
    config["apps"] = [{"name": app, "key": key, "policy": f"{app}.yaml"} for app, key in KEYS.items()]
    (tmp / "denied.yaml").write_text(POLICY.format(app="denied", exhausted="deny"))
    (tmp / "edged.yaml").write_text(POLICY.format(app="edged", exhausted="edge"))
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def chat(gateway: GatewayProcess, app: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEYS[app], max_retries=0)


def usage(gateway: GatewayProcess, app: str) -> dict:
    return httpx.get(gateway.url + "/api/usage", headers={"authorization": f"Bearer {KEYS[app]}"}).json()


def midnight_after(now: float) -> str:
    return datetime.fromtimestamp(now - now % 86400 + 86400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_request_that_cannot_fit_in_what_is_left_is_refused_and_the_day_ends_within_its_cap(metered, upstream):
    client = chat(metered, "denied")
    for _ in range(6):
        answered = client.chat.completions.with_raw_response.create(model="auto", messages=HI, max_tokens=MAX_TOKENS)
        assert answered.headers["x-edgeway-route"] == "cloud"
    with pytest.raises(openai.RateLimitError) as refused:  # $0.18 spent: $0.03 more would be $0.21
        client.chat.completions.create(model="auto", messages=HI, max_tokens=MAX_TOKENS)
    now = time.time()
    error = refused.value
    assert error.code == "budget_exhausted"
    assert "daily budget of $0.20" in error.message and "$0.18 is spent" in error.message
    assert "may cost up to $0.03" in error.message and f"resets at {midnight_after(now)}" in error.message
    assert abs(int(error.response.headers["retry-after"]) - (86400 - now % 86400)) <= 5
    assert len(upstream.requests) == 6
    spent = usage(metered, "denied")
    assert spent["totals"]["cost_usd"] == pytest.approx(0.18) and spent["totals"]["cloud_requests"] == 6
    assert spent["budgets"][0]["left_usd"] == pytest.approx(0.02)
    # the same refusal in each API's own error shape, with the same figures and Retry-After
    claude = anthropic.Anthropic(base_url=metered.url, api_key=KEYS["denied"], max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as refused_there:
        claude.messages.create(model="auto", messages=HI, max_tokens=MAX_TOKENS)
    body = refused_there.value.body
    assert isinstance(body, dict) and body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert "daily budget of $0.20" in body["error"]["message"] and midnight_after(now) in body["error"]["message"]
    assert int(refused_there.value.response.headers["retry-after"]) > 0
    with pytest.raises(openai.RateLimitError) as refused_responses:
        client.responses.create(model="auto", input="Hi", max_output_tokens=16)
    assert refused_responses.value.code == "budget_exhausted" and "$0.18" in refused_responses.value.message
    assert len(upstream.requests) == 6


def test_under_on_exhausted_edge_a_request_that_cannot_fit_is_answered_on_the_edge(metered, upstream):
    client = chat(metered, "edged")
    routes = [
        client.chat.completions.with_raw_response.create(model="auto", messages=HI, max_tokens=MAX_TOKENS).headers[
            "x-edgeway-route"
        ]
        for _ in range(7)
    ]
    assert routes == ["cloud"] * 6 + ["edge"]
    assert len(upstream.requests) == 6
    assert usage(metered, "edged")["totals"]["cost_usd"] == pytest.approx(0.18)
