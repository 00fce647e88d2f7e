"""POST /v1/responses: OpenAI's Responses API, routed like chat completions (same policies,
signals, budgets, ledger, redaction and privacy invariant, on the translated request)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway import responses_shape as shape
from gateway.chat import Visit, delivered, routing_headers, serve, streamed
from gateway.http import JSON, EventStream
from router.answer import Answer, ChunkStream
from router.errors import EdgewayError
from router.routed import Routed


async def responses(request: Request) -> Response | EventStream:
    original: dict[str, Any] = {}

    def translate(body: Any) -> dict[str, Any]:
        translated = shape.chat_body(body)
        original.update(body)  # the response echoes the request's settings
        return translated

    served = await serve(request, translate=translate)
    if isinstance(served, Response):
        return served
    routed = served.routed
    builder = shape.ResponseBuilder(original, served.chat.model)
    if isinstance(routed.result, Answer):
        return JSON(builder.whole(routed.result.body, routed.result.usage), headers=routing_headers(request, routed))
    return streamed(request, served, _events(routed, builder, served.visit))


async def _events(routed: Routed[ChunkStream], builder: shape.ResponseBuilder, visit: Visit) -> AsyncIterator[bytes]:
    translate = shape.ResponseEvents(builder)
    for name, data in translate.start():
        yield shape.event(name, data)
    try:
        async for chunk in delivered(routed, visit):
            for name, data in translate.chunk(chunk):
                yield shape.event(name, data)
    except EdgewayError as exc:  # the OpenAI SDKs raise an error event as an APIError
        yield shape.event(*translate.error(exc))
        return
    usage = visit.settled(routed.result.usage)
    visit.end(usage)
    for name, data in translate.end(usage):
        yield shape.event(name, data)
