"""POST /v1/embeddings: vectors from an embedding model of either tier.

The texts are read by the signals and policies like a prompt: under a local-only rule a private
text is embedded by the edge or not at all. The edge embeds with its chat model's mean-pooled
hidden states (llama.cpp's embedding mode); see docs/edge-runtime.md for what quality to expect.
Cloud embedding models (LiteLLM's map says `mode: embedding`, or `cloud.models[].mode`) get the
request natively when they speak OpenAI's API, else through LiteLLM.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.pipeline import Served, respond_whole
from router.answer import Answer
from router.errors import EdgewayError
from router.request import ChatRequest, parse_embeddings_request


class EmbeddingsDialect:
    """OpenAI's embeddings, answered whole (the API has no stream)."""

    codec = None  # the body is Chat Completions (or its own endpoint's) as sent

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        return parse_embeddings_request(body, metadata)

    def translate(self, body: Any) -> Any:
        return body

    def whole(self, served: Served) -> dict[str, Any]:
        chat, answer = served.chat, served.routed.result
        assert isinstance(answer, Answer)  # parse_embeddings_request never asks for a stream
        body = dict(answer.body)
        if chat.body.get("encoding_format") == "base64":
            body["data"] = [{**item, "embedding": _base64(item["embedding"])} for item in body["data"]]
        body["model"] = chat.model
        return body

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        return exc.body()


EMBEDDINGS = EmbeddingsDialect()


async def embeddings(request: Request) -> Response:
    return await respond_whole(request, EMBEDDINGS)


def _base64(vector: list[float] | str) -> str:
    """OpenAI's base64 encoding: little-endian float32s (a provider may have encoded it already)."""
    if isinstance(vector, str):
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
