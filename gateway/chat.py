"""POST /v1/chat/completions, OpenAI's Chat Completions: the dialect the flow speaks natively
(gateway/pipeline.py); and its dry run, POST /v1/route."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON, SSE_DONE, EventStream, sse
from gateway.pipeline import Exchange, Served, chat_request, identify, read_body, respond
from gateway.running import gateway_of
from router.answer import Answer, Usage
from router.errors import EdgewayError
from router.request import ChatRequest, parse_chat_request


class ChatDialect:
    codec = None  # the body is Chat Completions (or its own endpoint's) as sent

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        return parse_chat_request(body, metadata)

    def translate(self, body: Any) -> Any:
        return body

    def whole(self, served: Served) -> dict[str, Any]:
        assert isinstance(served.routed.result, Answer)
        return served.routed.result.body

    def events(self, served: Served) -> ChatEvents:
        return ChatEvents(served.chat.include_usage)

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        return exc.body()


class ChatEvents:
    """Chunks as the provider or the edge wrote them; with `stream_options.include_usage`, a last
    chunk with the usage; then `[DONE]`."""

    def __init__(self, include_usage: bool) -> None:
        self._include_usage = include_usage
        self._last: dict[str, Any] | None = None

    def start(self) -> list[bytes]:
        return []

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        if not chunk.get("choices"):  # a provider's event of another API that says nothing in this one
            return []
        self._last = chunk
        return [sse(chunk)]

    def error(self, exc: EdgewayError) -> bytes:
        return sse(exc.body())

    def end(self, usage: Usage) -> list[bytes]:
        if not self._include_usage:
            return [SSE_DONE]
        last = self._last
        base: dict[str, Any] = {k: last[k] for k in ("id", "object", "created", "model") if last and k in last}
        base.setdefault("created", int(time.time()))
        usage_chunk = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage.as_openai()}
        return [sse(usage_chunk), SSE_DONE]


CHAT = ChatDialect()


async def completions(request: Request) -> Response | EventStream:
    return await respond(request, CHAT)


async def route(request: Request) -> Response:
    """The decision for this body, with the signals it was made on; no cloud model is called, and
    the edge only reads the prompt where the app's router reads first (`decision.score` is then the
    score with that reading)."""
    app = identify(request)
    body, size = await read_body(request)
    chat = chat_request(Exchange.of(request), app, body, size)
    signals, decision = await gateway_of(request).router.explain(chat, app)
    return JSON(
        {"app": app.name, "signals": signals.as_dict(), "decision": decision.as_dict()},
        headers={"x-edgeway-request-id": request.state.request_id},
    )
