"""Legacy text completions at /v1/completions, with the official SDK's `client.completions`: the
edge continues the raw prompt (no chat template), an OpenAI-compatible cloud model gets the
request natively, streams and errors as OpenAI's, and private prompts stay local."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.conftest import TWO_APPS, GatewayProcess, two_apps


@pytest.fixture(scope="module")
def legacy_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    yield from two_apps(upstream, tmp_path_factory.mktemp("legacy_gateway"))


def client(gateway: GatewayProcess, app: str = "open") -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=TWO_APPS[app], max_retries=0)


def test_the_edge_continues_the_raw_prompt_without_a_chat_template(legacy_gateway):
    raw = client(legacy_gateway).completions.with_raw_response.create(
        model="smollm2", prompt="Once upon a time", max_tokens=8, temperature=0
    )
    answer = raw.parse()
    assert raw.headers["x-edgeway-route"] == "edge"
    assert answer.object == "text_completion" and answer.choices[0].text.strip()
    assert answer.choices[0].finish_reason in ("stop", "length")
    assert answer.usage.prompt_tokens <= 6  # the prompt's own tokens: no chat template around it
    assert 0 < answer.usage.completion_tokens <= 8


def test_without_max_tokens_the_legacy_default_of_16_applies(legacy_gateway):
    answer = client(legacy_gateway).completions.create(model="smollm2", prompt="The list of primes:", temperature=0)
    assert answer.usage.completion_tokens <= 16


def test_a_streamed_completion_from_the_edge_with_usage(legacy_gateway):
    chunks = list(
        client(legacy_gateway).completions.create(
            model="smollm2", prompt="Once upon a time", max_tokens=8, temperature=0, stream=True,
            stream_options={"include_usage": True},
        )
    )  # fmt: skip
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text.strip() and chunks[-1].usage.completion_tokens > 0


def test_an_openai_compatible_cloud_model_gets_the_request_natively(legacy_gateway, upstream):
    answer = client(legacy_gateway).completions.create(model="gpt-fake", prompt="Say this is a test", max_tokens=5)
    sent = upstream.requests[-1]
    assert sent.path == "/v1/completions" and sent.body["prompt"] == "Say this is a test"
    assert sent.body["model"] == "gpt-4o-mini" and sent.body["max_tokens"] == 5
    assert answer.choices[0].text.strip() == "This is the fake cloud"
    chunks = list(client(legacy_gateway).completions.create(model="gpt-fake", prompt="Hi", max_tokens=3, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "This is the "


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"echo": True}, "echo"),
        ({"suffix": "end"}, "suffix"),
        ({"best_of": 3}, "best_of"),
        ({"prompt": [1, 2, 3]}, "prompt"),
    ],
)
def test_what_is_not_supported_is_a_clear_400(legacy_gateway, extra, param):
    body = {"model": "smollm2", "prompt": "Hi", "max_tokens": 2, **extra}
    with pytest.raises(openai.BadRequestError) as caught:
        client(legacy_gateway).completions.create(**body)
    assert caught.value.param == param


def test_a_private_prompt_stays_on_the_edge(legacy_gateway, upstream):
    raw = client(legacy_gateway, "private").completions.with_raw_response.create(
        model="auto", prompt="My SSN is 123-45-6789 and my card is", max_tokens=4
    )
    assert raw.headers["x-edgeway-route"] == "edge" and upstream.bytes_received == 0
