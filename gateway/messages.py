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
from gateway.chat import Visit, chat_request, closed, delivered, identify, read_body, routing_headers, run
from gateway.http import JSON, EventStream
from router.answer import Answer, ChunkStream
from router.errors import EdgewayError
from router.request import ChatRequest
from router.routing import Routed

PATH = "/v1/messages"


async def messages(request: Request) -> Response | EventStream:
    app = identify(request)
    visit = Visit(request, app)

    async def read() -> ChatRequest:
        body, size = await read_body(request)
        return chat_request(request, app, anthropic.chat_body(body), size)

    ran = await run(request, app, visit, read)
    if isinstance(ran, Response):
        return ran
    chat, routed = ran
    if isinstance(routed.result, Answer):
        body = anthropic.message(routed.result.body, routed.result.usage, chat.model)
        return JSON(body, headers=routing_headers(request, routed))
    return EventStream(
        _events(routed, chat, visit),
        routing_headers(request, routed),
        lambda: closed(routed, visit),
        request.app.state.gateway.config.server.write_timeout_s,
    )


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
