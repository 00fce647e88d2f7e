"""Function calling on the edge: OpenAI `tools` as a prompt, a grammar and a parsed answer.

A local model that was never trained on tool calls still calls them correctly when sampling is
held to a grammar: the answer is `{"name": <a tool>, "arguments": <JSON that matches its
parameters>}`, which is turned into `tool_calls` with `finish_reason: tool_calls`. The tools are
described to the model in a system message; `tool_choice` picks the grammar: `required` (or a
named function) must call, `auto` may answer in prose instead (anything that does not open with
`{`), and `none` never gets here (the request then needs no tools).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from edge_runtime.grammar import GrammarError, for_grammar, rewritten_gbnf, schema_grammar
from router.answer import ChunkStream, Usage
from router.errors import InvalidRequest
from router.request import ChatRequest

INSTRUCTIONS = (
    "You can call functions. To call one, answer with only a JSON object of the form "
    '{"name": <function name>, "arguments": {<its arguments>}}. The functions:\n'
)
_ROOT = re.compile(r"^root\s*::=", re.M)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]


def tools_of(body: dict[str, Any]) -> list[Tool]:
    """The request's function tools (`tools`, or the older `functions`)."""
    found = []
    listed = body.get("tools") or [{"type": "function", "function": f} for f in body.get("functions") or []]
    for i, tool in enumerate(listed):
        function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise InvalidRequest(
                "The edge model calls function tools only: each needs a function with a name.",
                param=f"tools[{i}]",
                code="unsupported_parameter",
            )
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        found.append(Tool(function["name"], str(function.get("description") or ""), parameters))
    return found


def chosen(body: dict[str, Any], tools: list[Tool]) -> tuple[list[Tool], bool]:
    """The tools the answer may call, and whether it must call one."""
    choice = body.get("tool_choice", body.get("function_call", "auto"))
    if choice in ("auto", None):
        return tools, False
    if choice == "required":
        return tools, True
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if isinstance(choice, dict) and name is None:
        name = choice.get("name")  # the older function_call: {"name": ...}
    named = [t for t in tools if t.name == name]
    if not named:
        raise InvalidRequest(f"tool_choice names {name!r}, which is not one of the tools given.", param="tool_choice")
    return named, True


@dataclass(frozen=True)
class ToolGrammar:
    """The grammar of a call of one of the tools (or prose), and the check each tool's arguments
    must pass after sampling where its schema says more than a grammar holds."""

    gbnf: str
    checks: dict[str, Callable[[Any], str | None]]
    tools: tuple[Tool, ...]

    def of(self, name: str) -> ToolGrammar:
        """The grammar of a call of the tool `name` alone: what a call whose name already went
        out is sampled again under."""
        return grammar([t for t in self.tools if t.name == name], required=True)

    def check(self, text: str) -> str | None:
        """What is wrong with the call the model wrote (None: a sound call, or prose)."""
        if not text.startswith("{"):
            return None
        try:
            call = json.loads(text)
        except json.JSONDecodeError:
            return None  # cut by max_tokens: reported as cut, not checked
        check = self.checks.get(call.get("name"))
        problem = check(call.get("arguments")) if check is not None else None
        return f"the arguments of {call.get('name')}: {problem}" if problem else None


def grammar(tools: list[Tool], required: bool) -> ToolGrammar:
    """GBNF for a call of one of `tools` (or, unless `required`, prose that does not open with `{`)."""
    calls, checks = [], {}
    for i, tool in enumerate(tools):
        try:
            parameters, exact = for_grammar(tool.parameters)
            if not exact:
                made = schema_grammar(tool.parameters)
                assert made.check is not None
                checks[tool.name] = made.check
        except GrammarError as exc:
            raise InvalidRequest(
                f"The parameters of tool {tool.name!r}: {exc}.", param=f"tools[{i}]", code="invalid_json_schema"
            ) from None
        calls.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    schema = calls[0] if len(calls) == 1 else {"anyOf": calls}
    try:
        call = rewritten_gbnf(schema)
    except GrammarError as exc:
        raise InvalidRequest(f"A tool's parameters: {exc}.", param="tools", code="invalid_json_schema") from None
    if not required:
        call = _ROOT.sub("call ::=", call, count=1) + "\nroot ::= call | prose\nprose ::= [^{] .*\n"
    return ToolGrammar(call, checks, tuple(tools))


