"""A provider that caches prompts and bills as Anthropic and OpenAI document it, on loopback: what an
agent session costs is what its vendor would charge for it, direct or through the gateway.

- Anthropic's Messages (`POST /v1/messages`): explicit caching. The prompt is its blocks in order
  (tools, then system, then each message's content); a block with `cache_control` (at most 4, or a
  top-level `cache_control` on the last block) is a breakpoint. A request reads the longest prefix
  a cached entry holds, ending at a breakpoint or up to 20 blocks before one; it writes the prefix
  up to each breakpoint past that; a prefix under the model's minimum (1,024 tokens) is never
  cached. An entry lives 5 minutes (`ttl: "1h"`: an hour) from its last read. Billed: the uncached
  tail at the input price, writes at 1.25x (an hour's at 2x), reads at 0.1x, the answer at the
  output price; `usage` reports `input_tokens` (the tail), `cache_creation_input_tokens`,
  `cache_read_input_tokens` and `cache_creation`'s split by lifetime.
- OpenAI's Responses (`POST /v1/responses`) and Chat Completions: automatic caching. A prompt of
  1,024 tokens or more reads the longest prefix it shares with an earlier prompt of the same model
  and `prompt_cache_key` in the last 10 minutes, counted in steps of 128 tokens past the first
  1,024; nothing is charged for writing. Billed: cached tokens at the model's cached-input price.

Serve it with `gateway.bench.ports.LoopbackServer(provider.app())`. Tokens are counted as a quarter
of a block's JSON characters (a fixed rule, the same for both
runs of a comparison). Every request is kept with its usage and its price (`Billed`). An answer is
a short text, or the tool call `script` asks for (`AgentScript`, for an agent driven for real).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ANSWER = "Done: the change is made and the tests pass."
MIN_CACHED = 1024  # tokens: a shorter prefix is never cached (Anthropic's and OpenAI's minimum)
OPENAI_STEP = 128  # OpenAI's cache hits grow in steps of this many tokens past the minimum
LOOKBACK = 20  # blocks before a breakpoint where Anthropic's cache still finds a hit
MAX_BREAKPOINTS = 4
TTL_S = {"5m": 300.0, "1h": 3600.0}
OPENAI_TTL_S = 600.0


@dataclass(frozen=True)
class Rates:
    """USD per 1M tokens, and the cache's multiples of the input price."""

    input: float
    output: float
    read: float = 0.1
    write: float = 1.0  # OpenAI's writes cost nothing extra; Anthropic's 5-minute ones 1.25x
    write_1h: float = 1.0


ANTHROPIC_RATES = Rates(3.0, 15.0, read=0.1, write=1.25, write_1h=2.0)  # Claude Sonnet's list price
OPENAI_RATES = Rates(1.25, 10.0, read=0.1)  # GPT-5's


@dataclass
class Billed:
    """One request as the provider saw and charged it."""

    path: str
    model: str
    input_tokens: int  # the prompt's tokens neither read from nor written to the cache
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int
    output_tokens: int
    usd: float
    body: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class AgentScript:
    """An agent's task as the provider plays it: a call of `tool` with `arguments` while the
    conversation holds no tool result, then `answer`."""

    tool: str
    arguments: dict[str, Any]
    answer: str = ANSWER


def tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) // 4)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class CachingProvider:
    rates: dict[str, Rates] = field(default_factory=dict)  # by the model id requests name; else by API
    script: AgentScript | None = None
    billed: list[Billed] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic
    _anthropic: dict[str, tuple[float, float]] = field(default_factory=dict)  # prefix -> (expires, ttl)
    _openai: dict[tuple[str, str], list[tuple[float, list[str], list[int]]]] = field(default_factory=dict)

    def reset(self) -> None:
        self.billed.clear()
        self._anthropic.clear()
        self._openai.clear()

    def bill(self) -> float:
        return sum(b.usd for b in self.billed)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )

    # --- Anthropic's explicit cache ---------------------------------------------------------
    def _blocks(self, body: dict[str, Any]) -> tuple[list[Any], list[tuple[int, str]]]:
        """The prompt's blocks in cache order (without their `cache_control`), and its breakpoints:
        each block's index and its lifetime."""
        blocks: list[Any] = []
        marks: list[tuple[int, str]] = []

        def add(block: Any) -> None:
            control = block.get("cache_control") if isinstance(block, dict) else None
            blocks.append({k: v for k, v in block.items() if k != "cache_control"} if control else block)
            if isinstance(control, dict):
                marks.append((len(blocks) - 1, str(control.get("ttl", "5m"))))

        for tool in body.get("tools") or []:
            add(tool)
        system = body.get("system")
        for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
            add(block)
        for message in body.get("messages") or []:
            content = message.get("content")
            for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
                add({**block, "role": message.get("role")})
        if isinstance(body.get("cache_control"), dict) and blocks:  # automatic: the last block
            marks.append((len(blocks) - 1, str(body["cache_control"].get("ttl", "5m"))))
        return blocks, marks

    def _anthropic_usage(self, body: dict[str, Any]) -> dict[str, Any] | None:
        blocks, marks = self._blocks(body)
        if len(marks) > MAX_BREAKPOINTS:
            return None
        model, now = str(body.get("model")), self.clock()
        sizes = [tokens(b) for b in blocks]
        ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
        prefixes = [_digest([model, blocks[: i + 1]]) for i in range(len(blocks))]
        read_to = -1  # the last block of the longest prefix read from the cache
        for mark, _ in marks:
            for i in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                entry = self._anthropic.get(prefixes[i])
                if entry is not None and entry[0] > now and i > read_to:
                    read_to = i
                    break
        if read_to >= 0:  # a read refreshes the entry's lifetime
            lifetime = self._anthropic[prefixes[read_to]][1]
            self._anthropic[prefixes[read_to]] = (now + lifetime, lifetime)
        read = ends[read_to] if read_to >= 0 else 0
        written = written_1h = 0
        last = max((m for m, _ in marks), default=-1)
        for mark, kept in marks:
            if mark > read_to and ends[mark] >= MIN_CACHED:
                lifetime = TTL_S.get(kept, TTL_S["5m"])
                self._anthropic[prefixes[mark]] = (now + lifetime, lifetime)
        if last > read_to and ends[last] >= MIN_CACHED:
            written = ends[last] - read
            hour_marks = [m for m, ttl in marks if ttl == "1h" and m > read_to]
            written_1h = (ends[max(hour_marks)] - read) if hour_marks else 0
        total = ends[-1] if ends else 1
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written - written_1h,
                "ephemeral_1h_input_tokens": written_1h,
            },
        }

    # --- OpenAI's automatic cache -------------------------------------------------------------
    def _openai_cached(self, body: dict[str, Any], segments: list[Any]) -> tuple[int, int]:
        """(prompt tokens, of them cached): the longest prefix, in whole segments, shared with an
        earlier prompt of this model and cache key, in steps of 128 past the minimum."""
        now, key = self.clock(), (str(body.get("model")), str(body.get("prompt_cache_key") or ""))
        digests = [_digest(s) for s in segments]
        sizes = [tokens(s) for s in segments]
        total = sum(sizes)
        shared = 0
        kept = [e for e in self._openai.get(key, []) if e[0] > now]
        for _, earlier, counts in kept:
            n = 0
            while n < min(len(earlier), len(digests)) and earlier[n] == digests[n]:
                n += 1
            shared = max(shared, sum(counts[:n]))
        self._openai[key] = [*kept, (now + OPENAI_TTL_S, digests, sizes)][-64:]
        if total < MIN_CACHED or shared < MIN_CACHED:
            return total, 0
        return total, MIN_CACHED + (shared - MIN_CACHED) // OPENAI_STEP * OPENAI_STEP

    # --- the endpoints ----------------------------------------------------------------------
    def _rates(self, model: str, default: Rates) -> Rates:
        return self.rates.get(model, default)

    def _charge(self, path: str, body: dict[str, Any], usage: tuple[int, int, int, int, int], rates: Rates) -> None:
        uncached, read, written, hour, output = usage
        usd = (
            uncached * rates.input
            + read * rates.input * rates.read
            + (written - hour) * rates.input * rates.write
            + hour * rates.input * rates.write_1h
            + output * rates.output
        ) / 1e6
        self.billed.append(Billed(path, str(body.get("model")), uncached, read, written, hour, output, usd, body))

    def _call(self, body: dict[str, Any], names: set[str], answered: bool) -> tuple[str, dict[str, Any]] | None:
        script = self.script
        if script is None or answered or script.tool not in names:
            return None
        return script.tool, script.arguments

    async def _messages(self, request: Request) -> Response:
        body = json.loads(await request.body())
        usage = self._anthropic_usage(body)
        if usage is None:
            error = {
                "type": "invalid_request_error",
                "message": "A maximum of 4 blocks with cache_control may be provided.",
            }
            return JSONResponse({"type": "error", "error": error}, status_code=400)
        names = {str(t.get("name")) for t in body.get("tools") or []}
        answered = any(
            isinstance(b, dict) and b.get("type") == "tool_result"
            for m in body.get("messages") or []
            for b in (m.get("content") if isinstance(m.get("content"), list) else [])
        )
        call = self._call(body, names, answered)
        text = self.script.answer if self.script is not None and call is None else ANSWER
        output = tokens(call) if call else tokens(text)
        usage["output_tokens"] = output
        hour = usage["cache_creation"]["ephemeral_1h_input_tokens"]
        counted = (
            usage["input_tokens"],
            usage["cache_read_input_tokens"],
            usage["cache_creation_input_tokens"],
            hour,
            output,
        )
        self._charge("/v1/messages", body, counted, self._rates(str(body.get("model")), ANTHROPIC_RATES))
        block: dict[str, Any] = (
            {"type": "tool_use", "id": "toolu_bench", "name": call[0], "input": call[1]}
            if call
            else {"type": "text", "text": text}
        )
        message = {"id": f"msg_{len(self.billed)}", "type": "message", "role": "assistant", "model": body.get("model"),
                   "content": [block], "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None,
                   "usage": usage}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(message)

        async def events() -> AsyncIterator[bytes]:
            started = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
            yield _event("message_start", {"type": "message_start", "message": started})
            opened = {**block, "input": {}} if call else {"type": "text", "text": ""}
            yield _event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opened})
            delta = (
                {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
                if call
                else {"type": "text_delta", "text": text}
            )
            yield _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            yield _event("content_block_stop", {"type": "content_block_stop", "index": 0})
            ended = {"stop_reason": message["stop_reason"], "stop_sequence": None}
            yield _event("message_delta", {"type": "message_delta", "delta": ended, "usage": usage})
            yield _event("message_stop", {"type": "message_stop"})

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _responses(self, request: Request) -> Response:
        body = json.loads(await request.body())
        items = body.get("input") if isinstance(body.get("input"), list) else [body.get("input")]
        segments = [body.get("instructions"), body.get("tools"), *items]
        total, cached = self._openai_cached(body, segments)
        offered = [*(body.get("tools") or [])]
        for given in items:
            if isinstance(given, dict) and given.get("type") == "additional_tools":
                offered += given.get("tools") or []
        names = {str(t.get("name")) for t in _opened(offered)}
        answered = any(isinstance(i, dict) and str(i.get("type")).endswith("call_output") for i in items)
        call = self._call(body, names, answered)
        text = self.script.answer if self.script is not None and call is None else ANSWER
        output = tokens(call) if call else tokens(text)
        self._charge(
            "/v1/responses",
            body,
            (total - cached, cached, 0, 0, output),
            self._rates(str(body.get("model")), OPENAI_RATES),
        )
        custom = call is not None and call[0] in {
            str(t.get("name")) for t in _opened(offered) if t.get("type") == "custom"
        }
        item: dict[str, Any] = {"type": "message", "id": "msg_bench", "role": "assistant", "status": "completed",
                                "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
        if call is not None and custom:  # a custom tool's call: its input is text (`arguments["input"]`)
            item = {"type": "custom_tool_call", "id": "ctc_bench", "call_id": f"call_{len(self.billed)}",
                    "name": call[0], "input": str(call[1].get("input", "")), "status": "completed"}  # fmt: skip
        elif call is not None:
            item = {"type": "function_call", "id": "fc_bench", "call_id": f"call_{len(self.billed)}", "name": call[0],
                    "arguments": json.dumps(call[1]), "status": "completed"}  # fmt: skip
        usage = {"input_tokens": total, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": output,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": total + output}  # fmt: skip
        response = {"id": f"resp_{len(self.billed)}", "object": "response", "created_at": int(time.time()),
                    "status": "completed", "model": body.get("model"), "output": [item], "usage": usage,
                    "error": None, "incomplete_details": None}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(response)

        async def events() -> AsyncIterator[bytes]:
            numbers = iter(range(1_000))

            def sent(kind: str, **data: Any) -> bytes:
                return _event(kind, {"type": kind, "sequence_number": next(numbers), **data})

            opened = {**response, "status": "in_progress", "output": [], "usage": None}
            yield sent("response.created", response=opened)
            yield sent("response.output_item.added", output_index=0, item={**item, "status": "in_progress"})
            if item["type"] == "custom_tool_call":
                yield sent(
                    "response.custom_tool_call_input.delta", item_id="ctc_bench", output_index=0, delta=item["input"]
                )
            elif item["type"] == "function_call":
                yield sent(
                    "response.function_call_arguments.delta",
                    item_id="fc_bench",
                    output_index=0,
                    delta=item["arguments"],
                )
            else:
                yield sent(
                    "response.output_text.delta", item_id="msg_bench", output_index=0, content_index=0, delta=text
                )
            yield sent("response.output_item.done", output_index=0, item=item)
            yield sent("response.completed", response=response)

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        total, cached = self._openai_cached(body, [body.get("tools"), *(body.get("messages") or [])])
        output = tokens(ANSWER)
        self._charge(
            "/v1/chat/completions",
            body,
            (total - cached, cached, 0, 0, output),
            self._rates(str(body.get("model")), OPENAI_RATES),
        )
        usage = {"prompt_tokens": total, "completion_tokens": output, "total_tokens": total + output,
                 "prompt_tokens_details": {"cached_tokens": cached}}  # fmt: skip
        base = {"id": "chatcmpl-bench", "created": int(time.time()), "model": body.get("model")}
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}
            return JSONResponse({**base, "object": "chat.completion", "choices": [choice], "usage": usage})

        async def events() -> AsyncIterator[bytes]:
            chunk = {**base, "object": "chat.completion.chunk"}
            yield _data({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]})
            yield _data({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            yield _data({**chunk, "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def _opened(tools: list[Any]) -> list[dict[str, Any]]:
    """Tools with Responses' namespaces opened."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if isinstance(tool, dict):
            out += _opened(tool.get("tools") or []) if tool.get("type") == "namespace" else [tool]
    return out


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _data(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()
