"""The two ways a request can be answered, as types: a whole answer or a stream of chunks.

The router runs both through the same path (fallbacks, breakers, redaction, cascades); what
differs is here: how a model is called, how placeholders are put back, and how a kept edge
answer is handed on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

from router.answer import Answer, ChunkStream, Usage
from router.redaction import Redaction
from router.request import ChatRequest
from router.tier import Tier

R = TypeVar("R", Answer, ChunkStream)


class Mode(Protocol[R]):
    cascades: bool  # whether a cascade rule's edge-first answer applies

    async def call(self, model: Tier, request: ChatRequest) -> R: ...

    def restore(self, result: R, redaction: Redaction) -> R:
        """The result with the redacted values back where the model wrote their placeholders."""

    def replay(self, answer: Answer) -> R:
        """A whole edge answer that a cascade kept, in this mode's shape."""


class Whole:
    cascades = True

    async def call(self, model: Tier, request: ChatRequest) -> Answer:
        return await model.complete(request)

    def restore(self, result: Answer, redaction: Redaction) -> Answer:
        result.body = redaction.restore_answer(result.body)
        return result

    def replay(self, answer: Answer) -> Answer:
        return answer


class Streamed:
    cascades = True

    async def call(self, model: Tier, request: ChatRequest) -> ChunkStream:
        return await model.stream(request)

    def restore(self, result: ChunkStream, redaction: Redaction) -> ChunkStream:
        return MappedStream(result, redaction.stream_restorer().restore_chunk)

    def replay(self, answer: Answer) -> ChunkStream:
        return ReplayedAnswer(answer)


class Embedded:
    """Embeddings: a whole answer with nothing to put back (a redacted text's vector is the masked
    text's) and no cascade (there is no confidence to escalate on)."""

    cascades = False

    async def call(self, model: Tier, request: ChatRequest) -> Answer:
        return await model.embed(request)

    def restore(self, result: Answer, redaction: Redaction) -> Answer:
        return result

    def replay(self, answer: Answer) -> Answer:
        return answer


WHOLE = Whole()
STREAMED = Streamed()
EMBEDDED = Embedded()


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
        choice = body["choices"][0]
        for delta, finish in (
            ({"role": "assistant", "content": ""}, None),
            ({"content": choice["message"]["content"]}, None),
            ({}, choice["finish_reason"]),
        ):
            yield {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    async def aclose(self) -> None:
        return None
