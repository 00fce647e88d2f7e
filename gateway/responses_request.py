"""A Responses API request in terms of Chat Completions: `input` (a string or items),
`instructions`, function and custom tools and their call and output items, `text.format`,
`max_output_tokens`. The answer's side is `gateway.responses_answer`.

Responses are not stored: `previous_response_id` is refused with a 400 that says to send the
conversation in `input` (nothing of a conversation is kept beyond the configured ledger).
"""

from __future__ import annotations

import json
from typing import Any

from router.errors import InvalidRequest
from router.native import Api, block_type

ROLES = frozenset({"user", "assistant", "system", "developer"})


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
    names = ToolNames.of(body)
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list) and given:
        for i, item in enumerate(given):
            _add_item(messages, item, f"input[{i}]", names)
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
    offered = all_tools(body)
    if offered:
        functions, search = _tools(offered, names)
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


# What of a Responses body its Chat Completions reading carries: input items (those read as no turn
# at all among them), content parts, and tools (hosted web search as `web_search_options`).
_UNREAD_ITEMS = frozenset({"reasoning", "additional_tools"})
_ITEMS = frozenset(
    {"message", "function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output"} | _UNREAD_ITEMS
)
_PARTS = frozenset({"input_text", "output_text", "text", "refusal", "input_image", "input_file"})
_CALLED = frozenset({"function", "custom"})  # tools a chat model calls as functions


