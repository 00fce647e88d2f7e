"""What the batch machinery reads of the running gateway (`gateway.app.Gateway` is one): its
config, its documents, its router and apps, the edge engines whose idle time batch lines use, and
the request metrics a settled line is counted in."""

from __future__ import annotations

from typing import Any, Protocol

from edge_runtime import EdgePool
from gateway.auth import AppKeys
from gateway.config import GatewayConfig
from router.documents import Documents
from router.routing import Router


class Held(Protocol):
    @property
    def config(self) -> GatewayConfig: ...

    @property
    def documents(self) -> Documents: ...

    @property
    def router(self) -> Router: ...

    @property
    def keys(self) -> AppKeys: ...

    @property
    def edge(self) -> EdgePool: ...

    @property
    def metrics(self) -> Any: ...  # gateway.metrics.RequestMetrics once the app is made, else None
