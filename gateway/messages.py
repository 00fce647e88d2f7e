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
from gateway.chat import Visit, chat_request, delivered, identify, read_body, routing_headers, serve, streamed
from gateway.http import JSON, EventStream
from router.answer import Answer, ChunkStream
from router.edge import EdgeModel
from router.errors import EdgewayError, InvalidRequest
from router.request import ChatRequest
from router.routed import Routed

PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"


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


async def count_tokens(request: Request) -> Response:
    """POST /v1/messages/count_tokens: the prompt's tokens, as Anthropic's endpoint answers it
    (`{"input_tokens": N}`), without calling a model or writing a ledger row. For an edge model,
    exact: its own chat template and tokenizer, tools included. For a cloud model or `auto`,
    edgeway's estimate (the one budgets reserve by), since only the provider holds its tokenizer."""
    app = identify(request)
    body, size = await read_body(request)
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    if "max_tokens" in body:
        raise InvalidRequest("max_tokens: Extra inputs are not permitted.", param="max_tokens")
    chat = chat_request(request, app, anthropic.chat_body({**body, "max_tokens": 1}), size)
    router = request.app.state.gateway.router
    signals = await router.signals_async(chat, app.caller())  # an unknown model is a 404 here
    model = router.models.get(chat.model)
    tokens = await model.prompt_tokens(chat) if isinstance(model, EdgeModel) else signals.prompt_tokens
    return JSON({"input_tokens": tokens}, headers={"x-edgeway-request-id": request.state.request_id})
