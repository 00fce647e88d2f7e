"""What one running gateway holds (`Gateway`), built whole from its config by `build_gateway`, and
`gateway_of(request)`: the endpoints' typed way to it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

from classifiers import Scorer
from edge_runtime import EdgePool
from gateway.auth import App, AppKeys, policy_app
from gateway.config import GatewayConfig
from gateway.mcp.service import McpService, NoServers
from gateway.metrics import RequestMetrics
from policies.policy import AppPolicy
from policies.reload import PolicyFiles
from router import cloud
from router.cache import open_cache
from router.caller import Caller
from router.comparisons import Comparisons
from router.documents import Documents, MemoryDocuments, open_documents
from router.edge import EdgeModel
from router.edge_group import EdgeGroup
from router.egress import EgressLog
from router.installed import InstalledRouters
from router.ledger import Store, open_store
from router.policy_rules import PolicyRules
from router.pricing import edge_price_of, price_of
from router.routing import Router
from router.rules import PlainRules
from router.shadow import Shadower
from router.tier import Tier

DEFAULT_POLICY = "(default policy)"
MEMORY_EGRESS = 10_000  # egress records a memory store keeps (docs/ledger.md)


class Bell:
    """Rung when a batch is created or its cancel asked, so that the batch runner listening looks
    at the store at once rather than at its next poll."""

    def __init__(self) -> None:
        self._listener: Callable[[], None] = lambda: None

    def listen(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    def ring(self) -> None:
        self._listener()


@dataclass
class Gateway:
    config: GatewayConfig
    edge: EdgePool
    router: Router
    keys: AppKeys
    http: cloud.HttpPool
    policies: PolicyFiles
    shadows: Shadower
    documents: Documents
    ledger: Store  # the router's store, for the gateway's queries of it (usage, quality, health)
    metrics: RequestMetrics
    batch_bell: Bell = field(default_factory=lambda: Bell())
    started: float = field(default_factory=time.perf_counter)
    ready_seconds: float | None = None
    background: set[asyncio.Task[None]] = field(default_factory=set)
    mcp: McpService = field(init=False)  # `/mcp`: the tools of the config's MCP servers

    def policy_of(self, app: str) -> AppPolicy | None:
        """The policy `app` decides by now: its own file, else the default policy; None: the plain rules."""
        loaded = self.policies.loaded
        source = app if app in loaded else DEFAULT_POLICY if DEFAULT_POLICY in loaded else None
        return None if source is None else self.policies.current(source)

    def edge_groups(self) -> list[EdgeGroup]:
        return [m for m in self.router.models.values() if isinstance(m, EdgeGroup)]


def gateway_of(request: Request) -> Gateway:
    """The gateway serving `request` (`gateway.app.create_app` puts it in the app's state)."""
    gateway: Gateway = request.app.state.gateway
    return gateway


def build_gateway(config: GatewayConfig) -> Gateway:
    """Everything a running gateway holds. Raises FileError if a policy file is invalid."""
    edge = EdgePool(config.edge.models)
    http = cloud.HttpPool()
    answering = {m.name for m in config.edge.answering}
    locals_ = {name: EdgeModel(engine) for name, engine in edge.engines.items() if name in answering}
    # the `role: reader` models: they read prompts for the apps whose router names them, never answer
    readers: dict[str, Tier] = {m.name: EdgeModel(edge.engines[m.name]) for m in config.edge.readers}
    models: dict[str, Tier] = dict(locals_)
    if config.edge.nodes and config.edge.answering:
        # Remote edge nodes serve the first edge model too; requests balance by outstanding tokens.
        first = config.edge.answering[0].name
        models[first] = EdgeGroup(locals_[first], config.edge.nodes, http)
    models.update({m.name: cloud.connect(m, http) for m in config.cloud.models})
    prices = {m.name: price_of(m) for m in config.cloud.models}
    prices.update({m.name: edge_price_of(m.usd_per_1m_tokens, m.usd_per_hour) for m in config.edge.answering})
    store = open_store(config.store)
    seal = config.seal()
    documents = open_documents(config.store, seal)
    aliases = {alias: m.name for m in config.cloud.models for alias in (m.provider_model, m.provider_model_id)}
    cache = open_cache(config.store, seal)
    # a memory store's audit keeps the latest records only: each holds a body (compressed)
    egress = EgressLog(MemoryDocuments(keep=MEMORY_EGRESS) if isinstance(documents, MemoryDocuments) else documents)
    router = Router(models, Scorer(), prices, store, cache, InstalledRouters(documents), aliases, egress, readers)
    shadows = Shadower(router, Comparisons(documents), store)
    names = config.model_names()

    files = {a.name: config.resolve(a.policy) for a in config.apps if a.policy}
    if config.default_policy:
        files[DEFAULT_POLICY] = config.resolve(config.default_policy)
    policies = PolicyFiles(files, names, shared=DEFAULT_POLICY)

    first_cloud = names.cloud[0] if names.cloud else None

    def app_for(name: str, log_prompts: bool = False) -> App:
        source = name if name in files else DEFAULT_POLICY if DEFAULT_POLICY in files else None
        if source is None:
            plain = Caller(name, PlainRules(router.catalog), reference=first_cloud, log_prompts=log_prompts)
            return App(name, lambda: plain)
        return policy_app(name, PolicyRules(lambda: policies.current(source)), first_cloud, log_prompts)

    apps = [(a.key.get_secret_value(), app_for(a.name, a.log_prompts)) for a in config.apps]
    open_app = None if config.apps else app_for("default")
    gateway = Gateway(
        config,
        edge,
        router,
        AppKeys(apps, open_app),
        http,
        policies,
        shadows,
        documents,
        store,
        RequestMetrics(policies, edge, router),
    )
    gateway.mcp = _mcp_of(gateway, store, egress) if config.mcp.servers else NoServers()
    return gateway


def _mcp_of(gateway: Gateway, store: Store, egress: EgressLog) -> McpService:
    """`/mcp` serving the config's MCP servers. Imported here, not above: the MCP SDK takes 0.46 s
    to import, which a gateway whose config names no MCP server does not pay (`service`)."""
    from gateway.mcp.calls import ToolCalls
    from gateway.mcp.endpoint import McpEndpoint
    from gateway.mcp.upstream import Upstreams

    upstreams = Upstreams(gateway.config.mcp.servers)
    tools = ToolCalls(upstreams, gateway.policy_of, gateway.router.scorer, store, egress, gateway.metrics)
    return McpEndpoint(tools, gateway.keys)
