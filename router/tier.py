"""A model the router can send a request to: the one interface of edge and cloud models.

Everything the router reads of a model is here; it never looks behind it (no engine, no config).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from edge_runtime.reading import Probe
from router.answer import Answer, ChunkStream
from router.native import Api
from router.request import ChatRequest

TierKind = Literal["edge", "cloud"]


@dataclass(frozen=True)
class Resilience:
    """How calls to a model that fails remotely are guarded: retries, then a circuit breaker."""

    retries: int = 2  # after the first try, on retryable errors only
    circuit_failures: int = 5  # failed attempts in a row (retries included) that open the circuit
    circuit_cooldown_s: float = 10.0  # how long it stays open before one probe


@dataclass(frozen=True)
class Capacity:
    """What a model has in hand right now."""

    wait_ms: float = 0.0  # estimated wait before a new request starts
    outstanding_tokens: int = 0  # prompt + max_tokens admitted and not yet done


IDLE = Capacity()


class Tier(Protocol):
    """One model that can answer: a local edge model, an edge group, or a cloud model."""

    @property
    def name(self) -> str: ...

    @property
    def tier(self) -> TierKind: ...

    @property
    def context_window(self) -> int | None:
        """Prompt plus answer tokens it can hold; None where only the provider knows."""

    @property
    def capabilities(self) -> frozenset[str]:
        """What it honors of `policies.needs.Need` (tools, JSON output, logprobs...)."""

    @property
    def apis(self) -> frozenset[Api]:
        """The APIs it takes a request in as the client sent it (router.native); none for the edge."""

    @property
    def resilience(self) -> Resilience | None:
        """None for a local model: its failures are not retried and open no circuit."""

    def capacity(self) -> Capacity: ...

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        """A whole answer; with `confidence`, one that carries the model's confidence in it
        (models that cannot measure it leave `Answer.confidence` None)."""

    async def stream(self, request: ChatRequest) -> ChunkStream: ...

    async def embed(self, request: ChatRequest) -> Answer:
        """Embeddings of `request.inputs`, as an OpenAI embeddings list (models whose
        capabilities include "embeddings"; the router sends others none)."""


class ReadFirst(Protocol):
    """A request an edge model read first: the probe's score of its reading, and the answer."""

    @property
    def score(self) -> float | None:
        """None if the generation ended before its prompt was read (cancelled, failed)."""

    @property
    def kept(self) -> bool:
        """The edge goes on to answer from the same prefill; False: it stopped after reading."""

    async def complete(self) -> Answer: ...

    async def stream(self) -> ChunkStream: ...

    def cancel(self) -> None: ...


@runtime_checkable
class Reader(Protocol):
    """An edge tier that can read a prompt before the order of the targets is known: prefill it,
    score the reading with the probe fitted for its GGUF, and answer from that prefill or stop."""

    @property
    def name(self) -> str: ...

    @property
    def probe(self) -> Probe | None: ...

    async def read_first(
        self, request: ChatRequest, keep: Callable[[float], bool], bound: int | None = None
    ) -> ReadFirst: ...
