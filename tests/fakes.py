"""Fakes for fast tests of the router: tiers that answer, fail or stall as told, and record
every request they were sent (so a test can count what reached the cloud)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from classifiers import Scorer
from classifiers.signals import Signals
from policies.needs import Need
from router.answer import Answer, ChunkStream, Usage, embeddings_body
from router.errors import EdgewayError
from router.request import ChatRequest
from router.tier import Capacity, Resilience, TierKind


class FakeTier:
    """A model that answers `text` (or raises `fails`), with the confidence it is given."""

    def __init__(
        self,
        name: str,
        tier: TierKind,
        *,
        text: str = "ok",
        fails: EdgewayError | None = None,
        confidence: float | None = None,
        context_window: int | None = 4096,
        wait_ms: float = 0.0,
        resilience: Resilience | None = None,
    ) -> None:
        self.name, self.tier, self.text, self.fails = name, tier, text, fails
        self.confidence, self.context_window, self.wait_ms = confidence, context_window, wait_ms
        self.resilience = resilience if resilience is not None or tier == "edge" else Resilience(retries=0)
        self.capabilities = frozenset(Need) - {Need.EMBEDDINGS} if tier == "cloud" else frozenset()
        self.apis = frozenset()  # every request reaches it as Chat Completions
        self.requests: list[ChatRequest] = []

    def capacity(self) -> Capacity:
        return Capacity(self.wait_ms, 0)

    def _answer(self, request: ChatRequest) -> str:
        self.requests.append(request)
        if self.fails is not None:
            raise self.fails
        return self.text

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        text = self._answer(request)
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }
        return Answer(body, Usage(10, 2), self.confidence if confidence else None)

    async def stream(self, request: ChatRequest) -> ChunkStream:
        return FakeStream(self.name, self._answer(request))

    async def embed(self, request: ChatRequest) -> Answer:
        self._answer(request)
        vectors = [[float(len(t)), 1.0] for t in request.inputs or ()]
        return Answer(embeddings_body(vectors, self.name, 3), Usage(3, 0))

    def texts_seen(self) -> list[str]:
        return [m["content"] for r in self.requests for m in r.messages if isinstance(m.get("content"), str)]


class FakeStream:
    """The answer in pieces of three characters."""

    def __init__(self, model: str, text: str) -> None:
        self._model, self._text = model, text
        self._usage = Usage(10, 0)
        self.closed = False

    @property
    def usage(self) -> Usage:
        return self._usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        for i in range(0, len(self._text), 3):
            self._usage.completion_tokens += 1
            yield {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self._model,
                "choices": [{"index": 0, "delta": {"content": self._text[i : i + 3]}, "finish_reason": None}],
            }
        yield {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self._model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }

    async def aclose(self) -> None:
        self.closed = True


SCORER_FOR_TESTS = Scorer()


class FixedComplexity(Scorer):
    """The real signals, with the complexity a test needs."""

    def __init__(self, complexity: float) -> None:
        super().__init__()
        self.fixed = complexity

    def signals(
        self,
        messages: list[Any],
        *,
        max_tokens: int | None = None,
        metadata: dict[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Signals:
        real = super().signals(messages, max_tokens=max_tokens, metadata=metadata, body=body)
        return dataclasses.replace(real, score_complexity=lambda: self.fixed)


class FakeReader(FakeTier):
    """An edge tier that reads prompts first: its probe scores every prompt `reading`, and it
    records whether the gate kept each one (`kept`) and the bound each was read within (`bounds`)."""

    def __init__(self, name: str = "edge", *, reading: float = 0.0, combine=(1.0, 1.0, 0.0), **kw: Any) -> None:
        import numpy as np

        from edge_runtime.reading import Probe, ReadingKind

        super().__init__(name, "edge", **kw)
        self.reading = reading
        self.probe = Probe(ReadingKind.LAST, np.zeros(2, dtype=np.float32), reading, "fake", "small", combine)
        self.kept: list[bool] = []
        self.bounds: list[int | None] = []

    async def read_first(self, request: ChatRequest, keep: Any, bound: int | None = None) -> FakeRead:
        score = self.probe.score(self.probe.weights)
        kept = keep(score)
        self.kept.append(kept)
        self.bounds.append(bound)
        return FakeRead(self, request, score, kept)


class FakeRead:
    def __init__(self, tier: FakeReader, request: ChatRequest, score: float, kept: bool) -> None:
        self.tier, self.request, self.score, self.kept = tier, request, score, kept

    async def complete(self) -> Answer:
        return await self.tier.complete(self.request)

    async def stream(self) -> ChunkStream:
        return await self.tier.stream(self.request)

    def cancel(self) -> None:
        return None
