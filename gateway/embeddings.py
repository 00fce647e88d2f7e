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

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from gateway.pipeline import routing_headers, serve
from router.answer import Answer
from router.request import parse_embeddings_request


async def embeddings(request: Request) -> Response:
    served = await serve(request, parse_embeddings_request)
    if isinstance(served, Response):
        return served
    chat, routed = served.chat, served.routed
    assert isinstance(routed.result, Answer)  # an embeddings request is answered whole, never streamed
    body = dict(routed.result.body)
    if chat.body.get("encoding_format") == "base64":
        body["data"] = [{**item, "embedding": _base64(item["embedding"])} for item in body["data"]]
    body["model"] = chat.model
    return JSON(body, headers=routing_headers(request, routed))


def _base64(vector: list[float] | str) -> str:
    """OpenAI's base64 encoding: little-endian float32s (a provider may have encoded it already)."""
    if isinstance(vector, str):
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
