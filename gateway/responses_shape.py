"""OpenAI's Responses API in terms of Chat Completions, both ways: `input` (a string or items),
`instructions`, function tools and their `function_call` / `function_call_output` items,
`text.format`, `max_output_tokens`; the answer as a response object, whole or as the Responses
stream of semantic events.

Responses are not stored: `previous_response_id` is refused with a 400 that says to send the
conversation in `input` (nothing of a conversation is kept beyond the configured ledger).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from router.answer import Usage
from router.errors import EdgewayError, InvalidRequest

ROLES = frozenset({"user", "assistant", "system", "developer"})
Event = tuple[str, dict[str, Any]]


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


# --- the request ------------------------------------------------------------------------------
def chat_body(body: Any) -> dict[str, Any]:
    """The Chat Completions body that asks what this Responses body asks."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    if body.get("previous_response_id") is not None:
        raise InvalidRequest(
            "edgeway does not keep responses, so previous_response_id cannot be followed; send the whole "
            "conversation in 'input'.",
            param="previous_response_id",
            code="unsupported_parameter",
        )
    messages: list[dict[str, Any]] = []
    if body.get("instructions") is not None:
        if not isinstance(body["instructions"], str):
            raise InvalidRequest("'instructions' must be a string.", param="instructions")
        messages.append({"role": "system", "content": body["instructions"]})
    given = body.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list) and given:
        for i, item in enumerate(given):
            _add_item(messages, item, f"input[{i}]")
    else:
        raise InvalidRequest("'input' must be a string or a non-empty array of items.", param="input")
    out: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if body.get("max_output_tokens") is not None:
        out["max_tokens"] = body["max_output_tokens"]
    for key in ("temperature", "top_p", "stream", "user", "parallel_tool_calls"):
        if key in body:
            out[key] = body[key]
    if body.get("stream"):
        out["stream_options"] = {"include_usage": True}
    if body.get("tools"):
        out["tools"] = [_tool(t, f"tools[{i}]") for i, t in enumerate(_list(body["tools"], "tools"))]
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    text = body.get("text")
    if isinstance(text, dict) and isinstance(text.get("format"), dict):
        response_format = _response_format(text["format"])
        if response_format is not None:
            out["response_format"] = response_format
    return out


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidRequest(f"Invalid type for '{where}': expected an array.", param=where)
    return value


def _add_item(messages: list[dict[str, Any]], item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise InvalidRequest(f"Invalid type for '{where}': expected an object.", param=where)
    kind = item.get("type", "message")
    if kind == "message" or (kind is None and "role" in item):
        messages.append(_message(item, where))
    elif kind == "function_call":
        call = {
            "id": str(item.get("call_id")),
            "type": "function",
            "function": {"name": str(item.get("name")), "arguments": str(item.get("arguments") or "{}")},
        }
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and "tool_calls" in last:
            last["tool_calls"].append(call)  # parallel calls of one turn stay one assistant message
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output)
        messages.append({"role": "tool", "tool_call_id": str(item.get("call_id")), "content": text})
    elif kind == "reasoning":
        return  # a model's earlier reasoning summary: not part of what a chat model reads
    else:
        raise InvalidRequest(f"Unsupported input item type {kind!r} in '{where}'.", param=f"{where}.type")


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in ROLES:
        raise InvalidRequest(
            f"Invalid value for '{where}.role': expected one of {sorted(ROLES)}.", param=f"{where}.role"
        )
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(_list(content, f"{where}.content")):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append({"type": "text", "text": part["refusal"]})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            at = f"{where}.content[{j}]"
            raise InvalidRequest(f"Unsupported content part {kind!r} in '{at}'.", param=f"{at}.type")
    if all(p["type"] == "text" for p in parts):
        return {"role": role, "content": "\n".join(p["text"] for p in parts)}
    return {"role": role, "content": parts}


