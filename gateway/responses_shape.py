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
            _add_item(messages, item, f"input[{i}]", ToolNames.of(body))
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
    names = ToolNames.of(body)
    if body.get("tools"):
        functions, search = _tools(_list(body["tools"], "tools"), names)
        if functions:
            out["tools"] = functions
        if search is not None:
            out["web_search_options"] = search
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"], names)
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


def _add_item(messages: list[dict[str, Any]], item: Any, where: str, names: ToolNames) -> None:
    if not isinstance(item, dict):
        raise InvalidRequest(f"Invalid type for '{where}': expected an object.", param=where)
    kind = item.get("type", "message")
    if kind == "message" or (kind is None and "role" in item):
        messages.append(_message(item, where))
    elif kind == "function_call":
        call = {
            "id": str(item.get("call_id")),
            "type": "function",
            "function": {
                "name": names.flat(str(item.get("name")), item.get("namespace")),
                "arguments": str(item.get("arguments") or "{}"),
            },
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


# Hosted web search, which a Chat Completions model that searches takes as `web_search_options`.
WEB_SEARCH_TOOLS = frozenset(
    {"web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"}
)


class ToolNames:
    """The function names a chat model sees for a Responses request's tools, both ways.

    A `namespace` tool (a group of function tools, as Codex CLI sends its sub-agent tools) is
    flattened into its functions: each keeps its own name where no other tool has it, else is
    called `namespace__name`, and a call of it is given back as its name and `namespace`."""

    def __init__(self, grouped: dict[tuple[str | None, str], str]) -> None:
        self._flat = grouped  # (namespace, name) -> the flat name
        self._grouped = {flat: key for key, flat in grouped.items()}

    @classmethod
    def of(cls, body: dict[str, Any]) -> ToolNames:
        given = body.get("tools")
        tools: list[Any] = given if isinstance(given, list) else []
        found: list[tuple[str | None, str]] = []
        for tool in tools:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "function" and isinstance(tool.get("name"), str):
                found.append((None, tool["name"]))
            elif tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
                group = str(tool.get("name"))
                inner = [t for t in tool["tools"] if isinstance(t, dict) and isinstance(t.get("name"), str)]
                found += [(group, t["name"]) for t in inner]
        counts: dict[str, int] = {}
        for _, name in found:
            counts[name] = counts.get(name, 0) + 1
        return cls({(group, name): name if counts[name] == 1 or group is None else f"{group}__{name}"
                    for group, name in found})  # fmt: skip

    def flat(self, name: str, namespace: Any = None) -> str:
        return self._flat.get((namespace if isinstance(namespace, str) else None, name), name)

    def grouped(self, flat: Any) -> tuple[str | None, Any]:
        """(namespace, name) of a function a chat model called."""
        return self._grouped.get(flat, (None, flat)) if isinstance(flat, str) else (None, flat)


def _tools(tools: list[Any], names: ToolNames) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The Chat Completions function tools for these Responses tools, and `web_search_options`
    where hosted web search is among them (a model that cannot search then refuses the request by
    that field, or a cloud model that can takes it)."""
    functions: list[dict[str, Any]] = []
    search: dict[str, Any] | None = None
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == "function":
            functions.append(_function(tool, names.flat(str(tool.get("name"))), ""))
        elif kind == "namespace":
            inner = _list(tool.get("tools"), f"{where}.tools")
            group = str(tool.get("name"))
            about = f"({group}: {tool['description']}) " if isinstance(tool.get("description"), str) else ""
            for j, function in enumerate(inner):
                if not isinstance(function, dict) or function.get("type") != "function":
                    raise InvalidRequest(
                        f"Only function tools are supported in a namespace; '{where}.tools[{j}]' is "
                        f"{function.get('type') if isinstance(function, dict) else None!r}.",
                        param=f"{where}.tools[{j}].type",
                        code="unsupported_parameter",
                    )
                functions.append(_function(function, names.flat(str(function.get("name")), group), about))
        elif kind in WEB_SEARCH_TOOLS:
            search = {k: tool[k] for k in ("search_context_size",) if k in tool}
            location = tool.get("user_location")
            if isinstance(location, dict):
                approximate = {k: v for k, v in location.items() if k != "type"}
                search["user_location"] = {"type": "approximate", "approximate": approximate}
        else:
            raise InvalidRequest(
                f"Only function, namespace and web_search tools are supported; '{where}' is {kind!r}.",
                param=f"{where}.type",
                code="unsupported_parameter",
            )
    return functions, search


def _function(tool: dict[str, Any], name: str, about: str) -> dict[str, Any]:
    function = {"name": name, "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
    if "description" in tool or about:
        function["description"] = about + str(tool.get("description") or "")
    if "strict" in tool:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any, names: ToolNames) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = names.flat(str(choice.get("name")), choice.get("namespace"))
        return {"type": "function", "function": {"name": name}}
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
        self.names = ToolNames.of(request_body)

    def call_item(self, item_id: str, call_id: str, flat_name: Any, arguments: str, status: str) -> dict[str, Any]:
        """A function_call item for a call the chat model made, under its own name and namespace."""
        namespace, name = self.names.grouped(flat_name)
        item = {
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": status,
        }
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
            item = self._builder.call_item(
                _id("fc"), call.get("id") or _id("call"), function.get("name"), "", "in_progress"
            )
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
