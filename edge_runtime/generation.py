"""One request's generation as the worker thread produces it and the event loop reads it: its
sampling settings, its tokens and timings, and the outbox that carries its text across threads."""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
from collections.abc import AsyncIterator

from edge_runtime.reading import Gate
from edge_runtime.sampling import FinishReason, Sampling, TokenLogprob

DEFAULT_TEMPERATURE = 0.7
DEFAULT_TOP_P = 0.95


DONE = object()  # the last item of a generation's stream
READ = object()  # a gated generation's prompt is read and scored (or it ended before that)


class Generation:
    """One request's tokens, produced on the worker thread and read on the event loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        prompt: list[int],
        sampling: Sampling,
        max_tokens: int,
        outbox: Outbox,
        owner: str = "",
        gate: Gate | None = None,
    ) -> None:
        self._loop = loop
        self.gate = gate
        self._read = asyncio.Event()
        self._outbox = outbox
        self._queue: asyncio.Queue[object] = asyncio.Queue()  # text pieces, an EdgeError, then DONE
        self._cancel = threading.Event()
        self.prompt = prompt
        self.sampling = sampling
        self.owner = owner  # the app, for fair admission
        self.max_tokens = max_tokens
        self.prompt_tokens = len(prompt)
        self.completion_tokens = 0
        self.finish_reason: FinishReason | None = None
        self.stop_sequence: str | None = None  # which of the request's `stop` ended it, if one did
        # time.monotonic() when it was queued, when a sequence took it, its first token, its end
        self.queued_at = time.monotonic()
        self.started_at: float | None = None
        self.first_token_at: float | None = None
        self.ended_at: float | None = None
        self.prompt_read = False  # in the cache, or never will be (set by the worker)
        self.waits_for: Generation | None = None  # a sibling whose prompt cells this one shares
        self.logprob_sum = 0.0
        self.logprobs: list[TokenLogprob] = []  # filled by the worker when sampling.logprobs is set
        self.temperature = DEFAULT_TEMPERATURE if sampling.temperature is None else sampling.temperature
        self.top_p = DEFAULT_TOP_P if sampling.top_p is None else sampling.top_p
        self.seed = sampling.seed if sampling.seed is not None else random.getrandbits(31)

    @property
    def confidence(self) -> float | None:
        """The geometric mean of the probabilities the model gave its own tokens (0..1)."""
        if not self.sampling.confidence or not self.completion_tokens:
            return None
        return math.exp(self.logprob_sum / self.completion_tokens)

    async def reading(self) -> float | None:
        """For a gated generation: wait until its prompt is read, then its probe's score (None if
        it ended before: cancelled or failed). Whether the gate kept it is `routed_away`."""
        await self._read.wait()
        return None if self.gate is None else self.gate.score

    @property
    def routed_away(self) -> bool:
        """Its gate did not keep it: it ended unanswered after reading its prompt."""
        return self.finish_reason is FinishReason.ROUTED

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _emit(self, item: object) -> None:
        self._outbox.put(self, item)

    async def text(self) -> AsyncIterator[str]:
        """Text deltas until the generation ends; raises EdgeError if it failed."""
        try:
            while True:
                item = await self._queue.get()
                if item is DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, str)
                yield item
        finally:
            if self.finish_reason is None:
                self.cancel()  # the reader went away: stop generating for nobody


def _deliver(loop: asyncio.AbstractEventLoop, items: list[tuple[Generation, object]]) -> None:
    def put() -> None:
        for generation, item in items:
            if item is READ:
                generation._read.set()
            else:
                generation._queue.put_nowait(item)

    try:
        loop.call_soon_threadsafe(put)
    except RuntimeError:  # the event loop has closed: the server is shutting down
        for generation, _ in items:
            generation._cancel.set()


class Outbox:
    """What the worker thread has for the event loop, sent in one wake-up per step.

    Sent just before the next `llama_decode`, which releases the GIL: the event loop then writes
    the tokens out while the model computes, instead of taking the GIL from the worker between
    two steps (that cost 150 us a token, 2% of the decode rate here). One wake-up for all the
    sequences of a step also spares the loop one per token."""

    def __init__(self) -> None:
        self._items: dict[asyncio.AbstractEventLoop, list[tuple[Generation, object]]] = {}

    def put(self, generation: Generation, item: object) -> None:
        self._items.setdefault(generation._loop, []).append((generation, item))

    def send(self) -> None:
        if self._items:
            items, self._items = self._items, {}
            for loop, batch in items.items():
                _deliver(loop, batch)