def messages(request: ChatRequest, tools: list[Tool]) -> list[dict[str, str]]:
    """The conversation as the edge's chat template takes it: the tools described first, earlier
    calls written as the JSON the model would have written, tool results as `tool` turns."""
    described = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in tools
    )
    out = [{"role": "system", "content": INSTRUCTIONS + described}]
    for message in request.messages:
        text = request.text_of(message)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            text += json.dumps({"name": function.get("name"), "arguments": _arguments(function.get("arguments"))})
        role = message["role"]
        out.append({"role": "system" if role == "developer" else role, "content": text})
    return out


def _arguments(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return raw


# What the grammar writes first: the name, then the arguments (`_cut_call` reads a call cut short).
_NAME = re.compile(r'^\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"?')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')


def answer(text: str, finish_reason: str | None) -> tuple[dict[str, Any], str | None]:
    """The assistant message for what the model wrote, and the finish reason to report."""
    if not text.startswith("{"):
        return {"role": "assistant", "content": text, "refusal": None}, finish_reason
    try:
        call = json.loads(text)
    except json.JSONDecodeError:  # cut by max_tokens mid-call: the call so far, said to be cut
        return _message(*_cut_call(text)), "length"
    return _message(call["name"], json.dumps(call["arguments"])), "tool_calls"


def _message(name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    tool_call = {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call], "refusal": None}


def _cut_call(text: str) -> tuple[str, str]:
    """The name and the arguments' JSON text generated before the cut, as OpenAI reports a call
    that `max_tokens` ended: the grammar's `{"name": ..., "arguments": ...}` wrapper is ours, never
    the client's to see."""
    named = _NAME.match(text)
    name = ""
    if named:
        try:
            name = json.loads(f'"{named.group(1)}"')
        except ValueError:  # cut inside an escape
            name = named.group(1)
    opened = _ARGUMENTS.search(text, named.end() if named else 0)
    return name, text[opened.end() :].rstrip() if opened else ""


_NAMED = re.compile(r'^\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*(?=\S)')  # (once they begin)


@dataclass(frozen=True)
class Settled:
    """A call that passed its tool's check: its text (the envelope the grammar wrote, sampled
    again where the first broke the schema), its finish reason, and the tokens it took."""

    text: str
    finish_reason: str | None
    completion_tokens: int | None = None  # None: the streamed generation's own


# What a held call is settled by: given the tool's name and the call as written, the call that
# passes its check (perhaps sampled again under that tool's grammar alone), or `InvalidOutput`.
Settle = Callable[[str, str], Awaitable[Settled]]


class CallStream:
    """One edge generation's stream, where the answer may be a call: the grammar's envelope read
    as the tokens come, and the call streamed as OpenAI streams one (a first delta with its id and
    name, then its arguments piece by piece, `finish_reason: tool_calls`), so that clients that
    build an object as it streams (instructor's partials, a tool's streamed input) see it grow.
    Prose (`tool_choice: auto`, an answer that does not open with `{`) streams as it is. A call
    cut by max_tokens ends with what was written of its arguments and `finish_reason: length`.

    A tool whose schema says more than its grammar holds (`held`: a number's bounds, a format) is
    checked once its call is whole: its name goes out as soon as it is written, its arguments once
    `settle` passes them. So a client sees its first byte when the model writes its first token,
    prose streams at once, and what goes out of a call is never taken back: a call sampled again
    is held to the tool already named."""

    def __init__(self, stream: ChunkStream, held: frozenset[str] = frozenset(), settle: Settle | None = None) -> None:
        self._stream = stream
        self._held, self._settle = held, settle
        self._settled_tokens: int | None = None

    @property
    def usage(self) -> Usage:
        usage = self._stream.usage
        if self._settled_tokens is None:
            return usage
        return replace(usage, completion_tokens=self._settled_tokens)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        opening: dict[str, Any] | None = None
        call: _Envelope | None = None
        prose = False
        withheld: list[str] | None = None  # a held call's arguments, until they pass
        async for chunk in self._stream:
            choice = chunk["choices"][0]
            delta, finish = choice["delta"], choice["finish_reason"]
            if opening is None and not prose and call is None and "role" in delta:
                opening = chunk  # sent once the answer shows what it is
                continue
            piece = delta.get("content") or ""
            if not prose and call is None and (piece or finish):
                prose = not piece.startswith("{")
                if opening is not None:  # a call's deltas carry no content at all, as OpenAI sends them
                    said = {"role": "assistant", "content": "" if prose else None}
                    yield _with(opening, said, None)
                if not prose:
                    call = _Envelope()
            if prose or call is None:
                yield chunk
                continue
            for part in call.read(piece, finish is not None):
                if withheld is None and call.name in self._held and self._settle is not None:
                    withheld = []
                if withheld is not None and "name" not in part["function"]:
                    withheld.append(part["function"]["arguments"])
                    continue
                yield _with(chunk, {"tool_calls": [part]}, None)
            if finish is None:
                continue
            if withheld is not None and finish != "length":  # whole: checked before it goes out
                assert self._settle is not None and call.name is not None
                settled = await self._settle(call.name, call.text)
                if settled.text != call.text:
                    self._settled_tokens = settled.completion_tokens
                    again = _Envelope()
                    withheld = [s["function"]["arguments"] for s in again.read(settled.text, True)[1:]]
                    call, finish = again, settled.finish_reason
            if withheld:
                yield _with(chunk, {"tool_calls": [{"index": 0, "function": {"arguments": "".join(withheld)}}]}, None)
            yield _with(chunk, {}, "tool_calls" if call.ended else finish)


def _with(chunk: dict[str, Any], delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    choice = {**chunk["choices"][0], "delta": delta, "finish_reason": finish, "logprobs": None}
    return {**chunk, "choices": [choice]}


class _Envelope:
    """The grammar's `{"name": ..., "arguments": ...}` as it is written: the name once it is whole,
    then the arguments' JSON text up to where its value ends (never the envelope's own brace)."""

    def __init__(self) -> None:
        self.text = ""
        self.name: str | None = None
        self._end: int | None = None  # where the arguments' value ends, once it has
        self._start = 0  # where the arguments' text begins
        self._sent = 0  # of it, what went out
        self._depth = 0
        self._in_string = self._escaped = False
        self._scanned = 0

    def read(self, piece: str, last: bool) -> list[dict[str, Any]]:
        self.text += piece
        out: list[dict[str, Any]] = []
        if self.name is None:
            named = _NAMED.match(self.text)
            if named is None and not last:
                return out
            if named is not None:
                self.name, self._start = json.loads(f'"{named.group(1)}"'), named.end()
            else:  # cut before the arguments began
                self.name, arguments = _cut_call(self.text)
                self._start = len(self.text) - len(arguments)
            self._scanned = self._start
            first = {"name": self.name, "arguments": ""}
            out.append({"index": 0, "id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": first})
        end = self._scan()
        if end is None and last:  # cut short (or a value that is no object): all but the envelope's brace
            end = len(self.text.rstrip())
            if _parses(self.text):
                end = len(self.text.rstrip()[:-1].rstrip())
        upto = end if end is not None else len(self.text)
        if upto > self._start + self._sent:
            out.append({"index": 0, "function": {"arguments": self.text[self._start + self._sent : upto]}})
            self._sent = upto - self._start
        return out

    @property
    def ended(self) -> bool:
        return self._end is not None

    def _scan(self) -> int | None:
        """Where the arguments' value ends (an object or array: its closing bracket), if it has."""
        if self._end is not None:
            return self._end
        text = self.text
        for i in range(self._scanned, len(text)):
            c = text[i]
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif c == "\\":
                    self._escaped = True
                elif c == '"':
                    self._in_string = False
            elif c == '"':
                self._in_string = True
            elif c in "{[":
                self._depth += 1
            elif c in "}]":
                self._depth -= 1
                if self._depth == 0:
                    self._end = i + 1
                    return self._end
        self._scanned = len(text)
        return None


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True
