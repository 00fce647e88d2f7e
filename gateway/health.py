"""Liveness, readiness and the model list."""

from __future__ import annotations

import dataclasses
import time

from prometheus_client import generate_latest
from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from gateway.running import gateway_of
from router.errors import ModelNotFound

_CREATED = int(time.time())


async def healthz(request: Request) -> Response:
    return JSON({"status": "ok"})


async def readyz(request: Request) -> Response:
    gateway = gateway_of(request)
    ready = gateway.edge.ready
    store = gateway.ledger.status()
    body = {
        "status": ("ready" if store == "ok" else "degraded") if ready else "loading",
        "store": store,
        "ready_seconds": None if gateway.ready_seconds is None else round(gateway.ready_seconds, 3),
        "edge": [dataclasses.asdict(s) for s in gateway.edge.states()],
        "cloud": [m.name for m in gateway.config.cloud.models],
        "policies": gateway.policies.status(),
        "circuits": {name: b.as_dict() for name, b in gateway.router.breakers.items()},
        "edge_nodes": {g.name: g.status() for g in gateway.edge_groups()},
    }
    return JSON(body, status_code=200 if ready else 503)


def _model_objects(request: Request) -> list[dict[str, object]]:
    """The models the caller's app may use: an app its policy keeps off the cloud
    (`allow_cloud: false`) is shown the edge's only."""
    gateway = gateway_of(request)
    caller = gateway.keys.identify(request.headers.get("authorization")).now()
    data: list[dict[str, object]] = [
        {"id": "auto", "object": "model", "created": _CREATED, "owned_by": "edgeway-router"}
    ]
    data += [
        {"id": info.name, "object": "model", "created": _CREATED, "owned_by": f"edgeway-{info.tier}"}
        for info in gateway.router.catalog.models.values()
        if caller.cloud or info.tier == "edge"
    ]
    return data


async def models(request: Request) -> Response:
    return JSON({"object": "list", "data": _model_objects(request)})


async def model(request: Request) -> Response:
    """GET /v1/models/{id}: clients call it to check that a model exists before using it."""
    wanted = request.path_params["model"]
    for found in _model_objects(request):
        if found["id"] == wanted:
            return JSON(found)
    raise ModelNotFound(
        f"The model {wanted!r} does not exist on this gateway for this app; GET /v1/models lists the "
        f"models it may use.",
        param="model",
    )


async def metrics(request: Request) -> Response:
    """GET /metrics: Prometheus text exposition (gateway/metrics.py says what is counted)."""
    registry = gateway_of(request).metrics.registry
    return Response(generate_latest(registry), media_type="text/plain; version=0.0.4; charset=utf-8")
