"""POST /v1/messages: Anthropic's Messages API, routed like chat completions.

The key may come as `x-api-key` (as Anthropic's SDKs send it) or `Authorization: Bearer`; the
`anthropic-version` header is accepted and not needed. Errors have Anthropic's shape (rendered by
the app for every path under /v1/messages).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway import anthropic
from gateway.asked import named
from gateway.http import JSON, EventStream
from gateway.pipeline import (
    Exchange,
    NamedEvents,
    NativeOrTranslated,
    Served,
    chat_request,
    identify,
    read_body,
    respond,
)
from gateway.running import gateway_of
from router.answer import Answer
from router.edge import EdgeModel
from router.errors import EdgewayError, InvalidRequest
from router.native import Api
from router.request import ChatRequest, parse_chat_request

PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"


class MessagesDialect:
    """Anthropic's Messages: an Anthropic model's answer as it wrote it; any other model's,
    translated from Chat Completions."""

    codec = anthropic.MessagesCodec()

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        return parse_chat_request(body, metadata)

    def translate(self, body: Any) -> Any:
        return anthropic.chat_body(body)

    def whole(self, served: Served) -> dict[str, Any]:
        answer = served.routed.result
        assert isinstance(answer, Answer)
        if answer.native is not None and answer.native.api is Api.MESSAGES:
            body = named(answer.native.body, served.chat.model)
            if answer.usage.measured:
                return body
            return {**body, "usage": answer.usage.as_anthropic()}  # what it is charged
        return anthropic.message(answer.body, answer.usage, served.chat.model)

    def events(self, served: Served) -> NamedEvents:
        stream = served.routed.result
        assert not isinstance(stream, Answer)
        # Anthropic says the input's tokens in message_start: the stream's count where it has one
        # (the edge's), else the estimate the request was admitted by; message_delta has the count.
        known = stream.usage.prompt_tokens or served.routed.signals.prompt_tokens
        events = anthropic.MessageEvents(served.chat.model, stream.usage, known)
        translate = NativeOrTranslated(Api.MESSAGES, events, served.chat.model)
        return NamedEvents(translate, anthropic.event, lambda exc: ("error", anthropic.error_body(exc)))

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        return anthropic.error_body(exc)


MESSAGES = MessagesDialect()


async def messages(request: Request) -> Response | EventStream:
    return await respond(request, MESSAGES)


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
    chat = chat_request(Exchange.of(request), app, anthropic.chat_body({**body, "max_tokens": 1}), size)
    router = gateway_of(request).router
    signals = await router.signals_async(chat, app)  # an unknown model is a 404 here
    model = router.models.get(chat.model)
    tokens = await model.prompt_tokens(chat) if isinstance(model, EdgeModel) else signals.prompt_tokens
    return JSON({"input_tokens": tokens}, headers={"x-edgeway-request-id": request.state.request_id})
