"""A three-step ladder on a running gateway: the bundled edge model, a small and a large cloud
model (the fake provider, told apart by the provider model each is sent as). What the router
decides with fakes is in test_ladder.py; here, that the climb reaches the provider it chose,
falls back along the ladder when that one fails, keeps private requests and an exhausted budget
on the edge, and shows its climb in `/v1/route`."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.conftest import TWO_APPS, GatewayProcess, two_apps
from tests.fake_upstream import Fault

LADDER = """
app: private
defaults: {edge: smollm2, cloud: gpt-fake}
router: {edge_reading: never}
rules:
  - name: private-stays-local
    when: {pii: any}
    route: edge
    fallback: none
  - name: edge-only
    when: {tags: [edge]}
    route: auto
    ladder: [smollm2, gpt-fake, gpt-large]
    thresholds: [1.0, 0.5]
  - name: climb
    route: auto
    ladder: [smollm2, gpt-fake, gpt-large]
    thresholds: [0.0, 0.5]
"""
LARGE = {
    "name": "gpt-large",
    "provider_model": "openai/gpt-4o",
    "api_key": "sk-fake",
    "api_base": "{upstream}/v1",
    "timeout_s": 3,
    "circuit_failures": 1000,
}
SHORT = "Name three primary colours."
LONG = "Summarize this report for the board. " + "The quarter's figures moved in every region. " * 60


@pytest.fixture(scope="module")
def laddered(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    large = {**LARGE, "api_base": LARGE["api_base"].format(upstream=upstream.url)}
    yield from two_apps(upstream, tmp_path_factory.mktemp("ladder"), LADDER, cloud=[large])


def provider_models(upstream) -> list[str]:
    return [r.body["model"] for r in upstream.requests if r.path.endswith("/chat/completions")]


def ask(gateway: GatewayProcess, text: str, **kwargs):
    sdk = openai.OpenAI(base_url=gateway.url + "/v1", api_key=TWO_APPS["private"], max_retries=0)
    return sdk.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": text}], max_tokens=4, **kwargs
    )


def test_the_climb_reaches_the_model_it_stopped_at(laddered, upstream):
    upstream.reset()
    short = ask(laddered, SHORT)
    assert short.headers["x-edgeway-model"] == "gpt-fake" and provider_models(upstream) == ["gpt-4o-mini"]
    upstream.reset()
    long = ask(laddered, LONG)
    assert long.headers["x-edgeway-model"] == "gpt-large" and provider_models(upstream) == ["gpt-4o"]


def test_a_failing_model_falls_back_up_the_ladder(laddered, upstream):
    upstream.reset()
    upstream.fail_next(Fault(status=503, message="model overloaded"), times=3)  # the small model's tries
    answer = ask(laddered, SHORT)
    assert answer.headers["x-edgeway-model"] == "gpt-large"
    assert provider_models(upstream) == ["gpt-4o-mini"] * 3 + ["gpt-4o"]


def test_when_the_cloud_fails_and_the_edge_answers_the_answer_and_the_access_line_say_why(laddered, upstream):
    """`route: auto`: both cloud models fail (each its first try and two retries); the edge, last
    on the ladder's way down, answers. `x-edgeway-fallback` names each model that failed and why."""
    upstream.reset()
    upstream.fail_next(Fault(status=503, message="model overloaded"), times=6)
    answer = ask(laddered, LONG)
    assert answer.status_code == 200 and answer.headers["x-edgeway-model"] == "smollm2"
    said = "gpt-large: 502 upstream_error; gpt-fake: 502 upstream_error"
    assert answer.headers["x-edgeway-fallback"] == said
    request_id = answer.headers["x-edgeway-request-id"]
    line = laddered.access_line(request_id)
    assert line.endswith(f'route=edge model=smollm2 rule=climb fallback="{said}"'), line


def test_a_step_that_does_not_climb_keeps_the_bundled_model(laddered, upstream):
    upstream.reset()
    answer = ask(laddered, LONG, extra_headers={"x-edgeway-tags": "edge"})
    assert answer.headers["x-edgeway-model"] == "smollm2" and upstream.requests == []


def test_a_private_request_never_climbs(laddered, upstream):
    upstream.reset()
    answer = ask(laddered, "Write to jane.roe@example.com about it. " + LONG)
    assert answer.headers["x-edgeway-model"] == "smollm2" and upstream.bytes_received == 0


def test_the_route_endpoint_shows_the_whole_climb(laddered, upstream):
    upstream.reset()
    body = {"model": "auto", "messages": [{"role": "user", "content": LONG}], "max_tokens": 4}
    found = httpx.post(
        laddered.url + "/v1/route", json=body, headers={"authorization": f"Bearer {TWO_APPS['private']}"}
    ).json()
    auto = found["decision"]["auto"]
    assert auto["ladder"] == ["smollm2", "gpt-fake", "gpt-large"]
    assert [(s["lower"], s["upper"], s["scorer"]) for s in auto["climb"]] == [
        ("smollm2", "gpt-fake", "app_router"),
        ("gpt-fake", "gpt-large", "prompt_length"),
    ]
    assert found["decision"]["targets"][0] == "gpt-large" and upstream.requests == []
