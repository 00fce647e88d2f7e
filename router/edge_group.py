"""One edge model served by this machine and by remote edge nodes, balanced by outstanding tokens.

A node is another `edgeway serve --edge-only` (or any llama.cpp `llama-server` / OpenAI-compatible
endpoint) on the premises: it counts as edge, so a request kept local may go there. Each request
goes to the member with the fewest tokens in flight (prompt + max_tokens, not request counts); a
node that fails its health check, or a request, is left out until a check passes again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from edge_runtime.reading import Probe
from router.answer import Answer, ChunkStream, Usage
from router.cloud.config import CloudModelConfig
from router.cloud.http1 import HTTPError
from router.cloud.openai_compat import HttpPool, OpenAICompatible
from router.edge import EdgeModel, EdgeRead
from router.errors import EdgewayError
from router.request import ChatRequest
from router.tier import Capacity, Resilience, TierKind

log = logging.getLogger("edgeway.edge")
HEALTH_EVERY_S = 2.0


class EdgeNodeConfig(BaseModel):
    """`edge.nodes[]`: a URL, or a URL with the node's app key (a node with apps wants one)."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(pattern=r"^https?://")
    api_key: SecretStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_url(cls, value: Any) -> Any:
        return {"url": value} if isinstance(value, str) else value


@dataclass
class Node:
    url: str
    client: OpenAICompatible
    headers: dict[str, str]
    healthy: bool = True
    in_flight: int = 0  # tokens this gateway has sent there and not yet seen answered
    served: int = 0


class EdgeGroup:
    tier: TierKind = "edge"
    resilience: Resilience | None = None  # a failing node is left out; the request is served here

    def __init__(self, local: EdgeModel, nodes: list[EdgeNodeConfig], pool: HttpPool) -> None:
        self.local = local
        self.name = local.name
        self.context_window = local.context_window
        self.capabilities = local.capabilities
        self.apis = local.apis
        self._pool = pool
        self.nodes = [self._node(node) for node in nodes]
        self.local_served = 0

    def _node(self, config: EdgeNodeConfig) -> Node:
        url = config.url.rstrip("/")
        client = OpenAICompatible(
            CloudModelConfig(
                name=f"{self.name}@{url}",
                provider_model=f"hosted_vllm/{self.name}",
                api_key=config.api_key,
                api_base=url,
                retries=0,
                timeout_s=300,
            ),
            self._pool,
            forwards_priority=True,
        )
        headers = {"authorization": f"Bearer {config.api_key.get_secret_value()}"} if config.api_key else {}
        return Node(url, client, headers)

    # --- choosing a member ----------------------------------------------------------------
    def _cost(self, request: ChatRequest) -> int:
        return sum(len(request.text_of(m)) for m in request.messages) // 4 + (request.max_tokens or 512)

    def _pick(self, request: ChatRequest) -> Node | None:
        """None means this machine."""
        local_load = self.local.capacity().outstanding_tokens
        best: Node | None = None
        best_load = local_load
        for node in self.nodes:
            if node.healthy and node.in_flight < best_load:
                best, best_load = node, node.in_flight
        return best

    def capacity(self) -> Capacity:
        """This machine's: a node's queue is its own, and a request goes where the load is least."""
        return self.local.capacity()

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        node = None if confidence else self._pick(request)
        if node is None:
            self.local_served += 1
            return await self.local.complete(request, confidence=confidence)
        cost = self._cost(request)
        node.in_flight += cost
        try:
            answer = await node.client.complete(request)
        except EdgewayError as exc:
            self._down(node, exc)
            self.local_served += 1
            return await self.local.complete(request)
        finally:
            node.in_flight -= cost
        node.served += 1
        answer.body["model"] = self.name
        return answer

    async def embed(self, request: ChatRequest) -> Answer:
        return await self.local.embed(request)  # embeddings are cheap: no node is worth the hop

    @property
    def probe(self) -> Probe | None:
        return self.local.probe

    async def read_first(
        self, request: ChatRequest, keep: Callable[[float], bool], bound: int | None = None
    ) -> EdgeRead:
        """Read on this machine: a node's reading would come back over the wire as its answer."""
        self.local_served += 1
        return await self.local.read_first(request, keep, bound)

    async def stream(self, request: ChatRequest) -> ChunkStream:
        node = self._pick(request)
        if node is None:
            self.local_served += 1
            return await self.local.stream(request)
        cost = self._cost(request)
        node.in_flight += cost
        try:
            stream = await node.client.stream(request)
        except EdgewayError as exc:
            node.in_flight -= cost
            self._down(node, exc)
            self.local_served += 1
            return await self.local.stream(request)
        node.served += 1
        return _Settling(stream, node, cost)

    # --- health ---------------------------------------------------------------------------
    def _down(self, node: Node, exc: Exception) -> None:
        if node.healthy:
            log.warning("edge node %s failed (%s); not sending to it until a health check passes", node.url, exc)
        node.healthy = False

    async def check(self) -> None:
        for node in self.nodes:
            try:
                status = await self._pool.get(node.url + "/models", node.headers, timeout_s=2)
                ok = status == 200
                if status in (401, 403) and node.healthy:
                    log.warning(
                        "edge node %s refuses our key (HTTP %s): set edge.nodes[].api_key to one of its app keys",
                        node.url,
                        status,
                    )
            except (HTTPError, TimeoutError):
                ok = False
            if ok and not node.healthy:
                log.info("edge node %s is healthy again", node.url)
            node.healthy = ok

    async def watch(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(HEALTH_EVERY_S)

    def status(self) -> list[dict[str, object]]:
        here = {"url": "local", "outstanding_tokens": self.local.capacity().outstanding_tokens}
        return [{**here, "served": self.local_served}] + [
            {"url": n.url, "healthy": n.healthy, "outstanding_tokens": n.in_flight, "served": n.served}
            for n in self.nodes
        ]


class _Settling:
    """A node's stream that gives its tokens back to the balance when it ends."""

    def __init__(self, inner: ChunkStream, node: Node, cost: int) -> None:
        self._inner, self._node, self._cost = inner, node, cost
        self._settled = False

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    def _settle(self) -> None:
        if not self._settled:
            self._settled = True
            self._node.in_flight -= self._cost

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for chunk in self._inner:
                yield chunk
        finally:
            self._settle()

    async def aclose(self) -> None:
        self._settle()
        await self._inner.aclose()
