"""POST /v1/completions: OpenAI's legacy text completions, on both tiers.

The prompt is continued as text: the edge reads it without a chat template, an OpenAI-compatible
cloud model gets the request natively at its own /completions, and a model behind LiteLLM gets
it as a chat whose user turn is the prompt. Signals and policies read the prompt as a user
message, so routing, budgets, the ledger and the privacy invariant are those of chat requests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.chat import Visit, delivered, routing_headers, serve, streamed
from gateway.http import JSON, SSE_DONE, EventStream, sse
from router.answer import Answer, ChunkStream, Usage
from router.errors import EdgewayError
from router.request import ChatRequest, parse_completion_request
from router.routed import Routed


async def completions(request: Request) -> Response | EventStream:
    served = await serve(request, parse_completion_request)
    if isinstance(served, Response):
        return served
    routed = served.routed
    if isinstance(routed.result, Answer):
        return JSON(text_completion(routed.result.body, routed.result.usage), headers=routing_headers(request, routed))
    return streamed(request, served, _events(routed, served.chat, served.visit))


def _base(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": body.get("created") or int(time.time()),
        "model": body.get("model"),
    }


def text_completion(body: dict[str, Any], usage: Usage) -> dict[str, Any]:
    choices = [
        {
            "text": (choice.get("message") or {}).get("content") or "",
            "index": choice.get("index", i),
            "logprobs": None,
            "finish_reason": choice.get("finish_reason"),
        }
        for i, choice in enumerate(body.get("choices") or [])
    ]
    return {**_base(body), "choices": choices, "usage": usage.as_openai()}


async def _events(routed: Routed[ChunkStream], chat: ChatRequest, visit: Visit) -> AsyncIterator[bytes]:
    base: dict[str, Any] | None = None
    try:
        async for chunk in delivered(routed, visit):
            base = base or _base(chunk)
            choices = [
                {
                    "text": (choice.get("delta") or {}).get("content") or "",
                    "index": choice.get("index", 0),
                    "logprobs": None,
                    "finish_reason": choice.get("finish_reason"),
                }
                for choice in chunk.get("choices") or []
            ]
            if choices:
                yield sse({**base, "choices": choices})
    except EdgewayError as exc:  # the OpenAI SDKs raise an error event as an APIError
        yield sse(exc.body())
        return
    usage = visit.settled(routed.result.usage)
    if chat.include_usage:
        yield sse({**(base or _base({})), "choices": [], "usage": usage.as_openai()})
    visit.end(usage)
    yield SSE_DONE
