"""A Responses API answer from a Chat Completions one: the response object, whole, or the
Responses stream of semantic events from chat completion chunks. The request's side is
`gateway.responses_request`.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from gateway.responses_request import ToolNames
from router.answer import Usage
from router.errors import EdgewayError

Event = tuple[str, dict[str, Any]]


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


class ResponseBuilder:
    """One response's identity and settings, for the whole object and for every stream event."""

    def __init__(self, request_body: dict[str, Any], model: str) -> None:
        self.id = _id("resp")
        self.created = int(time.time())
        self.model = model
        self.request = request_body
        self.names = ToolNames.of(request_body)

    def call_item(self, item_id: str, call_id: str, flat_name: Any, arguments: str, status: str) -> dict[str, Any]:
        """A function_call item for a call the chat model made, under its own name and namespace;
        a custom_tool_call item, with its `input`, for a custom tool's."""
        namespace, name = self.names.grouped(flat_name)
        item: dict[str, Any] = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
                                "arguments": arguments, "status": status}  # fmt: skip
        if self.names.custom(flat_name):
            item = {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": name,
                    "input": custom_input(arguments), "status": status}  # fmt: skip
        if namespace is not None:
            item["namespace"] = namespace
        return item

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
                self.call_item(
                    _id("fc"),
                    call.get("id") or _id("call"),
                    function.get("name"),
                    function.get("arguments") or "",
                    "completed",
                )
            )
        return self.response("completed", output, usage, choice.get("finish_reason"))


def custom_input(arguments: str) -> str:
    """A custom tool's input, from the arguments a chat model wrote for it (`{"input": ...}`)."""
    try:
        given = json.loads(arguments)
    except json.JSONDecodeError:
        return arguments
    return given["input"] if isinstance(given, dict) and isinstance(given.get("input"), str) else arguments


def _usage(usage: Usage) -> dict[str, Any]:
    return usage.as_responses()


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [part] if text or status == "completed" else [],
    }


class ResponseEvents:
    """Chat completion chunks in, Responses stream events out, numbered in sequence."""

    def __init__(self, builder: ResponseBuilder) -> None:
        self._builder = builder
        self._sequence = 0
        self._items: list[dict[str, Any]] = []  # output items, as they are so far
        self._text: dict[str, Any] | None = None  # the message item being written
        self._calls: dict[int, dict[str, Any]] = {}  # a chat tool call's index -> its item
        self._custom: dict[int, str] = {}  # a custom tool call's arguments as the chat model writes them
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
            item = self._builder.call_item(
                _id("fc"), call.get("id") or _id("call"), function.get("name"), "", "in_progress"
            )
            self._calls[position] = item
            self._items.append(item)
            events.append(self._event("response.output_item.added", output_index=len(self._items) - 1, item=dict(item)))
        if function.get("arguments") and item["type"] == "custom_tool_call":
            # the chat model writes {"input": ...}: the input is known once the call is whole
            self._custom[position] = self._custom.get(position, "") + function["arguments"]
        elif function.get("arguments"):
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
            elif item["type"] == "custom_tool_call":
                position = next(p for p, called in self._calls.items() if called is item)
                item["input"] = custom_input(self._custom.get(position, ""))
                events.append(
                    self._event(
                        "response.custom_tool_call_input.done",
                        item_id=item["id"],
                        output_index=index,
                        input=item["input"],
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
