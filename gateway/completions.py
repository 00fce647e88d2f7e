"""POST /v1/completions: OpenAI's legacy text completions, on both tiers.

The prompt is continued as text: the edge reads it without a chat template, an OpenAI-compatible
cloud model gets the request natively at its own /completions, and a model behind LiteLLM gets
it as a chat whose user turn is the prompt. Signals and policies read the prompt as a user
message, so routing, budgets, the ledger and the privacy invariant are those of chat requests.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import SSE_DONE, EventStream, sse
from gateway.pipeline import Served, respond
from router.answer import Answer, Usage
from router.errors import EdgewayError
from router.request import ChatRequest, parse_completion_request


class CompletionsDialect:
    codec = None  # the body is Chat Completions (or its own endpoint's) as sent

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        return parse_completion_request(body, metadata)

    def translate(self, body: Any) -> Any:
        return body

    def whole(self, served: Served) -> dict[str, Any]:
        answer = served.routed.result
        assert isinstance(answer, Answer)
        return text_completion(answer.body, answer.usage)

    def events(self, served: Served) -> CompletionEvents:
        return CompletionEvents(served.chat.include_usage)

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        return exc.body()


COMPLETIONS = CompletionsDialect()


async def completions(request: Request) -> Response | EventStream:
    return await respond(request, COMPLETIONS)


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


class CompletionEvents:
    """Chat chunks as `text_completion` chunks; the usage chunk if asked; then `[DONE]`."""

    def __init__(self, include_usage: bool) -> None:
        self._include_usage = include_usage
        self._base: dict[str, Any] | None = None

    def start(self) -> list[bytes]:
        return []

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        self._base = self._base or _base(chunk)
        choices = [
            {
                "text": (choice.get("delta") or {}).get("content") or "",
                "index": choice.get("index", 0),
                "logprobs": None,
                "finish_reason": choice.get("finish_reason"),
            }
            for choice in chunk.get("choices") or []
        ]
        return [sse({**self._base, "choices": choices})] if choices else []

    def error(self, exc: EdgewayError) -> bytes:
        return sse(exc.body())

    def end(self, usage: Usage) -> list[bytes]:
        if not self._include_usage:
            return [SSE_DONE]
        return [sse({**(self._base or _base({})), "choices": [], "usage": usage.as_openai()}), SSE_DONE]
