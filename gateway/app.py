"""The edgeway ASGI application: its routes, its life (start-up, the batch runner, shutdown) and
how an error is answered in the shape of the API it came in on."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from classifiers.privacy.known import Known
from edge_runtime.config import ModelRole
from gateway import (
    audit,
    batches,
    chat,
    completions,
    embeddings,
    feedback,
    files,
    health,
    masked_logs,
    messages,
    openapi,
    quality,
    responses,
    telemetry,
    usage,
)
from gateway.access_log import AccessLog
from gateway.batch_runner import BatchRunner
from gateway.config import DEFAULT_POLICY_FILE, GatewayConfig
from gateway.http import JSON, error_response
from gateway.pipeline import WholeDialect, internal_error
from gateway.probes import attach_probes
from gateway.running import Gateway, build_gateway
from policies.reload import PolicyFiles
from router import cloud
from router.errors import EdgewayError, NotFound

log = logging.getLogger("edgeway")
STATIC = Path(__file__).resolve().parent / "static"

SHADOW_DRAIN_S = 10.0


def _freeze_heap() -> None:
    """Move what start-up made (models, libraries, config) out of the garbage collector's sight.

    A full collection walks every object alive; with the start-up heap in it, one took about 30 ms
    and showed as the p99 of requests at concurrency 16 (48 ms against a p50 of 11 ms; 14 ms with
    the heap frozen)."""
    gc.collect()
    gc.freeze()


async def _watch_policies(policies: PolicyFiles, every: float = 0.5) -> None:
    while True:
        await asyncio.sleep(every)
        await asyncio.to_thread(policies.refresh)


# Every endpoint, which /openapi.json describes (tests/test_openapi.py holds the two together).
ROUTES = [
    Route("/v1/chat/completions", chat.completions, methods=["POST"]),
    Route(messages.PATH, messages.messages, methods=["POST"]),
    Route(messages.COUNT_PATH, messages.count_tokens, methods=["POST"]),
    Route("/v1/responses", responses.responses, methods=["POST"]),
    Route("/v1/completions", completions.completions, methods=["POST"]),
    Route("/v1/embeddings", embeddings.embeddings, methods=["POST"]),
    Route("/api/cache", usage.clear_cache, methods=["DELETE"]),
    Route("/v1/route", chat.route, methods=["POST"]),
    Route("/v1/feedback", feedback.feedback, methods=["POST"]),
    Route("/v1/models", health.models, methods=["GET"]),
    Route("/v1/models/{model:path}", health.model, methods=["GET"]),
    Route("/healthz", health.healthz, methods=["GET"]),
    Route("/readyz", health.readyz, methods=["GET"]),
    Route("/metrics", health.metrics, methods=["GET"]),
    Route("/api/usage", usage.api_usage, methods=["GET"]),
    Route("/api/audit", audit.api_audit, methods=["GET"]),
    Route("/api/quality", quality.api_quality, methods=["GET"]),
    Route("/v1/files", files.upload, methods=["POST"]),
    Route("/v1/files", files.list_files, methods=["GET"]),
    Route("/v1/files/{file_id}", files.retrieve, methods=["GET"]),
    Route("/v1/files/{file_id}", files.delete, methods=["DELETE"]),
    Route("/v1/files/{file_id}/content", files.file_content, methods=["GET"]),
    Route("/v1/batches", batches.create, methods=["POST"]),
    Route("/v1/batches", batches.list_batches, methods=["GET"]),
    Route("/v1/batches/{batch_id}", batches.retrieve, methods=["GET"]),
    Route("/v1/batches/{batch_id}/cancel", batches.cancel, methods=["POST"]),
    Route("/openapi.json", openapi.openapi, methods=["GET"]),
    Route("/dashboard", usage.dashboard, methods=["GET"]),
]


def create_app(gateway: Gateway | GatewayConfig, *, started: float | None = None) -> Starlette:
    if isinstance(gateway, GatewayConfig):
        gateway = build_gateway(gateway)
    config = gateway.config
    if started is not None:
        gateway.started = started

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # uvicorn has configured its loggers by now
        masked_logs.install(gateway.router.client_values, _model_names(config))
        tracing = telemetry.start(os.environ)
        # LiteLLM takes ~10 s to import: beside the edge's load, and before ready, so that the first
        # request to a model reached through it does not wait for it (Anthropic's and OpenAI-compatible
        # models need none)
        litellm = asyncio.create_task(cloud.warm_up()) if cloud.needs_litellm(config.cloud.models) else None
        # the MCP servers' sessions (started beside the edge's load) and /mcp's, held for the gateway's life
        tools = contextlib.AsyncExitStack()
        await tools.enter_async_context(gateway.mcp.running())
        await asyncio.to_thread(gateway.edge.load)
        await gateway.mcp.ready()
        probes_dir = config.resolve(config.edge.probes)
        await asyncio.to_thread(attach_probes, gateway.edge, gateway.router, probes_dir)
        if litellm is not None:
            await litellm
        _freeze_heap()
        gateway.ready_seconds = time.perf_counter() - gateway.started
        _log_ready(gateway)
        if gateway.policies.loaded:
            task = asyncio.create_task(_watch_policies(gateway.policies))
            gateway.background.add(task)
        for group in gateway.edge_groups():
            task = asyncio.create_task(group.watch())
            gateway.background.add(task)
        runner = BatchRunner(gateway)
        batch_lines = asyncio.create_task(runner.run())
        try:
            yield
        finally:
            await tools.aclose()
            # lines in flight end and keep their results; the rest run after a restart
            await runner.stop(batch_lines, config.server.shutdown_grace_s)
            for task in gateway.background:
                task.cancel()
            with contextlib.suppress(TimeoutError):  # comparisons under way finish, within reason
                await asyncio.wait_for(gateway.shadows.drain(), SHADOW_DRAIN_S)
            await gateway.http.close()
            await asyncio.to_thread(gateway.ledger.close)
            await asyncio.to_thread(gateway.edge.close)
            if tracing is not None:
                await asyncio.to_thread(tracing.shutdown)  # the spans still batched go out first

    app = Starlette(
        # /mcp speaks MCP's JSON-RPC, not an OpenAPI endpoint: beside ROUTES, not in them
        routes=[
            *ROUTES,
            Route("/mcp", gateway.mcp),
            Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
        ],
        middleware=[Middleware(AccessLog)],
        exception_handlers={EdgewayError: _edgeway_error, HTTPException: _http_error, Exception: _unexpected},
        lifespan=lifespan,
    )
    app.state.gateway = gateway  # read through gateway.running.gateway_of
    return app


def _model_names(config: GatewayConfig) -> list[str]:
    """What the log names models by: their names, and a cloud model's provider id with and
    without its provider ("anthropic/claude-3-5-haiku-latest", "claude-3-5-haiku-latest")."""
    names = [m.name for m in config.edge.models]
    for model in config.cloud.models:
        names += [model.name, model.provider_model, model.provider_model_id]
    return names


def _log_ready(gateway: Gateway) -> None:
    config = gateway.config
    edge = ", ".join(
        f"{m.name} ({'reader, ' * (m.role is ModelRole.READER)}n_ctx {m.n_ctx})" for m in config.edge.models
    )
    edge = edge or "none"
    clouds = ", ".join(f"{m.name} ({m.provider_model})" for m in config.cloud.models) or "none"
    log.info(
        "edge models: %s (loaded in %.2f s); cloud models: %s", Known(edge), gateway.edge.load_seconds, Known(clouds)
    )
    if gateway.keys.open:
        log.warning("no apps are configured: serving WITHOUT authentication, on %s only", config.server.host)
    if config.default_policy == str(DEFAULT_POLICY_FILE) and config.edge.answering and config.cloud.models:
        edge, cloud = config.edge.answering[0].name, config.cloud.models[0].name
        log.info(
            "no config: private data stays on %s; the rest goes to %s or %s as %s's reading of each "
            "prompt decides (the default policy, %s)",
            Known(edge),
            Known(edge),
            Known(cloud),
            Known(edge),
            Known(str(DEFAULT_POLICY_FILE)),
        )
    for model in config.cloud.models:
        if not gateway.router.prices[model.name].known:
            log.warning(
                "cloud model %s (%s) has no price: neither `price:` in the config nor LiteLLM's map gives one; "
                "its requests are charged $0, marked unpriced in the ledger and counted as no saving",
                Known(model.name),
                Known(model.provider_model),
            )
    apps = ", ".join(f"{a.name} ({a.policy or config.default_policy or 'the plain rules'})" for a in config.apps)
    log.info("apps: %s; store: %s", Known(apps or "none (one open app)"), Known(_without_credentials(config.store)))
    url = f"http://{config.server.host}:{config.server.port}"
    dashboard = (
        f"{url}/dashboard?key=<admin key>" if config.admin_key else f"{url}/dashboard (set admin_key to open it)"
    )
    log.info("edgeway ready in %.2f s on %s; dashboard: %s", gateway.ready_seconds, Known(url), Known(dashboard))


def _without_credentials(url: str) -> str:
    """A store URL as a log may say it: a password in it (`redis://:secret@host`) left out."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


