"""POST /v1/chat/completions and its dry run, POST /v1/route."""

from __future__ import annotations

import time
import uuid
from typing import Any, AsyncIterator

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON, SSE_DONE, EventStream, read_json, sse
from router.errors import EdgewayError
from router.request import ChatRequest, parse_chat_request
from router.routing import Routed, RoutedStream

METADATA_PREFIX = "x-edgeway-"


async def _parse(request: Request) -> tuple[Any, ChatRequest]:
    request.state.request_id = uuid.uuid4().hex
    gateway = request.app.state.gateway
    app = gateway.keys.identify(request.headers.get("authorization"))
    body = await read_json(request, gateway.config.server.max_body_bytes)
    metadata = {k[len(METADATA_PREFIX):]: v for k, v in request.headers.items() if k.startswith(METADATA_PREFIX)}
    return app, parse_chat_request(body, metadata)


def _headers(request: Request, routed: Routed) -> dict[str, str]:
    headers = {"x-edgeway-route": routed.route, "x-edgeway-model": routed.model.name,
               "x-edgeway-rule": routed.decision.rule, "x-edgeway-request-id": request.state.request_id}
    if routed.escalated:
        headers["x-edgeway-cascade"] = f"escalated: {routed.escalated}"
    elif routed.decision.cascade is not None:
        headers["x-edgeway-cascade"] = "edge answer kept"
    if routed.decision.redact and routed.signals.privacy and routed.route == "cloud":
        headers["x-edgeway-redacted"] = str(len(routed.signals.privacy))
    return headers


async def completions(request: Request) -> Response:
    app, chat = await _parse(request)
    router = request.app.state.gateway.router
    if not chat.stream:
        routed = await router.complete(chat, app.name, app.policy, app.budget())
        return JSON(routed.answer.body, headers=_headers(request, routed))
    routed = await router.stream(chat, app.name, app.policy, app.budget())
    return EventStream(_events(routed, chat), _headers(request, routed), routed.stream.aclose)


async def _events(routed: RoutedStream, chat: ChatRequest) -> AsyncIterator[bytes]:
    stream = routed.stream
    last: dict[str, Any] | None = None
    try:
        async for chunk in stream:
            last = chunk
            yield sse(chunk)
    except EdgewayError as exc:
        # After the first byte there is no failing over: end the stream with an error event,
        # which the OpenAI SDKs raise as an APIError.
        yield sse(exc.body())
        return
    if chat.include_usage:
        base = {k: last[k] for k in ("id", "object", "created", "model") if last and k in last}
        base.setdefault("created", int(time.time()))
        yield sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": stream.usage.as_openai()})
    yield SSE_DONE


async def route(request: Request) -> Response:
    """The decision for this body, with the signals it was made on; no model is called."""
    app, chat = await _parse(request)
    signals, decision = request.app.state.gateway.router.decide(chat, app.name, app.policy, app.budget())
    return JSON({"app": app.name, "signals": signals.as_dict(), "decision": decision.as_dict()},
                headers={"x-edgeway-request-id": request.state.request_id})
