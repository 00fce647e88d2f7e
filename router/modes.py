"""The two ways a request can be answered, as types: a whole answer or a stream of chunks.

The router runs both through the same path (fallbacks, breakers, redaction, cascades); what
differs is here: how a model is called, how placeholders are put back, and how a kept edge
answer is handed on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

from opentelemetry.trace import Span

from router.answer import Answer, ChunkStream, Usage
from router.redaction import Restoration
from router.request import ChatRequest
from router.thinking import SignedStream, answer_seals
from router.tier import ReadFirst, Tier
from router.tracing import TracedStream, answered

R = TypeVar("R", Answer, ChunkStream)


class Mode(Protocol[R]):
    cascades: bool  # whether a cascade rule's edge-first answer applies

    async def call(self, model: Tier, request: ChatRequest) -> R: ...

    async def answer_read(self, read: ReadFirst) -> R:
        """The answer of an edge that read the prompt first and goes on to answer it."""

    def restore(self, result: R, redaction: Restoration) -> R:
        """The result with the redacted values back where the model wrote their placeholders."""

    def replay(self, answer: Answer) -> R:
        """A whole answer (a cascade's kept edge answer, a cached one) in this mode's shape."""

    def remember(self, result: R, keep: Callable[[Answer], None]) -> R:
        """The result, with `keep` given the whole answer once it is complete and worth keeping."""

    def traced(self, result: R, span: Span) -> R:
        """The result, its attempt's span ended when the answer is complete."""

    def signed(self, result: R, note: Callable[[list[str]], None]) -> R:
        """The result, `note` given the seals of the thinking blocks it holds (`router.thinking`)."""


class Whole:
    cascades = True

    async def call(self, model: Tier, request: ChatRequest) -> Answer:
        return await model.complete(request)

    async def answer_read(self, read: ReadFirst) -> Answer:
        return await read.complete()

    def restore(self, result: Answer, redaction: Restoration) -> Answer:
        result.body = redaction.restore_answer(result.body)
        if result.native is not None:
            result.native.body = redaction.restore_native(result.native.body)
        return result

    def replay(self, answer: Answer) -> Answer:
        return answer

    def remember(self, result: Answer, keep: Callable[[Answer], None]) -> Answer:
        if _complete(result.body):
            keep(result)
        return result

    def traced(self, result: Answer, span: Span) -> Answer:
        answered(span, result)
        return result

    def signed(self, result: Answer, note: Callable[[list[str]], None]) -> Answer:
        seals = answer_seals(result)
        if seals:
            note(seals)
        return result


def _complete(body: dict[str, Any]) -> bool:
    """An answer worth serving again: it ended by itself or at its max_tokens, not in an error."""
    choices = body.get("choices") or []
    return bool(choices) and all(c.get("finish_reason") in ("stop", "length", "tool_calls") for c in choices)


class Streamed:
    cascades = True

    async def call(self, model: Tier, request: ChatRequest) -> ChunkStream:
        return await primed(await model.stream(request))

    async def answer_read(self, read: ReadFirst) -> ChunkStream:
        return await primed(await read.stream())

    def restore(self, result: ChunkStream, redaction: Restoration) -> ChunkStream:
        return MappedStream(result, redaction.stream_restorer().restore_chunk)

    def replay(self, answer: Answer) -> ChunkStream:
        return ReplayedAnswer(answer)

    def remember(self, result: ChunkStream, keep: Callable[[Answer], None]) -> ChunkStream:
        return RecordedStream(result, keep)

    def traced(self, result: ChunkStream, span: Span) -> ChunkStream:
        return TracedStream(result, span)

    def signed(self, result: ChunkStream, note: Callable[[list[str]], None]) -> ChunkStream:
        return SignedStream(result, note)


class Embedded:
    """Embeddings: a whole answer with nothing to put back (a redacted text's vector is the masked
    text's) and no cascade (there is no confidence to escalate on)."""

    cascades = False

    async def call(self, model: Tier, request: ChatRequest) -> Answer:
        return await model.embed(request)

    async def answer_read(self, read: ReadFirst) -> Answer:
        raise AssertionError("embeddings are never read first")  # Router._order reads chat requests only

    def restore(self, result: Answer, redaction: Restoration) -> Answer:
        return result

    def replay(self, answer: Answer) -> Answer:
        return answer

    def remember(self, result: Answer, keep: Callable[[Answer], None]) -> Answer:
        return result  # embeddings are not cached

    def traced(self, result: Answer, span: Span) -> Answer:
        answered(span, result)
        return result

    def signed(self, result: Answer, note: Callable[[list[str]], None]) -> Answer:
        return result  # an embedding thinks nothing


WHOLE = Whole()
STREAMED = Streamed()
EMBEDDED = Embedded()


def _says_something(chunk: dict[str, Any]) -> bool:
    """A chunk with more than the role: text, a tool call, a finish reason or the usage."""
    if chunk.get("usage"):
        return True
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content") or delta.get("tool_calls") or delta.get("refusal") or choice.get("finish_reason"):
            return True
        if choice.get("text"):  # a legacy completion's chunk
            return True
    return False


async def primed(stream: ChunkStream) -> ChunkStream:
    """`stream` once its answer has begun: the chunks up to the first that says something are read
    before the router hands the stream on, so that a provider that sends its headers (and perhaps
    a role chunk) and then stalls, resets or fails is a failed attempt like an unstreamed one:
    retried, or the next target tried. Nothing has reached the client yet; after this, a failure
    ends the stream with an error event. The client's first byte comes when the first token does
    either way."""
    chunks = stream.__aiter__()
    held: list[dict[str, Any]] = []
    try:
        async for chunk in chunks:
            held.append(chunk)
            if _says_something(chunk):
                break
    except BaseException:
        await stream.aclose()
        raise
    return PrimedStream(stream, held, chunks)


class PrimedStream:
    """A stream whose first chunks are in hand (`primed`)."""

    def __init__(self, inner: ChunkStream, held: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]]) -> None:
        self._inner, self._held, self._rest = inner, held, rest

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        for chunk in self._held:
            yield chunk
        self._held = []
        async for chunk in self._rest:
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class MappedStream:
    """A chunk stream with `change` applied to every chunk."""

    def __init__(self, inner: ChunkStream, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._inner = inner
        self._change = change

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._inner:
            yield self._change(chunk)

    async def aclose(self) -> None:
        await self._inner.aclose()


class RecordedStream:
    """A stream passed on as it comes, then kept whole once it ended by itself (one text answer
    only: a streamed tool call, or one of several choices, is not assembled for the cache)."""

    def __init__(self, inner: ChunkStream, keep: Callable[[Answer], None]) -> None:
        self._inner, self._keep = inner, keep

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        pieces: list[str] = []
        last: dict[str, Any] = {}
        finish = None
        tools = several = False
        async for chunk in self._inner:
            last = chunk
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                pieces.append(delta.get("content") or "")
                tools = tools or bool(delta.get("tool_calls"))
                several = several or choice.get("index", 0) != 0  # n > 1: not assembled either
                finish = choice.get("finish_reason") or finish
            yield chunk
        if finish in ("stop", "length") and not tools and not several and self.usage.measured:
            body = {
                "id": last.get("id", ""),
                "object": "chat.completion",
                "created": last.get("created", 0),
                "model": last.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "".join(pieces)},
                        "logprobs": None,
                        "finish_reason": finish,
                    }
                ],
                "usage": self.usage.as_openai(),
            }
            self._keep(Answer(body, Usage(self.usage.prompt_tokens, self.usage.completion_tokens)))

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReplayedAnswer:
    """A whole answer sent as a stream: what a held-back cascade on the edge streams."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer

    @property
    def usage(self) -> Usage:
        return self._answer.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        body = self._answer.body
        base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}
        for choice in body["choices"]:
            calls = choice["message"].get("tool_calls")
            # a tool call's deltas carry no content at all, as OpenAI sends them (not "")
            said: dict[str, Any] = (
                {"tool_calls": [{"index": i, **call} for i, call in enumerate(calls)]}
                if calls
                else {"content": choice["message"].get("content") or ""}
            )
            opening = {"role": "assistant", "content": None if calls else ""}
            for delta, finish in ((opening, None), (said, None), ({}, choice["finish_reason"])):
                one = {"index": choice.get("index", 0), "delta": delta, "logprobs": None, "finish_reason": finish}
                if finish is not None and choice.get("stop_reason") is not None:
                    one["stop_reason"] = choice["stop_reason"]
                yield {**base, "choices": [one]}

    async def aclose(self) -> None:
        return None
