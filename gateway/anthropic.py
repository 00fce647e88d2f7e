"""Anthropic's Messages API in terms of Chat Completions, both ways: the request a client sends
to `/v1/messages`, the answer it gets back, whole or as Anthropic's stream of events, and errors
in Anthropic's shape.

Routing reads the translation (the messages a model reads, what the answer must honor); the
privacy scan and masking read the body as sent. An Anthropic model receives that body, in its own
API, with every field the gateway does not change (`router/cloud/anthropic.py`), and its answer
goes back as it wrote it; the edge and models of other APIs get the translation, which drops what
Chat Completions cannot say the way Anthropic's API does when a feature is off (earlier turns'
thinking, `cache_control`, server tools' traces).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from router.answer import Usage
from router.errors import EdgewayError, InvalidRequest
from router.native import Api, block_type

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}


def error_body(exc: EdgewayError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(exc.status, "api_error"), "message": exc.message}}


# --- the request ------------------------------------------------------------------------------
def chat_body(body: Any) -> dict[str, Any]:
    """The Chat Completions body that asks what this Messages body asks."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise InvalidRequest("max_tokens: Field required (an integer).", param="max_tokens")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages: Field required (a non-empty list).", param="messages")
    out: dict[str, Any] = {"model": body.get("model"), "max_tokens": max_tokens, "messages": []}
    system = body.get("system")
    if system is not None:
        out["messages"].append({"role": "system", "content": _text_of(system, "system")})
    for i, message in enumerate(messages):
        out["messages"] += list(_messages(message, f"messages.{i}"))
    for key in ("temperature", "top_p", "stream"):
        if key in body:
            out[key] = body[key]
    if body.get("stop_sequences") is not None:
        out["stop"] = body["stop_sequences"]
    if body.get("stream"):
        out["stream_options"] = {"include_usage": True}
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        out["user"] = metadata["user_id"]
    if body.get("tools"):
        tools = _list(body["tools"], "tools")
        called = [_tool(t, f"tools.{i}") for i, t in enumerate(tools) if _client_tool(t)]
        if called:
            out["tools"] = called
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
        if isinstance(body["tool_choice"], dict) and body["tool_choice"].get("disable_parallel_tool_use"):
            out["parallel_tool_calls"] = False
    response_format = _output_format(body)
    if response_format is not None:
        out["response_format"] = response_format
    return out


# The content blocks a Chat Completions reading carries (the rest of `_SERVER_TRACES` aside).
_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_use", "tool_result"})


def _client_tool(tool: Any) -> bool:
    """A tool the client runs, defined by its schema (a chat model calls it as a function); the
    others (`web_search_20250305`, `bash_20250124`, ...) are Anthropic's own."""
    return isinstance(tool, dict) and tool.get("type") in (None, "custom")


