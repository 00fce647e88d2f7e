"""POST /v1/messages: Anthropic's Messages API, routed like chat completions.

The key may come as `x-api-key` (as Anthropic's SDKs send it) or `Authorization: Bearer`; the
`anthropic-version` header is accepted and not needed. Errors have Anthropic's shape (rendered by
the app for every path under /v1/messages).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response

from gateway import anthropic
from gateway.chat import Visit, delivered, routing_headers, serve, streamed
from gateway.http import JSON, EventStream
from router.answer import Answer, ChunkStream
from router.errors import EdgewayError
from router.request import ChatRequest
from router.routed import Routed

PATH = "/v1/messages"


async def messages(request: Request) -> Response | EventStream:
    served = await serve(request, translate=anthropic.chat_body)
    if isinstance(served, Response):
        return served
    routed, chat = served.routed, served.chat
    if isinstance(routed.result, Answer):
        body = anthropic.message(routed.result.body, routed.result.usage, chat.model)
        return JSON(body, headers=routing_headers(request, routed))
    return streamed(request, served, _events(routed, chat, served.visit))


async def _events(routed: Routed[ChunkStream], chat: ChatRequest, visit: Visit) -> AsyncIterator[bytes]:
    stream = routed.result
    translate = anthropic.MessageEvents(chat.model, stream.usage)
    for name, data in translate.start():
        yield anthropic.event(name, data)
    try:
        async for chunk in delivered(routed, visit):
            for name, data in translate.chunk(chunk):
                yield anthropic.event(name, data)
    except EdgewayError as exc:  # Anthropic's SDKs raise an error event as an APIError
        yield anthropic.event("error", anthropic.error_body(exc))
        return
    usage = visit.settled(stream.usage)
    visit.end(usage)
    for name, data in translate.end(usage):
        yield anthropic.event(name, data)