def _tool(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else None
        raise InvalidRequest(
            f"Only function tools are supported; '{where}' is {kind!r}.",
            param=f"{where}.type",
            code="unsupported_parameter",
        )
    function = {"name": tool.get("name"), "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
    for key in ("description", "strict"):
        if key in tool:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": str(choice.get("name"))}}
    raise InvalidRequest("'tool_choice' must be auto, none, required or a function.", param="tool_choice")


def _response_format(spec: dict[str, Any]) -> dict[str, Any] | None:
    kind = spec.get("type")
    if kind == "json_schema":
        inner = {k: spec[k] for k in ("name", "schema", "strict", "description") if k in spec}
        return {"type": "json_schema", "json_schema": inner}
    if kind == "json_object":
        return {"type": "json_object"}
    return None


# --- the answer --------------------------------------------------------------------------------
class ResponseBuilder:
    """One response's identity and settings, for the whole object and for every stream event."""

    def __init__(self, request_body: dict[str, Any], model: str) -> None:
        self.id = _id("resp")
        self.created = int(time.time())
        self.model = model
        self.request = request_body

    def response(
        self, status: str, output: list[dict[str, Any]], usage: Usage | None, finish: str | None = None
    ) -> dict[str, Any]:
        incomplete = {"reason": "max_output_tokens"} if finish == "length" else None
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": "incomplete" if incomplete and status == "completed" else status,
            "incomplete_details": incomplete,
            "error": None,
            "model": self.model,
            "output": output,
            "instructions": self.request.get("instructions"),
            "max_output_tokens": self.request.get("max_output_tokens"),
            "tools": self.request.get("tools") or [],
            "tool_choice": self.request.get("tool_choice", "auto"),
            "parallel_tool_calls": self.request.get("parallel_tool_calls", True),
            "temperature": self.request.get("temperature"),
            "top_p": self.request.get("top_p"),
            "text": self.request.get("text") or {"format": {"type": "text"}},
            "metadata": self.request.get("metadata") or {},
            "usage": None if usage is None else _usage(usage),
        }

    def whole(self, answer: dict[str, Any], usage: Usage) -> dict[str, Any]:
        choice = (answer.get("choices") or [{}])[0]
        said = choice.get("message") or {}
        output: list[dict[str, Any]] = []
        if said.get("content"):
            output.append(_message_item(_id("msg"), said["content"], "completed"))
        for call in said.get("tool_calls") or []:
            function = call.get("function") or {}
            output.append(
                _call_item(
                    _id("fc"),
                    call.get("id") or _id("call"),
                    function.get("name"),
                    function.get("arguments") or "",
                    "completed",
                )
            )
        return self.response("completed", output, usage, choice.get("finish_reason"))


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [part] if text or status == "completed" else [],
    }


def _call_item(item_id: str, call_id: str, name: Any, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


class ResponseEvents:
    """Chat completion chunks in, Responses stream events out, numbered in sequence."""

    def __init__(self, builder: ResponseBuilder) -> None:
        self._builder = builder
        self._sequence = 0
        self._items: list[dict[str, Any]] = []  # output items, as they are so far
        self._text: dict[str, Any] | None = None  # the message item being written
        self._calls: dict[int, dict[str, Any]] = {}  # a chat tool call's index -> its item
        self._finish: str | None = None

    def _event(self, kind: str, **data: Any) -> Event:
        self._sequence += 1
        return kind, {"type": kind, "sequence_number": self._sequence - 1, **data}

    def start(self) -> list[Event]:
        opened = self._builder.response("in_progress", [], None)
        return [self._event("response.created", response=opened), self._event("response.in_progress", response=opened)]

    def chunk(self, chunk: dict[str, Any]) -> list[Event]:
        events: list[Event] = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                events += self._text_delta(delta["content"])
            for call in delta.get("tool_calls") or []:
                events += self._call_delta(call)
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return events

    def _text_delta(self, text: str) -> list[Event]:
        events: list[Event] = []
        if self._text is None:
            self._text = _message_item(_id("msg"), "", "in_progress")
            self._items.append(self._text)
            index = len(self._items) - 1
            events.append(
                self._event("response.output_item.added", output_index=index, item=dict(self._text, content=[]))
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                self._event(
                    "response.content_part.added",
                    item_id=self._text["id"],
                    output_index=index,
                    content_index=0,
                    part=dict(part),  # as it starts, empty: the text then grows on the item's own part
                )
            )
            self._text["content"] = [part]
        self._text["content"][0]["text"] += text
        events.append(
            self._event(
                "response.output_text.delta",
                item_id=self._text["id"],
                output_index=self._items.index(self._text),
                content_index=0,
                delta=text,
            )
        )
        return events

    def _call_delta(self, call: dict[str, Any]) -> list[Event]:
        events: list[Event] = []
        position = call.get("index", 0)
        function = call.get("function") or {}
        item = self._calls.get(position)
        if item is None:
            item = _call_item(_id("fc"), call.get("id") or _id("call"), function.get("name"), "", "in_progress")
            self._calls[position] = item
            self._items.append(item)
            events.append(self._event("response.output_item.added", output_index=len(self._items) - 1, item=dict(item)))
        if function.get("arguments"):
            item["arguments"] += function["arguments"]
            events.append(
                self._event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=self._items.index(item),
                    delta=function["arguments"],
                )
            )
        return events

    def end(self, usage: Usage) -> list[Event]:
        events: list[Event] = []
        for index, item in enumerate(self._items):
            item["status"] = "completed"
            if item["type"] == "message":
                part = item["content"][0]
                events.append(
                    self._event(
                        "response.output_text.done",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        text=part["text"],
                    )
                )
                events.append(
                    self._event(
                        "response.content_part.done", item_id=item["id"], output_index=index, content_index=0, part=part
                    )
                )
            else:
                events.append(
                    self._event(
                        "response.function_call_arguments.done",
                        item_id=item["id"],
                        output_index=index,
                        arguments=item["arguments"],
                    )
                )
            events.append(self._event("response.output_item.done", output_index=index, item=item))
        final = self._builder.response("completed", self._items, usage, self._finish)
        kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        return events + [self._event(kind, response=final)]

    def error(self, exc: EdgewayError) -> Event:
        """The Responses `error` event, carrying the error object too (which the OpenAI SDKs
        look for to raise it as an APIError)."""
        return self._event("error", code=exc.code, message=exc.message, param=exc.param, error=exc.body()["error"])


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