class MessagesCodec:
    """Messages bodies as the router reads them (`router.native.Codec`)."""

    api = Api.MESSAGES

    def chat_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return chat_body(body)

    def capped(self, body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        return {**body, "max_tokens": max_tokens}

    def native_only(self, body: dict[str, Any]) -> str | None:
        tools = body.get("tools")
        for tool in tools if isinstance(tools, list) else []:
            if not _client_tool(tool):
                return f"the {tool.get('type') if isinstance(tool, dict) else None!r} tool"
        messages = body.get("messages")
        for i, message in enumerate(messages if isinstance(messages, list) else []):
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                inner = block.get("content") if isinstance(block, dict) and block.get("type") == "tool_result" else None
                for one in [block, *(inner if isinstance(inner, list) else [])]:
                    kind = block_type(one)
                    if kind not in _BLOCKS and kind not in _SERVER_TRACES:
                        return f"messages.{i} content block of type {kind!r}"
        return None


def _output_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """`output_config.format` (and the beta's `output_format`): a JSON schema the answer's text
    matches, as Chat Completions' `response_format` asks it."""
    config = body.get("output_config")
    if config is not None and not isinstance(config, dict):
        raise InvalidRequest("output_config: Input should be a valid dictionary.", param="output_config")
    where, fmt = "output_config.format", (config or {}).get("format")
    if fmt is None and body.get("output_format") is not None:
        where, fmt = "output_format", body["output_format"]
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        raise InvalidRequest(f"{where}.type: Input should be 'json_schema'.", param=f"{where}.type")
    if not isinstance(fmt.get("schema"), dict):
        raise InvalidRequest(f"{where}.schema: Field required (a JSON schema object).", param=f"{where}.schema")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: Input should be a valid list.", param=where)
    return value


def _text_of(value: Any, where: str) -> str:
    """A string, or the text of a list of text blocks."""
    if isinstance(value, str):
        return value
    blocks = _list(value, where)
    texts = []
    for j, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise InvalidRequest(f"{where}.{j}: expected a text block.", param=f"{where}.{j}")
        texts.append(block["text"])
    return "\n".join(texts)


# Blocks of an assistant turn that record what Anthropic's own servers ran or the model thought:
# Chat Completions has no place for them, and a model of another API answers without them (as
# Anthropic's API does for a model's earlier thinking when thinking is off).
_SERVER_TRACES = frozenset(
    {
        "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
        "code_execution_tool_result", "bash_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
        "text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload",
    }
)  # fmt: skip


def _messages(message: Any, where: str) -> Iterator[dict[str, Any]]:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
        raise InvalidRequest(f"{where}.role: expected 'user', 'assistant' or 'system'.", param=f"{where}.role")
    role, content = message["role"], message.get("content")
    if role == "system":
        # A system message mid-conversation (Anthropic's `mid-conversation-system` beta, which
        # Claude Code sends on every turn): kept where it stands. Chat Completions and the edge's
        # chat templates read a system message anywhere; LiteLLM folds it into the turn beside it
        # for an Anthropic model that does not take one.
        yield {"role": "system", "content": _text_of(content, f"{where}.content")}
        return
    if isinstance(content, str):
        yield {"role": role, "content": content}
        return
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []  # what tool results showed besides text: images, documents
    for j, block in enumerate(_list(content, f"{where}.content")):
        at = f"{where}.content.{j}"
        kind = block_type(block)
        if kind == "tool_use" and role == "assistant":
            arguments = json.dumps(block.get("input") or {})
            calls.append(
                {
                    "id": str(block.get("id")),
                    "type": "function",
                    "function": {"name": str(block.get("name")), "arguments": arguments},
                }
            )
        elif kind == "tool_result" and role == "user":
            text, media = _tool_result(block.get("content", ""), f"{at}.content")
            if block.get("is_error") and text:
                text = f"Error: {text}"
            results.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id")), "content": text})
            shown += media
        elif kind in _SERVER_TRACES:
            continue
        elif isinstance(block, dict):
            parts += _part(block, at)
        else:
            raise InvalidRequest(f"{at}: expected a content block.", param=at)
    yield from results  # tool results answer the assistant turn before this one
    if shown:  # a tool message holds text only: what the tools showed follows, as the user's
        yield {"role": "user", "content": [{"type": "text", "text": "What the tool results showed:"}, *shown]}
    if calls:
        yield {"role": "assistant", "content": _joined(parts), "tool_calls": calls}
    elif parts or not results:
        yield {"role": role, "content": parts if any(p["type"] != "text" for p in parts) else _joined(parts) or ""}


def _part(block: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A content block a chat model reads, as Chat Completions' content parts."""
    kind = block_type(block)
    if kind == "text" and isinstance(block.get("text"), str):
        return [{"type": "text", "text": block["text"]}]
    if kind == "image":
        return [{"type": "image_url", "image_url": {"url": _image_url(block.get("source"), where)}}]
    if kind == "document":
        return _document(block, where)
    if kind == "search_result":
        texts = [b.get("text") for b in block.get("content") or [] if isinstance(b, dict)]
        said = "\n".join(t for t in [block.get("title"), block.get("source"), *texts] if isinstance(t, str))
        return [{"type": "text", "text": said}]
    if kind in _BLOCKS:
        raise InvalidRequest(f"{where}: a {kind!r} block without its value.", param=where)
    return []  # a block Chat Completions has no place for: only Anthropic takes it (`native_only`)


def _document(block: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A `document` block: plain text or blocks as text; a PDF as Chat Completions' file part."""
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    title = block.get("title") if isinstance(block.get("title"), str) else None
    if kind == "text" and isinstance(source.get("data"), str):  # type: ignore[union-attr]
        return [{"type": "text", "text": "\n".join(filter(None, [title, source["data"]]))}]  # type: ignore[index]
    if kind == "content":
        inner = source.get("content")  # type: ignore[union-attr]
        if isinstance(inner, str):
            return [{"type": "text", "text": inner}]
        return [p for j, b in enumerate(_list(inner, f"{where}.source.content")) for p in _part(b, f"{where}.{j}")]
    if kind == "base64":
        media = str(source.get("media_type") or "application/pdf")  # type: ignore[union-attr]
        data = f"data:{media};base64,{source.get('data', '')}"  # type: ignore[union-attr]
        return [{"type": "file", "file": {"filename": title or "document.pdf", "file_data": data}}]
    if kind in ("url", "file"):
        reference = {"file_url": source.get("url")} if kind == "url" else {"file_id": source.get("file_id")}  # type: ignore[union-attr]
        return [{"type": "file", "file": {"filename": title or "document", **reference}}]
    raise InvalidRequest(
        f"{where}.source: expected a text, content, base64, url or file source.", param=f"{where}.source"
    )


def _tool_result(content: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """A tool result's text, and what else it holds (images, documents) as content parts."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    for j, block in enumerate(_list(content, where)):
        if not isinstance(block, dict):
            raise InvalidRequest(f"{where}.{j}: expected a content block.", param=f"{where}.{j}")
        for part in _part(block, f"{where}.{j}"):
            if part["type"] == "text":
                texts.append(part["text"])
            else:
                media.append(part)
    return "\n".join(texts), media


def _joined(parts: list[dict[str, Any]]) -> str | None:
    texts = [p["text"] for p in parts if p["type"] == "text"]
    return "\n".join(texts) if texts else None


def _image_url(source: Any, where: str) -> str:
    if isinstance(source, dict) and source.get("type") == "base64":
        return f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    if isinstance(source, dict) and source.get("type") == "url" and isinstance(source.get("url"), str):
        return str(source["url"])
    raise InvalidRequest(f"{where}.source: expected a base64 or url image source.", param=f"{where}.source")


def _tool(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise InvalidRequest(f"{where}.name: Field required.", param=f"{where}.name")
    function = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object", "properties": {}}}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "tool":
        return {"type": "function", "function": {"name": str(choice.get("name"))}}
    if kind in ("auto", "none"):
        return kind
    if kind == "any":
        return "required"
    raise InvalidRequest("tool_choice.type: expected auto, any, tool or none.", param="tool_choice.type")


# --- the answer --------------------------------------------------------------------------------
def message(answer: dict[str, Any], usage: Usage, model: str) -> dict[str, Any]:
    """A chat.completion as an Anthropic message."""
    choice = (answer.get("choices") or [{}])[0]
    said = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if said.get("content"):
        content.append({"type": "text", "text": said["content"]})
    for call in said.get("tool_calls") or []:
        function = call.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or _id("toolu"),
                "name": function.get("name"),
                "input": _arguments(function.get("arguments"), cut=choice.get("finish_reason") == "length"),
            }
        )
    return {
        "id": _id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(choice),
        "stop_sequence": _stop_sequence(choice),
        "usage": usage.as_anthropic(),
    }


def _stop_sequence(choice: dict[str, Any]) -> str | None:
    """The stop sequence that ended the answer: a chat choice's `stop_reason` (vLLM's field, which
    the edge sets) when it is a string."""
    found = choice.get("stop_reason")
    return found if isinstance(found, str) else None


def _stop_reason(choice: dict[str, Any]) -> str:
    if _stop_sequence(choice) is not None:
        return "stop_sequence"
    return STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn")


def _arguments(text: Any, cut: bool = False) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) and text else {}
    except json.JSONDecodeError:
        if cut:  # max_tokens ended the call: no input yet, as Anthropic reports it (stop_reason max_tokens)
            return {}
        return {"_unparsed": text}  # what the model wrote, kept rather than dropped


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


class MessageEvents:
    """Chat completion chunks in, Anthropic's stream events out (name and data of each)."""

    def __init__(self, model: str, usage: Usage, input_tokens: int | None = None) -> None:
        self._model, self._usage = model, usage
        self._input_tokens = usage.prompt_tokens if input_tokens is None else input_tokens
        self._open: str | None = None  # "text" or "tool": the content block being written
        self._index = -1
        self._tools: dict[int, int] = {}  # a chat tool call's index -> its content block's index
        self._stop = "end_turn"
        self._stop_sequence: str | None = None

    def start(self) -> list[tuple[str, dict[str, Any]]]:
        message: dict[str, Any] = {
            "id": _id("msg"),
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**self._usage.as_anthropic(), "input_tokens": self._input_tokens, "output_tokens": 0},
        }
        return [("message_start", {"type": "message_start", "message": message}), ("ping", {"type": "ping"})]

    def chunk(self, chunk: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        events: list[tuple[str, dict[str, Any]]] = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                if self._open != "text":
                    events += self._begin("text", {"type": "text", "text": ""})
                events.append(self._delta({"type": "text_delta", "text": delta["content"]}))
            for call in delta.get("tool_calls") or []:
                events += self._tool_delta(call)
            if choice.get("finish_reason"):
                self._stop, self._stop_sequence = _stop_reason(choice), _stop_sequence(choice)
        return events

    def _tool_delta(self, call: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        events: list[tuple[str, dict[str, Any]]] = []
        position = call.get("index", 0)
        function = call.get("function") or {}
        if position not in self._tools:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.get("id") or _id("toolu"),
                "name": function.get("name"),
                "input": {},
            }
            events += self._begin("tool", block)
            self._tools[position] = self._index
        if function.get("arguments"):
            events.append(self._delta({"type": "input_json_delta", "partial_json": function["arguments"]}))
        return events

    def _begin(self, kind: str, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        events = self._close()
        self._index += 1
        self._open = kind
        return events + [
            ("content_block_start", {"type": "content_block_start", "index": self._index, "content_block": block})
        ]

    def _delta(self, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta}

    def _close(self) -> list[tuple[str, dict[str, Any]]]:
        if self._open is None:
            return []
        self._open = None
        return [("content_block_stop", {"type": "content_block_stop", "index": self._index})]

    def end(self, usage: Usage) -> list[tuple[str, dict[str, Any]]]:
        return self._close() + [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self._stop, "stop_sequence": self._stop_sequence},
                    # the final counts, as Anthropic's API gives them here (its input count too)
                    "usage": {
                        **usage.as_anthropic(),
                        "input_tokens": usage.uncached_tokens if usage.prompt_tokens else self._input_tokens,
                    },
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
