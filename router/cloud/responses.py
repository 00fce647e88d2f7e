"""OpenAI's Responses API, for a provider that takes a Responses request as the client sent it
(only the model, a capped `max_output_tokens` and masked values changed): `reasoning`, `include`,
`store`, reasoning items with their `encrypted_content`, `prompt_cache_key`, custom tools and the
rest reach it. Its answer, whole or streamed, goes back as it wrote it, beside the gateway's Chat
Completions reading of it (the text and the calls)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from router.answer import Answer, Usage
from router.cloud import validate
from router.cloud.endpoint import Endpoint
from router.cloud.http1 import Response
from router.errors import UpstreamError
from router.native import Api, NativeAnswer, NativeChunk
from router.request import ChatRequest
from router.tracing import outgoing_headers

_CALLS = frozenset({"function_call", "custom_tool_call"})  # output items a chat model reads as tool calls
_ENDS = frozenset({"response.completed", "response.incomplete"})


class ResponsesEndpoint:
    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint

    def _native(self, request: ChatRequest, model: str, stream: bool) -> tuple[bytes, bytes]:
        assert request.native is not None
        body = {**request.native.body, "model": model}
        if stream:
            body["stream"] = True
        else:
            body.pop("stream", None)
        headers = {**request.native.headers, **outgoing_headers()}
        return orjson.dumps(body), "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")

    async def complete(self, request: ChatRequest, model: str) -> Answer:
        response = await self._endpoint.post(*self._native(request, model, False))
        chat, usage = read_response(response, self._endpoint.name)
        return Answer(chat, usage, native=NativeAnswer(Api.RESPONSES, response))

    async def stream(self, request: ChatRequest, model: str) -> ResponseStream:
        response = await self._endpoint.open_stream(*self._native(request, model, True))
        return ResponseStream(self._endpoint, response)


def read_response(response: Any, name: str) -> tuple[dict[str, Any], Usage]:
    """A `response` object as a chat.completion (its text and its calls) and its usage; an
    UpstreamError if it is not one, or if it failed."""
    if not isinstance(response, dict) or not isinstance(response.get("output"), list):
        raise UpstreamError(f"{name}: the provider answered with JSON that is not a Responses response")
    if response.get("status") == "failed":
        raise UpstreamError(f"{name}: the provider's response failed: {_reason(response.get('error'))}")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response["output"]:
        if not isinstance(item, dict):
            raise UpstreamError(f"{name}: the provider's response holds an output item that is not an object")
        if item.get("type") == "message":
            texts += [
                p["text"] for p in item.get("content") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
        elif item.get("type") in _CALLS:
            calls.append(_call(item))
    said: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        said["tool_calls"] = calls
    choice = {"index": 0, "message": said, "finish_reason": _finish(response, bool(calls)), "logprobs": None}
    usage = validate.responses_usage(response.get("usage")) or validate.unmeasured()
    chat = {
        "id": str(response.get("id", "")),
        "object": "chat.completion",
        "created": response.get("created_at", 0),
        "model": str(response.get("model", "")),
        "choices": [choice],
        "usage": usage.as_openai(),
    }
    return chat, usage


def _call(item: dict[str, Any]) -> dict[str, Any]:
    arguments = item.get("arguments") if item.get("type") == "function_call" else item.get("input")
    return {
        "id": str(item.get("call_id")),
        "type": "function",
        "function": {"name": str(item.get("name")), "arguments": arguments if isinstance(arguments, str) else ""},
    }


def _finish(response: dict[str, Any], called: bool) -> str:
    if response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if called else "stop"


def _reason(error: Any) -> str:
    return str(error.get("message") or error)[:300] if isinstance(error, dict) else str(error)[:300]


class ResponseStream:
    """The Responses stream's events, each a NativeChunk: the event as it came, and its reading
    as a chat.completion.chunk (output text as content, function and custom tool calls as calls)."""

    def __init__(self, endpoint: Endpoint, response: Response) -> None:
        self._endpoint, self._response = endpoint, response
        self.usage = validate.unmeasured()
        self._calls: dict[int, int] = {}  # an output item's index -> its tool call's index

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        name = self._endpoint.name
        async for event, data in self._endpoint.events(self._response):
            if event in ("error", "response.failed"):
                error = data.get("response", {}).get("error") if event == "response.failed" else data
                raise UpstreamError(f"{name}: the provider ended the stream with an error: {_reason(error)}")
            yield NativeChunk(Api.RESPONSES, [(event, data)], self._read(event, data))
            if event in _ENDS:
                return
        raise UpstreamError(f"{name}: the provider's stream ended before the answer did")

    def _read(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        chat: dict[str, Any] = {"object": "chat.completion.chunk", "choices": []}
        delta: dict[str, Any] | None = None
        finish: str | None = None
        output = data.get("output_index")
        if event == "response.output_item.added" and isinstance(output, int):
            item = data.get("item")
            if isinstance(item, dict) and item.get("type") in _CALLS:
                self._calls[output] = len(self._calls)
                call = _call({**item, "arguments": "", "input": ""})
                delta = {"tool_calls": [{"index": self._calls[output], **call}]}
        elif event == "response.output_text.delta" and isinstance(data.get("delta"), str):
            delta = {"content": data["delta"]}
        elif event in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            if isinstance(output, int) and output in self._calls and isinstance(data.get("delta"), str):
                delta = {"tool_calls": [{"index": self._calls[output], "function": {"arguments": data["delta"]}}]}
        elif event in _ENDS and isinstance(data.get("response"), dict):
            response = data["response"]
            self.usage = validate.responses_usage(response.get("usage")) or validate.unmeasured()
            delta, finish = {}, _finish(response, bool(self._calls))
        if delta is not None:
            chat["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return chat

    async def aclose(self) -> None:
        self._response.release()