# The API each endpoint speaks, for its errors; the rest speak OpenAI's (chat.CHAT's shape).
DIALECTS: dict[Any, WholeDialect] = {
    chat.completions: chat.CHAT,
    completions.completions: completions.COMPLETIONS,
    embeddings.embeddings: embeddings.EMBEDDINGS,
    responses.responses: responses.RESPONSES,
    messages.messages: messages.MESSAGES,
    messages.count_tokens: messages.MESSAGES,
}


def _render(request: Request, exc: EdgewayError, headers: dict[str, str] | None = None) -> JSON:
    """The error in the shape of the API the request came in on: its endpoint's dialect, or for a
    path no endpoint serves, the API it is under (Anthropic's under /v1/messages)."""
    dialect = DIALECTS.get(request.scope.get("endpoint"))
    if dialect is None and request.url.path.startswith(messages.PATH):
        dialect = messages.MESSAGES
    if dialect is None:
        return error_response(exc, headers)
    return JSON(dialect.error_body(exc), status_code=exc.status, headers={**exc.headers(), **(headers or {})})


async def _edgeway_error(request: Request, exc: Exception) -> JSON:
    assert isinstance(exc, EdgewayError)
    request.state.error = exc.code or exc.type  # for the request's access line
    return _render(request, exc, {"x-edgeway-request-id": getattr(request.state, "request_id", "")})


async def _http_error(request: Request, exc: Exception) -> JSON:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        if request.url.path.startswith("/v1/"):
            return _render(request, NotFound(f"Unknown path {request.url.path}; GET /openapi.json lists them."))
        return _render(
            request, NotFound(f"Unknown path {request.url.path}; the OpenAI and Anthropic APIs are under /v1.")
        )
    if exc.status_code == 405:
        error = EdgewayError(f"Method {request.method} is not allowed on {request.url.path}.")
        error.status, error.type, error.code = 405, "invalid_request_error", "method_not_allowed"
        return _render(request, error)
    error = EdgewayError(exc.detail)
    error.status = exc.status_code
    return _render(request, error)


async def _unexpected(request: Request, exc: Exception) -> JSON:
    request_id = getattr(request.state, "request_id", "")
    log.exception("unexpected error in request %s", Known(request_id))
    return _render(request, internal_error(request_id), {"x-edgeway-request-id": request_id})
