"""POST /v1/responses: OpenAI's Responses API, routed like chat completions (same policies,
signals, budgets, ledger, redaction and privacy invariant, on the translated request)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.asked import named
from gateway.http import EventStream
from gateway.pipeline import NamedEvents, NativeOrTranslated, Served, respond
from gateway.responses_answer import ResponseBuilder, ResponseEvents, event
from gateway.responses_request import ResponsesCodec, chat_body
from router.answer import Answer
from router.errors import EdgewayError
from router.native import Api
from router.request import ChatRequest, parse_chat_request


class ResponsesDialect:
    """A provider's answer in Responses as it wrote it; any other's, translated from Chat
    Completions into a response that echoes the request's own settings."""

    codec = ResponsesCodec()

    def parse(self, body: Any, metadata: dict[str, str]) -> ChatRequest:
        return parse_chat_request(body, metadata)

    def translate(self, body: Any) -> Any:
        return chat_body(body)

    def _builder(self, served: Served) -> ResponseBuilder:
        return ResponseBuilder(served.original, served.chat.model)

    def whole(self, served: Served) -> dict[str, Any]:
        answer = served.routed.result
        assert isinstance(answer, Answer)
        if answer.native is not None and answer.native.api is Api.RESPONSES:
            body = named(answer.native.body, served.chat.model)
            if answer.usage.measured:
                return body
            return {**body, "usage": answer.usage.as_responses()}  # what it is charged
        return self._builder(served).whole(answer.body, answer.usage)

    def events(self, served: Served) -> NamedEvents:
        translate = ResponseEvents(self._builder(served))
        return NamedEvents(NativeOrTranslated(Api.RESPONSES, translate, served.chat.model), event, translate.error)

    def error_body(self, exc: EdgewayError) -> dict[str, Any]:
        body = exc.body()
        if exc.param == "web_search_options":  # asked here as a hosted tool, not as that field
            where = exc.message[exc.message.find("(") :] if "(" in exc.message else ""
            body["error"]["param"] = "tools"
            body["error"]["message"] = (
                f"Hosted tool 'web_search' is not supported by any model this request may use {where}"
            )
        return body


RESPONSES = ResponsesDialect()


async def responses(request: Request) -> Response | EventStream:
    return await respond(request, RESPONSES)
