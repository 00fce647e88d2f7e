"""A fake cloud provider: a real HTTP server on loopback speaking two wire protocols.

- OpenAI Chat Completions: `POST /v1/chat/completions` (streamed and not), `GET /v1/models`.
- OpenAI Responses: `POST /v1/responses` (streamed and not): what an OpenAI model receives a
  Responses request in, as the client sent it.
- Anthropic Messages: `POST /v1/messages` (streamed and not): a Messages request as the client sent
  it, and any other request to an Anthropic model as LiteLLM translates it.
- OpenAI's Batch API: `POST /v1/files`, `POST /v1/batches`, `GET /v1/batches/{id}`,
  `POST /v1/batches/{id}/cancel`, `GET /v1/files/{id}/content`. A batch is answered at once, line
  by line as the chat endpoint would, unless `hold_batches` keeps it in progress until
  `release_batches()`; `batch_line_status` makes chosen lines fail with a status.
- Anthropic's Message Batches: `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
  `POST /v1/messages/batches/{id}/cancel`, `GET /v1/messages/batches/{id}/results`, held and
  failed the same way.

Latency, token rate and faults are set per server (`FakeUpstream.latency_s`, `.tokens_per_s`)
or queued per request (`FakeUpstream.fail_next(...)`). Every request is recorded with its body
and size, which is how tests prove that a private prompt never reached the cloud.

Run it alone for benchmarks: `python -m tests.fake_upstream --port 9000`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.bench.ports import LoopbackServer


@dataclass
class Fault:
    """What goes wrong with one request."""

    status: int | None = None  # answer with this HTTP error status
    message: str = "injected failure"
    stall_s: float = 0.0  # wait this long before the first byte
    drop_after_chunks: int | None = None  # stream this many chunks, then break the connection
    stall_after_chunks: int | None = None  # stream this many chunks, then hang for stall_s
    # Garbage, as a broken provider sends it:
    body: bytes | None = None  # answer 200 with exactly these bytes, whole or to a stream request
    content_type: str = "application/json"  # of `body`
    usage: Any = "as counted"  # anything else replaces the usage object, whole and streamed
    event_after_chunks: tuple[int, bytes] | None = None  # in a stream: after N chunks, `data: <bytes>`


@dataclass(frozen=True)
class AgentScript:
    """An agent's task as a provider plays it: while the conversation holds fewer than `calls` tool
    results, call the tool named `tool` (when the request offers it) with `arguments`; once it
    holds them, answer `answer`, its whitespace kept. A request that offers no such tool (an
    agent's side requests: a title, a summary) gets the plain answer. With no `tool` (an agent that
    edits by what it writes, as aider does), every request gets `answer`."""

    tool: str | None
    arguments: dict[str, Any]
    answer: str
    calls: int = 1  # the task's steps: one tool call a turn

    def answers(self, body: dict[str, Any]) -> bool:
        return self.tool is None or _tool_results(body) >= self.calls


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    size: int


@dataclass
class FakeUpstream:
    latency_s: float = 0.0
    tokens_per_s: float = 0.0  # 0: as fast as possible
    url: str = ""  # set once it listens
    echo: bool = False  # answer with the last user message, in 4-character chunks
    script: AgentScript | None = None  # an agent's tool call, then its answer
    answer: str = "This is the fake cloud answering your question in a few plain words."
    requests: list[Recorded] = field(default_factory=list)
    hold_batches: bool = False
    batch_line_status: dict[str, int] = field(default_factory=dict)  # custom_id -> that line's status
    batch_files: dict[str, bytes] = field(default_factory=dict)
    provider_batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    message_batches: dict[str, dict[str, Any]] = field(default_factory=dict)  # Anthropic's
    # what the provider's prompt cache read and wrote of each prompt, as its usage reports them
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # False: a Responses tool call's input comes whole in its `output_item.done`, with no deltas (as
    # some OpenAI-compatible servers send it)
    call_deltas: bool = True
    _faults: deque = field(default_factory=deque)

    def fail_next(self, fault: Fault, times: int = 1) -> None:
        self._faults.extend([fault] * times)

    def reset(self) -> None:
        self.requests.clear()
        self._faults.clear()
        self.latency_s = 0.0
        self.tokens_per_s = 0.0
        self.echo = False
        self.script = None
        self.hold_batches = False
        self.batch_line_status.clear()
        self.batch_files.clear()
        self.provider_batches.clear()
        self.message_batches.clear()
        self.cache_read_tokens = self.cache_write_tokens = 0
        self.call_deltas = True

    @property
    def bytes_received(self) -> int:
        return sum(r.size for r in self.requests)

    def saw_text(self, text: str) -> bool:
        return any(text in json.dumps(r.body) for r in self.requests)

    # --- the ASGI app -------------------------------------------------------------------
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/completions", self._legacy, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/files", self._upload, methods=["POST"]),
                Route("/v1/files/{file_id}/content", self._file_content, methods=["GET"]),
                Route("/v1/batches", self._create_batch, methods=["POST"]),
                Route("/v1/batches/{batch_id}", self._batch, methods=["GET"]),
                Route("/v1/batches/{batch_id}/cancel", self._cancel_batch, methods=["POST"]),
                Route("/v1/messages/batches", self._create_message_batch, methods=["POST"]),
                Route("/v1/messages/batches/{batch_id}", self._message_batch, methods=["GET"]),
                Route("/v1/messages/batches/{batch_id}/cancel", self._cancel_message_batch, methods=["POST"]),
                Route("/v1/messages/batches/{batch_id}/results", self._message_batch_results, methods=["GET"]),
            ]
        )

    async def _receive(self, request: Request) -> tuple[dict, Fault | None]:
        raw = await request.body()
        body = json.loads(raw or b"{}")
        self.requests.append(Recorded(request.url.path, dict(request.headers), body, len(raw)))
        fault = self._faults.popleft() if self._faults else None
        delay = self.latency_s + (fault.stall_s if fault and fault.stall_after_chunks is None else 0.0)
        if delay:
            await asyncio.sleep(delay)
        return body, fault

    def _words(self, body: dict) -> list[str]:
        judged = judgement(body, self.answer)
        if judged is not None:
            return [w + " " for w in judged.split()]
        if self.echo:
            text = _last_user_text(body)
            return [text[i : i + 4] for i in range(0, len(text), 4)]
        if self.script is not None and self.script.answers(body):
            return re.findall(r"\S+\s*", self.script.answer)
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 10_000
        return [w + " " for w in self.answer.split()][:limit]

    def _cut(self, body: dict, words: list[str]) -> bool:
        """Whether `words` stop short of the whole answer (max_tokens)."""
        if self.script is not None and self.script.answers(body):
            return False
        return len(words) < len(self.answer.split())

    async def _paced(self, items: list, fault: Fault | None) -> AsyncIterator[tuple[int, Any]]:
        for i, item in enumerate(items):
            if fault and fault.drop_after_chunks is not None and i == fault.drop_after_chunks:
                raise ConnectionAbortedError("fake upstream drops the stream")
            if fault and fault.stall_after_chunks is not None and i == fault.stall_after_chunks:
                await asyncio.sleep(fault.stall_s)
            if self.tokens_per_s:
                await asyncio.sleep(1.0 / self.tokens_per_s)
            yield i, item

    async def _legacy(self, request: Request) -> Response:
        """OpenAI's legacy text completions: the answer's words as a continuation of the prompt."""
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse({"error": {"message": fault.message, "type": "server_error"}}, status_code=fault.status)
        words = self._words(body)
        prompt_tokens = len(str(body.get("prompt", "")).split())
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(words),
                 "total_tokens": prompt_tokens + len(words)}  # fmt: skip
        base = {"id": "cmpl-fake", "object": "text_completion", "created": int(time.time()), "model": body.get("model")}
        finish = "length" if len(words) < len(self.answer.split()) else "stop"
        if not body.get("stream"):
            choice = {"text": " " + "".join(words).strip(), "index": 0, "logprobs": None, "finish_reason": finish}
            return JSONResponse({**base, "choices": [choice], "usage": usage})

        async def events() -> AsyncIterator[bytes]:
            async for _, word in self._paced(words, fault):
                yield _sse({**base, "choices": [{"text": word, "index": 0, "logprobs": None, "finish_reason": None}]})
            yield _sse({**base, "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": finish}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                yield _sse({**base, "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _embeddings(self, request: Request) -> Response:
        """A three-number vector per input: its length, its word count and 1."""
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse({"error": {"message": fault.message, "type": "server_error"}}, status_code=fault.status)
        if fault and fault.body is not None:
            return Response(fault.body, media_type=fault.content_type)
        texts = [body["input"]] if isinstance(body.get("input"), str) else body.get("input", [])
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), float(len(t.split())), 1.0]}
                for i, t in enumerate(texts)]  # fmt: skip
        tokens = sum(len(t.split()) for t in texts)
        return JSONResponse({"object": "list", "data": data, "model": body.get("model"),
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})  # fmt: skip

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})

    async def _openai(self, request: Request) -> Response:
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse(
                {"error": {"message": fault.message, "type": "server_error", "param": None, "code": None}},
                status_code=fault.status,
            )
        if fault and fault.body is not None:
            return Response(fault.body, media_type=fault.content_type)
        words, usage, tool_call, finish = self._answer(body, fault)
        model = body.get("model", "fake-model")
        if not body.get("stream"):
            return JSONResponse(self._whole(body, fault))

        include_usage = (body.get("stream_options") or {}).get("include_usage")

        async def events() -> AsyncIterator[bytes]:
            base = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
            }
            yield _sse(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                }
            )
            deltas = [{"tool_calls": [{"index": 0, **tool_call}]}] if tool_call else [{"content": w} for w in words]
            async for i, delta in self._paced(deltas, fault):
                if fault and fault.event_after_chunks is not None and i == fault.event_after_chunks[0]:
                    yield b"data: " + fault.event_after_chunks[1] + b"\n\n"
                yield _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            if include_usage:
                yield _sse({**base, "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    def _answer(self, body: dict, fault: Fault | None) -> tuple[list[str], Any, dict | None, str]:
        """A chat request's answer: its words, usage, tool call and finish reason."""
        words = self._words(body)
        prompt_tokens = _count_prompt(body)
        usage: Any = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(words),
            "total_tokens": prompt_tokens + len(words),
        }
        if self.cache_read_tokens:  # as OpenAI reports its cache: the prompt's share it read
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.cache_read_tokens, prompt_tokens)}
        if fault and fault.usage != "as counted":
            usage = fault.usage
        tool_call = self._scripted_call(body) if self.script is not None else _tool_call(body)
        finish = "tool_calls" if tool_call else ("length" if not self.echo and self._cut(body, words) else "stop")
        return words, usage, tool_call, finish

    def _scripted_call(self, body: dict) -> dict | None:
        """The script's tool call, in Chat Completions' shape, where this request should make it."""
        script = self.script
        assert script is not None
        if script.answers(body) or script.tool not in _tool_names(body):
            return None
        step = _tool_results(body)  # each step's call its own id, as a provider gives them
        return {"id": "call_script" if step == 0 else f"call_script_{step}", "type": "function",
                "function": {"name": script.tool, "arguments": json.dumps(script.arguments)}}  # fmt: skip

    def _whole(self, body: dict, fault: Fault | None = None) -> dict[str, Any]:
        """A whole chat.completion object."""
        words, usage, tool_call, finish = self._answer(body, fault)
        message: dict[str, Any] = {"role": "assistant", "content": None if tool_call else "".join(words).strip()}
        if tool_call:
            message["tool_calls"] = [tool_call]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }

    # --- the Batch API --------------------------------------------------------------------
    async def _upload(self, request: Request) -> Response:
        form = await request.form()
        upload = form["file"]
        assert not isinstance(upload, str)
        content = await upload.read()
        lines = [json.loads(line) for line in content.splitlines() if line.strip()]
        self.requests.append(
            Recorded(
                request.url.path, dict(request.headers), {"purpose": form["purpose"], "lines": lines}, len(content)
            )
        )
        file_id = f"file-fake-{len(self.batch_files)}"
        self.batch_files[file_id] = content
        return JSONResponse({"id": file_id, "object": "file", "bytes": len(content), "purpose": form["purpose"]})

    async def _create_batch(self, request: Request) -> Response:
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse({"error": {"message": fault.message, "type": "server_error"}}, status_code=fault.status)
        if body.get("input_file_id") not in self.batch_files or body.get("endpoint") != "/v1/chat/completions":
            return JSONResponse({"error": {"message": "bad batch", "type": "invalid_request_error"}}, status_code=400)
        batch_id = f"batch_fake_{len(self.provider_batches)}"
        batch = {"id": batch_id, "object": "batch", "status": "in_progress", "input_file_id": body["input_file_id"],
                 "output_file_id": None, "error_file_id": None, "metadata": body.get("metadata")}  # fmt: skip
        self.provider_batches[batch_id] = batch
        if not self.hold_batches:
            self._answer_batch(batch)
        return JSONResponse(batch)

    def release_batches(self) -> None:
        """Answer every batch held in progress."""
        for batch in self.provider_batches.values():
            if batch["status"] == "in_progress":
                self._answer_batch(batch)
        for message_batch in self.message_batches.values():
            if message_batch["processing_status"] == "in_progress":
                self._answer_message_batch(message_batch)

    def _answer_batch(self, batch: dict[str, Any]) -> None:
        answered: list[bytes] = []
        failed: list[bytes] = []
        for raw in self.batch_files[batch["input_file_id"]].splitlines():
            line = json.loads(raw)
            status = self.batch_line_status.get(line["custom_id"], 200)
            body = (
                self._whole(line["body"])
                if status == 200
                else {"error": {"message": "injected", "type": "server_error"}}
            )
            response = {"status_code": status, "request_id": "req-fake", "body": body}
            result = {"id": f"batch_req_{line['custom_id']}", "custom_id": line["custom_id"], "response": response}
            (answered if status == 200 else failed).append(json.dumps(result).encode())
        for name, results in (("output_file_id", answered), ("error_file_id", failed)):
            if results:
                file_id = f"file-fake-{len(self.batch_files)}"
                self.batch_files[file_id] = b"\n".join(results) + b"\n"
                batch[name] = file_id
        batch["status"] = "completed"

    async def _batch(self, request: Request) -> Response:
        await self._receive(request)
        found = self.provider_batches.get(request.path_params["batch_id"])
        return JSONResponse(found) if found else JSONResponse({"error": {"message": "no such batch"}}, status_code=404)

    async def _cancel_batch(self, request: Request) -> Response:
        await self._receive(request)
        found = self.provider_batches.get(request.path_params["batch_id"])
        if found is None:
            return JSONResponse({"error": {"message": "no such batch"}}, status_code=404)
        if found["status"] == "in_progress":
            found["status"] = "cancelled"
        return JSONResponse(found)

    async def _file_content(self, request: Request) -> Response:
        await self._receive(request)
        content = self.batch_files.get(request.path_params["file_id"])
        if content is None:
            return JSONResponse({"error": {"message": "no such file"}}, status_code=404)
        return Response(content, media_type="application/jsonl")

    # --- Anthropic's Message Batches -------------------------------------------------------
    async def _create_message_batch(self, request: Request) -> Response:
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse(
                {"type": "error", "error": {"type": "api_error", "message": fault.message}}, status_code=fault.status
            )
        batch_id = f"msgbatch_fake_{len(self.message_batches)}"
        base = str(request.base_url).rstrip("/")
        batch = {"id": batch_id, "type": "message_batch", "processing_status": "in_progress", "results_url": None,
                 "cancel_initiated_at": None, "ended_at": None, "_requests": body["requests"],
                 "_results_url": f"{base}/v1/messages/batches/{batch_id}/results", "_results": b""}  # fmt: skip
        self.message_batches[batch_id] = batch
        if not self.hold_batches:
            self._answer_message_batch(batch)
        return JSONResponse(_public(batch))

    def _answer_message_batch(self, batch: dict[str, Any], canceled: bool = False) -> None:
        kinds = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error"}
        results = []
        for entry in batch["_requests"]:
            status = self.batch_line_status.get(entry["custom_id"], 200)
            result: dict[str, Any]
            if canceled:
                result = {"type": "canceled"}
            elif status == 200:
                result = {"type": "succeeded", "message": self._message(entry["params"])}
            else:
                error = {"type": kinds.get(status, "api_error"), "message": "injected"}
                result = {"type": "errored", "error": {"type": "error", "error": error}}
            results.append(json.dumps({"custom_id": entry["custom_id"], "result": result}).encode())
        batch["_results"] = b"\n".join(results) + b"\n"
        batch.update(processing_status="ended", results_url=batch["_results_url"], ended_at="2026-12-03T00:00:00Z")

    async def _message_batch(self, request: Request) -> Response:
        await self._receive(request)
        found = self.message_batches.get(request.path_params["batch_id"])
        if found is None:
            return JSONResponse(
                {"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}}, status_code=404
            )
        return JSONResponse(_public(found))

    async def _cancel_message_batch(self, request: Request) -> Response:
        await self._receive(request)
        found = self.message_batches.get(request.path_params["batch_id"])
        if found is None:
            return JSONResponse(
                {"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}}, status_code=404
            )
        if found["processing_status"] == "in_progress":
            found["cancel_initiated_at"] = "2026-12-03T00:00:00Z"
            self._answer_message_batch(found, canceled=True)
        return JSONResponse(_public(found))

    async def _message_batch_results(self, request: Request) -> Response:
        await self._receive(request)
        found = self.message_batches.get(request.path_params["batch_id"])
        if found is None or found["processing_status"] != "ended":
            return JSONResponse(
                {"type": "error", "error": {"type": "not_found_error", "message": "no results"}}, status_code=404
            )
        return Response(found["_results"], media_type="application/x-jsonl")

    async def _responses(self, request: Request) -> Response:
        """A Responses answer: the words as one message item, or the script's call as a
        function_call item (a custom tool's as a custom_tool_call)."""
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse({"error": {"message": fault.message, "type": "server_error"}}, status_code=fault.status)
        if fault and fault.body is not None:
            return Response(fault.body, media_type=fault.content_type)
        words = self._words(body)
        if words:  # the deltas add up to the text, as a provider's do
            words[-1] = words[-1].rstrip()
        call = self._scripted_call(body) if self.script is not None else _tool_call(body)
        custom = call is not None and call["function"]["name"] in _custom_tools(body)
        cached = min(self.cache_read_tokens, _count_prompt(body))
        usage = {"input_tokens": _count_prompt(body), "input_tokens_details": {"cached_tokens": cached},
                 "output_tokens": len(words), "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": _count_prompt(body) + len(words)}  # fmt: skip
        cut = call is None and self._cut(body, words)
        item: dict[str, Any]
        if call is not None and custom:
            said = json.loads(call["function"]["arguments"]).get("input", "")
            item = {"type": "custom_tool_call", "id": "ctc_fake", "call_id": call["id"], "status": "completed",
                    "name": call["function"]["name"], "input": said}  # fmt: skip
        elif call is not None:
            item = {"type": "function_call", "id": "fc_fake", "call_id": call["id"], "status": "completed",
                    "name": call["function"]["name"], "arguments": call["function"]["arguments"]}  # fmt: skip
            namespace = _namespace_of(body, call["function"]["name"])
            if namespace is not None:  # a namespace's function is called by both names (Codex's MCP tools)
                item["namespace"] = namespace
        else:
            text = "".join(words).strip()
            item = {"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
        response = {"id": "resp_fake", "object": "response", "created_at": int(time.time()), "model": body.get("model"),
                    "status": "incomplete" if cut else "completed", "error": None,
                    "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
                    "output": [item], "usage": usage}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(response)

        async def events() -> AsyncIterator[bytes]:
            sequence = iter(range(10_000))
            opened = {**response, "status": "in_progress", "output": [], "usage": None}

            def sent(kind: str, **data: Any) -> bytes:
                return _event(kind, {"type": kind, "sequence_number": next(sequence), **data})

            yield sent("response.created", response=opened)
            yield sent("response.in_progress", response=opened)
            if item["type"] == "message":
                yield sent(
                    "response.output_item.added", output_index=0, item={**item, "content": [], "status": "in_progress"}
                )
                part = {"type": "output_text", "text": "", "annotations": []}
                yield sent(
                    "response.content_part.added", item_id="msg_fake", output_index=0, content_index=0, part=part
                )
                async for _, word in self._paced(words, fault):
                    yield sent(
                        "response.output_text.delta", item_id="msg_fake", output_index=0, content_index=0, delta=word
                    )
                text = item["content"][0]["text"]
                yield sent("response.output_text.done", item_id="msg_fake", output_index=0, content_index=0, text=text)
                yield sent("response.content_part.done", item_id="msg_fake", output_index=0, content_index=0,
                           part=item["content"][0])  # fmt: skip
            else:
                field = "input" if custom else "arguments"
                yield sent(
                    "response.output_item.added", output_index=0, item={**item, field: "", "status": "in_progress"}
                )
                kind = "response.custom_tool_call_input" if custom else "response.function_call_arguments"
                if self.call_deltas:
                    yield sent(f"{kind}.delta", item_id=item["id"], output_index=0, delta=item[field])
                    yield sent(f"{kind}.done", item_id=item["id"], output_index=0, **{field: item[field]})
            yield sent("response.output_item.done", output_index=0, item=item)
            yield sent("response.incomplete" if cut else "response.completed", response=response)

        return StreamingResponse(events(), media_type="text/event-stream")

    def _message(self, body: dict) -> dict[str, Any]:
        """A whole Messages answer."""
        words = self._words(body)
        stop = "max_tokens" if self._cut(body, words) else "end_turn"
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": [{"type": "text", "text": "".join(words).strip()}],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": _count_prompt(body), "output_tokens": len(words)},
        }

    async def _anthropic(self, request: Request) -> Response:
        """A Messages answer: a thinking block first where the request turns thinking on (signed
        for the model that wrote it, as Anthropic signs it), then the words, or the script's tool
        call. Refused with Anthropic's 400, as its API refuses them: a thinking block another model
        signed, and a turn with thinking on that continues a tool loop whose assistant turn does
        not begin with its thinking (`thinking_refusal`)."""
        body, fault = await self._receive(request)
        if fault and fault.status:
            return JSONResponse(
                {"type": "error", "error": {"type": "api_error", "message": fault.message}}, status_code=fault.status
            )
        if fault and fault.body is not None:
            return Response(fault.body, media_type=fault.content_type)
        refused = thinking_refusal(body)
        if refused is not None:
            error = {"type": "invalid_request_error", "message": refused}
            return JSONResponse({"type": "error", "error": error}, status_code=400)
        words = self._words(body)
        model = body.get("model", "claude-fake")
        message_id = f"msg_fake_{len(self.requests)}"  # each answer its own (a client joins blocks by it)
        call = self._scripted_call(body) if self.script is not None else None
        stop = "tool_use" if call else "max_tokens" if self._cut(body, words) else "end_turn"
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []  # each block as it starts, and its deltas
        if (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
            thought = [
                {"type": "thinking_delta", "thinking": THOUGHT},
                {"type": "signature_delta", "signature": signature_of(str(model), len(self.requests))},
            ]
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, thought))
        if call:
            arguments = call["function"]["arguments"]
            call_id = call["id"].replace("call_", "toolu_")
            started = {"type": "tool_use", "id": call_id, "name": call["function"]["name"], "input": {}}
            blocks.append((started, [{"type": "input_json_delta", "partial_json": arguments}]))
        else:
            words = [*words[:-1], words[-1].rstrip()] if words else words
            blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": w} for w in words]))
        usage = self._anthropic_usage(body, len(words))
        if not body.get("stream"):
            return JSONResponse(
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [_whole_block(start, deltas) for start, deltas in blocks],
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )

        async def events() -> AsyncIterator[bytes]:
            opened = {"id": message_id, "type": "message", "role": "assistant", "content": [], "model": model,
                      "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}  # fmt: skip
            yield _event("message_start", {"type": "message_start", "message": opened})
            for index, (start, deltas) in enumerate(blocks):
                yield _event(
                    "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
                )
                paced = self._paced(deltas, fault) if start["type"] != "thinking" else _at_once(deltas)
                async for _, delta in paced:
                    yield _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
            yield _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": len(words)},
                },
            )
            yield _event("message_stop", {"type": "message_stop"})

        return StreamingResponse(events(), media_type="text/event-stream")

    def _anthropic_usage(self, body: dict, output_tokens: int) -> dict[str, Any]:
        """Usage as Anthropic counts it: `input_tokens` is what the cache neither read nor wrote."""
        prompt = _count_prompt(body)
        read = min(self.cache_read_tokens, prompt)
        written = min(self.cache_write_tokens, prompt - read)
        return {"input_tokens": prompt - read - written, "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read, "output_tokens": output_tokens}  # fmt: skip


THOUGHT = "The user wants a short answer."
SIGNED_BY = "fakesig:"  # the fake's signatures end in this and the model that signed


def signature_of(model: str, n: int = 0) -> str:
    """The signature the fake gives its `n`th thinking block, written by `model`."""
    return f"EqQBCkYIBxgCKkB{n}{SIGNED_BY}{model}"


def signer_of(signature: Any) -> str | None:
    """The model that signed a thinking block, where the fake signed it (None: a signature of
    another provider's, which it takes on trust)."""
    if not isinstance(signature, str) or SIGNED_BY not in signature:
        return None
    return signature.rsplit(SIGNED_BY, 1)[1]


def thinking_refusal(body: dict) -> str | None:
    """Anthropic's words for what it refuses of a request's thinking: a block signed by another
    model than the one asked, and, with thinking on, an assistant turn whose tool calls the next
    turn answers (the loop it continues) that does not begin with a thinking block. None: accepted."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for i, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            signer = signer_of(block.get("signature")) if isinstance(block, dict) else None
            if block.get("type") == "thinking" and signer not in (None, body.get("model")):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
        return None
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    content = messages[last].get("content") if last is not None else None
    if last is None or not isinstance(content, list) or not content:
        return None
    calls = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
    answered = any(
        isinstance(b, dict) and b.get("type") == "tool_result"
        for m in messages[last + 1 :]
        for b in (m.get("content") if isinstance(m.get("content"), list) else [])
    )
    first = content[0].get("type") if isinstance(content[0], dict) else None
    if calls and answered and first not in ("thinking", "redacted_thinking"):
        return (
            f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
            "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding "
            "the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
            "from previous turns. To avoid this requirement, disable `thinking`."
        )
    return None


def _whole_block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """A content block whole, from how it starts and its deltas."""
    block = dict(start)
    for delta in deltas:
        kind = delta["type"]
        if kind == "text_delta":
            block["text"] += delta["text"]
        elif kind == "thinking_delta":
            block["thinking"] += delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "input_json_delta":
            block["input"] = json.loads(delta["partial_json"])
    return block


async def _at_once(items: list) -> AsyncIterator[tuple[int, Any]]:
    for i, item in enumerate(items):
        yield i, item


def _sse(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _event(name: str, payload: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def _last_user_text(body: dict) -> str:
    """The last user turn's text, in any of the three APIs."""
    if isinstance(body.get("input"), str):
        return body["input"]
    turns = body.get("messages") or [i for i in body.get("input") or [] if isinstance(i, dict) and "role" in i]
    for message in reversed(turns):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content or ""
    return ""


JUDGE_SYSTEM = "Please act as an impartial judge"
_ANSWERS = re.compile(
    r"\[User Question\]\n(?P<q>.*)\n\n"
    r"\[The Start of Assistant A's Answer\]\n(?P<a>.*)\n\[The End of Assistant A's Answer\]\n\n"
    r"\[The Start of Assistant B's Answer\]\n(?P<b>.*)\n\[The End of Assistant B's Answer\]",
    re.S,
)


def is_judging(body: dict) -> bool:
    """A judge's request: its system prompt (a Chat Completions' first message, or Anthropic's `system`)."""
    messages = body.get("messages") or [{}]
    return str(body.get("system") or messages[0].get("content", "")).startswith(JUDGE_SYSTEM)


def judgement(body: dict, cloud_answer: str) -> str | None:
    """A deterministic MT-Bench judge, told by a marker in the question: `[judge: cloud]` prefers
    the fake cloud's answer, `[judge: edge]` the other one, `[judge: none]` gives no verdict; with
    no marker, a tie."""
    if not is_judging(body):
        return None
    found = _ANSWERS.search(_last_user_text(body))
    if found is None:
        return "I cannot read these answers."
    first = found["a"].strip()
    question, cloud_is_a = found["q"], bool(first) and cloud_answer.startswith(first)  # (cut by max_tokens)
    if "[judge: none]" in question:
        return "Both answers have merits and flaws."
    if "[judge: cloud]" in question:
        return f"The cloud answer is better. [[{'A' if cloud_is_a else 'B'}]]"
    if "[judge: edge]" in question:
        return f"The other answer is better. [[{'B' if cloud_is_a else 'A'}]]"
    return "They are equally good. [[C]]"


def _tool_results(body: dict) -> int:
    """How many tool calls the conversation answers: `tool` messages (Chat Completions),
    `tool_result` blocks (Messages), tools' output items (Responses)."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    found = sum(
        1 for i in items if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
    )
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") == "tool":
            found += 1
        elif isinstance(content, list):
            found += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return found


def _offered(body: dict) -> list[dict]:
    """The tools a request offers, in any API's shape: Responses' namespaces and its
    `additional_tools` items (Codex's) opened."""
    tools = list(body.get("tools") or [])
    for item in body.get("input") if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            tools += item.get("tools") or []
    opened = []
    for tool in tools:
        opened += tool.get("tools") or [] if tool.get("type") == "namespace" else [tool]
    return opened


def _namespace_of(body: dict, name: str) -> str | None:
    """The namespace a request offers the function `name` in, if it offers it in one."""
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace" and any(t.get("name") == name for t in tool.get("tools") or []):
            return str(tool.get("name"))
    return None


def _tool_names(body: dict) -> set[str]:
    return {str(t.get("function", {}).get("name") or t.get("name")) for t in _offered(body)}


def _custom_tools(body: dict) -> set[str]:
    return {str(t.get("name")) for t in _offered(body) if t.get("type") == "custom"}


def _count_prompt(body: dict) -> int:
    said = [body.get(k) for k in ("system", "instructions", "messages", "input") if body.get(k) is not None]
    return max(1, len(json.dumps(said if len(said) != 1 else said[0])) // 4)


def _tool_call(body: dict) -> dict | None:
    tools = _offered(body)
    if not tools or body.get("tool_choice") == "none" or not any(t.get("type") in ("function", None) for t in tools):
        return None
    name = tools[0].get("function", {}).get("name") or tools[0].get("name", "tool")
    return {"id": "call_fake", "type": "function", "function": {"name": name, "arguments": '{"city": "Paris"}'}}


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    """A Message Batch as Anthropic shows it (without the fake's own bookkeeping)."""
    return {k: v for k, v in batch.items() if not k.startswith("_")}


class UpstreamServer(LoopbackServer):
    """Runs a FakeUpstream on a loopback port in a background thread."""

    def __init__(self, upstream: FakeUpstream, port: int | None = None) -> None:
        super().__init__(upstream.app(), port)
        self.upstream = upstream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--tokens-per-s", type=float, default=0.0)
    parser.add_argument("--script", metavar="JSON", help='an agent task: {"tool", "arguments", "answer"}')
    args = parser.parse_args()
    upstream = FakeUpstream(latency_s=args.latency, tokens_per_s=args.tokens_per_s)
    if args.script:
        upstream.script = AgentScript(**json.loads(args.script))
    uvicorn.run(upstream.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
