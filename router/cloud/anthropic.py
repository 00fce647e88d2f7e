"""Anthropic models, in Anthropic's own API, over the gateway's pooled connections (no LiteLLM:
nothing to import before the first request). A Messages request goes as the client sent it (only
the model, a capped max_tokens and masked values changed), with the client's `anthropic-version`
and `anthropic-beta`, and its answer, whole or streamed, goes back as Anthropic wrote it. Any
other request is translated into a Messages request (`messages_body`). Either way the answer is
also read as Chat Completions (`read_message`, `MessageStream`), for the gateway's readers and for
a client of another API.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from policies.needs import Need
from router.answer import Answer, Usage
from router.cloud import validate
from router.cloud.base import CloudModel
from router.cloud.batch_api import ANTHROPIC_BASE, ANTHROPIC_VERSION
from router.cloud.config import CloudModelConfig
from router.cloud.endpoint import Endpoint
from router.cloud.http1 import Client, Response, Timeouts
from router.errors import InvalidRequest, UpstreamError
from router.native import Api, NativeAnswer, NativeChunk
from router.request import ChatRequest
from router.tracing import outgoing_headers

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def messages_url(api_base: str | None) -> str:
    """The Messages endpoint of an `api_base` given as LiteLLM takes it: the origin, its `/v1`,
    or the endpoint itself."""
    base = (api_base or ANTHROPIC_BASE).rstrip("/")
    if base.endswith("/v1/messages"):
        return base
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


# What a Chat Completions request may ask that Anthropic's API has no way to give: such a request
# goes to another model, or is refused, rather than answered as if the field were not there.
UNSUPPORTED = frozenset(
    {Need.LOGPROBS, Need.LOGIT_BIAS, Need.OWN_TOKEN_BIAS, Need.PENALTIES, Need.CHOICES, Need.AUDIO_OUTPUT,
     Need.LEGACY_LOGPROBS, Need.EMBEDDINGS}
)  # fmt: skip
DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; a Chat Completions request may leave it out
WEB_SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search"}


class AnthropicModel(CloudModel):
    def __init__(self, config: CloudModelConfig, client: Client) -> None:
        super().__init__(config)
        if config.capabilities is None:
            self.capabilities = self.capabilities - UNSUPPORTED
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        headers = f"x-api-key: {key}\r\n".encode("latin-1") if key else b""
        timeouts = Timeouts(config.connect_timeout_s, config.read_timeout_s, config.timeout_s)
        self._endpoint = Endpoint(config.name, client, messages_url(config.api_base), headers, timeouts)

    def _sent(self, request: ChatRequest, stream: bool) -> tuple[bytes, bytes]:
        """The Messages body for this model (the client's own, or the translation of a request of
        another API) and its headers (the client's version and betas, where it sent a Messages body)."""
        given: dict[str, str] = {}
        if request.speaks(self.apis):
            assert request.native is not None
            body, given = {**request.native.body, "model": self.config.provider_model_id}, request.native.headers
        else:
            body = messages_body(request, self.config.provider_model_id, self.name)
        if stream:
            body["stream"] = True
        else:
            body.pop("stream", None)
        headers = {"anthropic-version": given.get("anthropic-version", ANTHROPIC_VERSION), **outgoing_headers()}
        if "anthropic-beta" in given:
            headers["anthropic-beta"] = given["anthropic-beta"]
        return orjson.dumps(body), "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        message = await self._endpoint.post(*self._sent(request, False))
        chat, usage = read_message(message, self.name)
        native = NativeAnswer(Api.MESSAGES, message) if request.speaks(self.apis) else None
        return Answer(chat, usage, native=native)

    async def stream(self, request: ChatRequest) -> MessageStream:
        response = await self._endpoint.open_stream(*self._sent(request, True))
        return MessageStream(self._endpoint, response)

    async def embed(self, request: ChatRequest) -> Answer:
        raise InvalidRequest(f"{self.name} does not embed.", param="model", code="unsupported_parameter")


# --- a request of another API, as a Messages request ----------------------------------------------
def messages_body(request: ChatRequest, model: str, name: str) -> dict[str, Any]:
    """The Messages body that asks what this Chat Completions request (or legacy prompt) asks:
    its system messages as `system` (one met mid-conversation as a text of the turn beside it),
    tool calls as `tool_use` blocks and their results as `tool_result` blocks of the next user
    turn, images and PDFs as blocks, tools, tool choice, a JSON schema as `output_config.format`,
    stop sequences and the sampling fields Messages has."""
    chat = request.body
    turns: list[dict[str, Any]] = []
    system: list[str] = []
    said: list[dict[str, Any]] = (
        [{"role": "user", "content": request.prompt}] if request.prompt is not None else request.messages
    )
    for message in said:
        role, content = message.get("role"), message.get("content")
        if role in ("system", "developer"):
            text = request.text_of(message)
            if turns:
                _add(turns, "user", [{"type": "text", "text": text}])
            else:
                system.append(text)
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": str(message.get("tool_call_id")), "content": _text(content)}
            _add(turns, "user", [result])
        elif role == "assistant":
            blocks = _blocks(content, name)
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                blocks.append({"type": "tool_use", "id": str(call.get("id")), "name": str(function.get("name")),
                               "input": _input(function.get("arguments"))})  # fmt: skip
            _add(turns, "assistant", blocks)
        else:
            _add(turns, "user", _blocks(content, name))
    body: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS}
    if system:
        body["system"] = "\n\n".join(system)
    if request.temperature is not None:
        body["temperature"] = min(request.temperature, 1.0)  # Anthropic's range is [0, 1]
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop:
        body["stop_sequences"] = request.stop
    if isinstance(chat.get("user"), str):
        body["metadata"] = {"user_id": chat["user"]}
    tools = [_tool(t) for t in chat.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    if chat.get("web_search_options") is not None:
        tools.append(dict(WEB_SEARCH_TOOL))
    if tools:
        body["tools"] = tools
    choice = _tool_choice(chat.get("tool_choice"), chat.get("parallel_tool_calls"))
    if choice is not None and tools:
        body["tool_choice"] = choice
    schema = _schema(chat.get("response_format"))
    if schema is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    return body


def _add(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Blocks of a turn of `role`: the turn before's, where it is that role's too (Messages takes
    a user's tool results and the text after them as one turn, its results first)."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"] += blocks
    else:
        turns.append({"role": role, "content": blocks})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(p.get("text") or "" for p in parts if isinstance(p, dict))


def _blocks(content: Any, name: str) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "refusal"):
            blocks.append({"type": "text", "text": part.get(kind) or ""})
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            blocks.append({"type": "image", "source": _source(str(url))})
        elif kind == "file":
            blocks.append(_document(part.get("file") or {}, name))
        else:
            raise InvalidRequest(f"{name}: Anthropic's API takes no {kind!r} content part.", code="unsupported_content")
    return blocks


def _source(url: str) -> dict[str, Any]:
    """An image's source: a `data:` URL as base64, any other URL as a URL."""
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "base64", "media_type": media or "image/png", "data": data}
    return {"type": "url", "url": url}


def _document(file: dict[str, Any], name: str) -> dict[str, Any]:
    data = file.get("file_data")
    if isinstance(data, str) and data.startswith("data:") and ";base64," in data:
        media, payload = data[5:].split(";base64,", 1)
        block: dict[str, Any] = {"type": "document", "source": {"type": "base64", "media_type": media, "data": payload}}
        if isinstance(file.get("filename"), str):
            block["title"] = file["filename"]
        return block
    if isinstance(file.get("file_url"), str):
        return {"type": "document", "source": {"type": "url", "url": file["file_url"]}}
    raise InvalidRequest(f"{name}: a file part needs its data inline (a base64 data: URL).", code="unsupported_content")


def _input(arguments: Any) -> Any:
    """A tool call's arguments as `tool_use` input: the JSON object they are (else kept as text)."""
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except json.JSONDecodeError:
        return {"_unparsed": arguments}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    out = {"name": str(function.get("name")),
           "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}  # fmt: skip
    if isinstance(function.get("description"), str):
        out["description"] = function["description"]
    return out


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    picked: dict[str, Any] | None = None
    if choice == "auto":
        picked = {"type": "auto"}
    elif choice == "required":
        picked = {"type": "any"}
    elif choice == "none":
        picked = {"type": "none"}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        picked = {"type": "tool", "name": str(choice["function"].get("name"))}
    if parallel is False:
        picked = {**(picked or {"type": "auto"}), "disable_parallel_tool_use": True}
    return picked


def _schema(response_format: Any) -> dict[str, Any] | None:
    """A JSON answer asked in Chat Completions' `response_format`, as the schema Messages takes."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) else {"type": "object"}
    return {"type": "object"} if response_format.get("type") == "json_object" else None


def read_message(message: Any, name: str) -> tuple[dict[str, Any], Usage]:
    """A Messages answer as a chat.completion (its text and tool calls) and its usage; an
    UpstreamError if it is not a message."""
    if (
        not isinstance(message, dict)
        or message.get("type") != "message"
        or not isinstance(message.get("content"), list)
    ):
        raise UpstreamError(f"{name}: the provider answered with JSON that is not a Messages message")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message["content"]:
        if not isinstance(block, dict):
            raise UpstreamError(f"{name}: the provider's answer holds a content block that is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append({"id": str(block.get("id")), "type": "function",
                          "function": {"name": str(block.get("name")), "arguments": arguments}})  # fmt: skip
    said: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        said["tool_calls"] = calls
    choice = {"index": 0, "message": said, "finish_reason": _finish(message.get("stop_reason")), "logprobs": None}
    chat = {
        "id": str(message.get("id", "")),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(message.get("model", "")),
        "choices": [choice],
    }
    usage = validate.anthropic_usage(message.get("usage")) or validate.unmeasured()
    chat["usage"] = usage.as_openai()
    return chat, usage


def _finish(stop_reason: Any) -> str:
    return FINISH_REASONS.get(stop_reason, "stop") if isinstance(stop_reason, str) else "stop"


class MessageStream:
    """Anthropic's stream events, each a NativeChunk: the event as it came, and its reading as a
    chat.completion.chunk (text deltas as content, tool_use blocks as tool calls)."""

    def __init__(self, endpoint: Endpoint, response: Response) -> None:
        self._endpoint, self._response = endpoint, response
        self._counts: dict[str, Any] = {}  # the usage so far: message_start's, updated by message_delta's
        self.usage = validate.unmeasured()
        self._tools: dict[int, int] = {}  # a content block's index -> its tool call's index
        self._base: dict[str, Any] = {
            "id": "",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": "",
        }

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        name = self._endpoint.name
        async for event, data in self._endpoint.events(self._response):
            kind = data.get("type")
            if kind == "error" or event == "error":
                raise UpstreamError(f"{name}: the provider ended the stream with an error: {_reason(data)}")
            chat = self._read(kind, data)
            yield NativeChunk(Api.MESSAGES, [(event or str(kind), data)], chat)
            if kind == "message_stop":
                return
        raise UpstreamError(f"{name}: the provider's stream ended before the answer did")

    def _read(self, kind: Any, data: dict[str, Any]) -> dict[str, Any]:
        chat: dict[str, Any] = {**self._base, "choices": []}
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, dict):
                self._base.update(id=str(message.get("id", "")), model=str(message.get("model", "")))
                chat.update(self._base)
                if isinstance(message.get("usage"), dict):
                    self._counted(message["usage"])
            return chat
        if kind == "message_delta":
            if isinstance(data.get("usage"), dict):
                self._counted(data["usage"])
            delta = data.get("delta")
            stop = delta.get("stop_reason") if isinstance(delta, dict) else None
            chat["choices"] = [{"index": 0, "delta": {}, "finish_reason": _finish(stop)}]
            return chat
        index = data.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = data.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self._tools[index] = len(self._tools)
                call = {"index": self._tools[index], "id": str(block.get("id")), "type": "function",
                        "function": {"name": str(block.get("name")), "arguments": ""}}  # fmt: skip
                chat["choices"] = [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]
        elif kind == "content_block_delta" and isinstance(index, int):
            delta = data.get("delta")
            said = _said(delta, self._tools.get(index)) if isinstance(delta, dict) else None
            if said is not None:
                chat["choices"] = [{"index": 0, "delta": said, "finish_reason": None}]
        return chat

    def _counted(self, counts: dict[str, Any]) -> None:
        self._counts.update({k: v for k, v in counts.items() if v is not None})
        self.usage = validate.anthropic_usage(self._counts) or validate.unmeasured()

    async def aclose(self) -> None:
        self._response.release()


def _said(delta: dict[str, Any], tool: int | None) -> dict[str, Any] | None:
    """A content block's delta as a chat delta: text as content, a tool's input as its arguments
    (thinking and signatures are the client's alone)."""
    if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
        return {"content": delta["text"]}
    if delta.get("type") == "input_json_delta" and tool is not None and isinstance(delta.get("partial_json"), str):
        return {"tool_calls": [{"index": tool, "function": {"arguments": delta["partial_json"]}}]}
    return None


def _reason(data: dict[str, Any]) -> str:
    error = data.get("error")
    return str(error.get("message") or error)[:300] if isinstance(error, dict) else str(data)[:300]