class ResponsesCodec:
    """Responses bodies as the router reads them (`router.native.Codec`)."""

    api = Api.RESPONSES

    def chat_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return chat_body(body)

    def capped(self, body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        return {**body, "max_output_tokens": max_tokens}

    def native_only(self, body: dict[str, Any]) -> str | None:
        given, items = body.get("tools"), body.get("input")
        tools: list[Any] = given if isinstance(given, list) else []
        for i, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                continue
            kind = _item_kind(item)
            if kind not in _ITEMS:
                return f"input[{i}] of type {kind!r}"
            if kind == "additional_tools" and isinstance(item.get("tools"), list):
                tools = [*tools, *item["tools"]]
            content = item.get("content") if kind == "message" else item.get("output")
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and block_type(part) not in _PARTS:
                    return f"input[{i}] content part of type {part.get('type')!r}"
        for tool in tools:
            kind = block_type(tool)
            inner = tool.get("tools") if kind == "namespace" and isinstance(tool.get("tools"), list) else [tool]
            for one in inner:
                kind = block_type(one)
                if kind not in _CALLED and kind != "namespace" and kind not in WEB_SEARCH_TOOLS:
                    return f"the {kind!r} tool"
        return None


def _item_kind(item: dict[str, Any]) -> str | None:
    """An input item's kind: a message where it has no type (or none but a role), else its type."""
    if item.get("type") is None:
        return "message" if "type" not in item or "role" in item else None
    return block_type(item)


def all_tools(body: dict[str, Any]) -> list[Any]:
    """The tools a request offers: its `tools`, and those of its `additional_tools` input items
    (where Codex CLI sends its own)."""
    given = body.get("tools")
    if given is not None and not isinstance(given, list):
        raise InvalidRequest("Invalid type for 'tools': expected an array.", param="tools")
    tools = list(given or [])
    items = body.get("input")
    for i, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            tools += _list(item.get("tools"), f"input[{i}].tools")
    return tools


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidRequest(f"Invalid type for '{where}': expected an array.", param=where)
    return value


def _add_item(messages: list[dict[str, Any]], item: Any, where: str, names: ToolNames) -> None:
    if not isinstance(item, dict):
        raise InvalidRequest(f"Invalid type for '{where}': expected an object.", param=where)
    kind = _item_kind(item)
    if kind == "message":
        messages.append(_message(item, where))
    elif kind in ("function_call", "custom_tool_call"):
        name = names.flat(str(item.get("name")), item.get("namespace"))
        # a custom tool's call is a function call of its one `input` string (`_function`)
        said = item.get("arguments") if kind == "function_call" else json.dumps({"input": item.get("input") or ""})
        call = {"id": str(item.get("call_id")), "type": "function",
                "function": {"name": name, "arguments": str(said or "{}")}}  # fmt: skip
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and "tool_calls" in last:
            last["tool_calls"].append(call)  # parallel calls of one turn stay one assistant message
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind in ("function_call_output", "custom_tool_call_output"):
        text, shown = _output(item.get("output"), f"{where}.output")
        messages.append({"role": "tool", "tool_call_id": str(item.get("call_id")), "content": text})
        if shown:  # a tool message holds text only: what the tool showed follows, as the user's
            messages.append({"role": "user", "content": [{"type": "text", "text": "What the tool showed:"}, *shown]})
    elif kind in _UNREAD_ITEMS or kind not in _ITEMS:
        # a model's earlier reasoning (a chat model reads none), tools (read with `tools`); and an
        # item Chat Completions has no place for, which only a Responses provider takes
        # (`ResponsesCodec.native_only`)
        return


def _output(output: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """A tool's output: its text, and the images and files it holds (Codex's `view_image`) as
    Chat Completions content parts."""
    if isinstance(output, str):
        return output, []
    if not isinstance(output, list):
        return json.dumps(output), []
    texts: list[str] = []
    shown: list[dict[str, Any]] = []
    for j, part in enumerate(output):
        for converted in _part(part, f"{where}[{j}]"):
            if converted["type"] == "text":
                texts.append(converted["text"])
            else:
                shown.append(converted)
    return "\n".join(texts), shown


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in ROLES:
        raise InvalidRequest(
            f"Invalid value for '{where}.role': expected one of {sorted(ROLES)}.", param=f"{where}.role"
        )
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    parts = [
        p for j, part in enumerate(_list(content, f"{where}.content")) for p in _part(part, f"{where}.content[{j}]")
    ]
    if all(p["type"] == "text" for p in parts):
        return {"role": role, "content": "\n".join(p["text"] for p in parts)}
    return {"role": role, "content": parts}


def _part(part: Any, where: str) -> list[dict[str, Any]]:
    """A Responses content part as Chat Completions' content parts."""
    given: dict[str, Any] = part if isinstance(part, dict) else {}
    kind = block_type(given)
    if kind in ("input_text", "output_text", "text") and isinstance(given.get("text"), str):
        return [{"type": "text", "text": given["text"]}]
    if kind == "refusal" and isinstance(given.get("refusal"), str):
        return [{"type": "text", "text": given["refusal"]}]
    if kind == "input_image" and isinstance(given.get("image_url"), str):
        image: dict[str, Any] = {"url": given["image_url"]}
        if given.get("detail") in ("low", "high", "auto"):
            image["detail"] = given["detail"]
        return [{"type": "image_url", "image_url": image}]
    if kind == "input_file":
        fields = {k: given[k] for k in ("file_data", "file_id", "filename") if isinstance(given.get(k), str)}
        return [{"type": "file", "file": fields}]
    if kind in _PARTS:
        raise InvalidRequest(f"Invalid content part {kind!r} in '{where}': its value is missing.", param=where)
    return []  # a part Chat Completions has not: only a Responses provider takes it (`native_only`)


# Hosted web search, which a Chat Completions model that searches takes as `web_search_options`.
WEB_SEARCH_TOOLS = frozenset(
    {"web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"}
)


class ToolNames:
    """The function names a chat model sees for a Responses request's tools, both ways.

    A `namespace` tool (a group of function tools, as Codex CLI sends its sub-agent tools) is
    flattened into its functions: each keeps its own name where no other tool has it, else is
    called `namespace__name`, and a call of it is given back as its name and `namespace`."""

    def __init__(self, grouped: dict[tuple[str | None, str], str], custom: frozenset[str] = frozenset()) -> None:
        self._flat = grouped  # (namespace, name) -> the flat name
        self._grouped = {flat: key for key, flat in grouped.items()}
        self._custom = custom  # the flat names of custom tools

    def __contains__(self, flat: str) -> bool:
        return flat in self._grouped

    @classmethod
    def of(cls, body: dict[str, Any]) -> ToolNames:
        try:
            tools = all_tools(body)
        except InvalidRequest:
            tools = []  # (refused where the request is read)
        found: list[tuple[str | None, str]] = []
        custom: set[tuple[str | None, str]] = set()
        for tool in tools:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") in ("function", "custom") and isinstance(tool.get("name"), str):
                found.append((None, tool["name"]))
                if tool["type"] == "custom":
                    custom.add((None, tool["name"]))
            elif tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
                group = str(tool.get("name"))
                inner = [t for t in tool["tools"] if isinstance(t, dict) and isinstance(t.get("name"), str)]
                found += [(group, t["name"]) for t in inner]
                custom |= {(group, t["name"]) for t in inner if t.get("type") == "custom"}
        counts: dict[str, int] = {}
        for _, name in found:
            counts[name] = counts.get(name, 0) + 1
        flat = {(group, name): name if counts[name] == 1 or group is None else f"{group}__{name}"
                for group, name in found}  # fmt: skip
        return cls(flat, frozenset(flat[key] for key in custom))

    def custom(self, flat: Any) -> bool:
        """Whether the function a chat model called is a custom tool (its call: `custom_tool_call`)."""
        return flat in self._custom

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
        kind = block_type(tool)
        if kind in ("function", "custom"):
            functions.append(_function(tool, names.flat(str(tool.get("name"))), ""))
        elif kind == "namespace":
            inner = _list(tool.get("tools"), f"{where}.tools")
            group = str(tool.get("name"))
            about = f"({group}: {tool['description']}) " if isinstance(tool.get("description"), str) else ""
            for function in inner:
                if block_type(function) in _CALLED:
                    functions.append(_function(function, names.flat(str(function.get("name")), group), about))
        elif kind in WEB_SEARCH_TOOLS:
            search = {k: tool[k] for k in ("search_context_size",) if k in tool}
            location = tool.get("user_location")
            if isinstance(location, dict):
                approximate = {k: v for k, v in location.items() if k != "type"}
                search["user_location"] = {"type": "approximate", "approximate": approximate}
        # any other (a hosted tool but search): only a Responses provider takes it (`native_only`)
    return functions, search


def _function(tool: dict[str, Any], name: str, about: str) -> dict[str, Any]:
    """A function or custom tool as a Chat Completions function. A custom tool takes free text (a
    grammar's, where it names one): a function of one string, `input`, its grammar in its
    description."""
    if tool.get("type") == "custom":
        parameters: Any = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
        grammar: dict[str, Any] = tool["format"] if isinstance(tool.get("format"), dict) else {}
        definition = grammar.get("definition")
        if isinstance(definition, str):
            about += f"(Its input is text in this {grammar.get('syntax', '')} grammar: {definition}) "
    else:
        parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    function = {"name": name, "parameters": parameters}
    if "description" in tool or about:
        function["description"] = about + str(tool.get("description") or "")
    if isinstance(tool.get("strict"), bool):  # (Codex sends "false", a string, which no chat model takes)
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
