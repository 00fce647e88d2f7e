"""Embeddings at /v1/embeddings with the official SDK: the edge's pooled states, a cloud embedding
model forwarded natively, base64 encoding, errors, and private texts that never leave."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterator

import openai
import pytest

from tests.conftest import PRIVATE_POLICY, TWO_APPS, GatewayProcess, two_apps

EMBEDDING_POLICY = PRIVATE_POLICY.replace("cloud: gpt-fake}", "cloud: embed-fake}").replace(
    "    route: cloud\n", "    route: embed-fake\n    fallback: edge\n"
)


@pytest.fixture(scope="module")
def embed_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    embedder = {
        "name": "embed-fake",
        "provider_model": "openai/text-embedding-3-small",
        "api_key": "sk-fake",
        "api_base": upstream.url + "/v1",
    }
    yield from two_apps(upstream, tmp_path_factory.mktemp("embeddings"), EMBEDDING_POLICY, [embedder])


def client(gateway: GatewayProcess, app: str = "open") -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=TWO_APPS[app], max_retries=0)


def test_the_edge_embeds_each_text_as_a_unit_vector(embed_gateway):
    raw = client(embed_gateway).embeddings.with_raw_response.create(
        model="smollm2", input=["The cat sat on the mat.", "Quarterly tax filing deadlines"]
    )
    answer = raw.parse()
    assert raw.headers["x-edgeway-route"] == "edge"
    first, second = (d.embedding for d in answer.data)
    assert len(first) == len(second) > 100
    assert abs(math.sqrt(sum(x * x for x in first)) - 1) < 1e-3
    assert first != second and answer.usage.prompt_tokens > 5


def test_auto_embeddings_go_to_a_model_that_embeds_not_to_a_chat_model(embed_gateway, upstream):
    answer = client(embed_gateway).embeddings.create(model="auto", input="hello there")
    assert len(answer.data) == 1 and upstream.requests == []  # the edge embeds; gpt-fake would not


def test_a_cloud_embedding_model_gets_the_request_natively(embed_gateway, upstream):
    answer = client(embed_gateway).embeddings.create(model="embed-fake", input=["one two", "three"])
    assert [d.embedding for d in answer.data] == [[7.0, 2.0, 1.0], [5.0, 1.0, 1.0]]
    assert upstream.requests[-1].path == "/v1/embeddings"
    assert upstream.requests[-1].body["model"] == "text-embedding-3-small"


def test_base64_encoding_is_little_endian_float32(embed_gateway):
    # (The SDK asks for base64 by itself when the caller names no format, and decodes it: every
    # test above went that way. Asked for explicitly, it hands the string over.)
    answer = client(embed_gateway).embeddings.create(model="embed-fake", input="one two", encoding_format="base64")
    assert struct.unpack("<3f", base64.b64decode(answer.data[0].embedding)) == (7.0, 2.0, 1.0)
    raw = client(embed_gateway).embeddings.with_raw_response.create(
        model="smollm2", input="hi", encoding_format="base64"
    )
    encoded = base64.b64decode(raw.http_response.json()["data"][0]["embedding"])
    vector = struct.unpack(f"<{len(encoded) // 4}f", encoded)
    assert len(vector) > 100 and abs(math.sqrt(sum(x * x for x in vector)) - 1) < 1e-3


def test_a_chat_model_named_for_embeddings_is_a_clear_400(embed_gateway):
    with pytest.raises(openai.BadRequestError) as caught:
        client(embed_gateway).embeddings.create(model="gpt-fake", input="hi")
    assert caught.value.code == "unsupported_parameter"


@pytest.mark.parametrize("given", [[], [""], [[1, 2, 3]], 7])
def test_bad_input_is_a_400(embed_gateway, given):
    with pytest.raises(openai.BadRequestError) as caught:
        client(embed_gateway).embeddings.create(model="smollm2", input=given)
    assert caught.value.param == "input"


def test_a_private_text_is_embedded_on_the_edge_and_a_public_one_in_the_cloud(embed_gateway, upstream):
    private = client(embed_gateway, "private").embeddings.with_raw_response.create(
        model="auto", input=["customer note", "SSN 123-45-6789"]
    )
    assert private.headers["x-edgeway-route"] == "edge" and upstream.bytes_received == 0
    public = client(embed_gateway, "private").embeddings.with_raw_response.create(model="auto", input="the weather")
    assert public.headers["x-edgeway-route"] == "cloud"


REDACTING = """
app: private
defaults: {edge: smollm2, cloud: embed-fake}
rules:
  - name: masked-to-the-cloud
    when: {pii: any}
    route: embed-fake
    redact: true
    fallback: none
  - name: rest
    route: embed-fake
"""


@pytest.fixture(scope="module")
def redacting_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    embedder = {"name": "embed-fake", "provider_model": "openai/text-embedding-3-small", "api_key": "sk-fake",
                "api_base": upstream.url + "/v1"}  # fmt: skip
    yield from two_apps(upstream, tmp_path_factory.mktemp("redacting-embeddings"), REDACTING, [embedder])


@pytest.mark.parametrize("given", ["SSN 123-45-6789 on file", ["customer note", "SSN 123-45-6789 on file"]])
def test_a_redacting_rule_embeds_the_masked_texts_in_the_cloud(redacting_gateway, upstream, given):
    answer = client(redacting_gateway, "private").embeddings.with_raw_response.create(model="auto", input=given)
    assert answer.headers["x-edgeway-route"] == "cloud" and answer.headers["x-edgeway-redacted"] == "1"
    sent = upstream.requests[-1].body["input"]
    texts = [sent] if isinstance(sent, str) else sent
    assert "123-45-6789" not in str(sent) and any("[US_SSN_1]" in t for t in texts)
    assert len(answer.parse().data) == (1 if isinstance(given, str) else 2)
