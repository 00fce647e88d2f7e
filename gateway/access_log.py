"""One log line per request, once its answer is sent: an operator's way from a response's
`x-edgeway-request-id` to what happened.

    request 3f9c... POST /v1/chat/completions 200 41.2 ms app=bot route=edge model=smollm2 rule=default
    request 77ab... POST /v1/chat/completions 403 3.1 ms app=bot route=- model=- rule=secrets error=forbidden_by_policy
    request 5d01... POST /v1/messages 200 9.2 ms app=bot route=edge model=qwen rule=r fallback="gpt: 502 upstream_error"

The id, the method, the path (never its query, which may carry the dashboard's key), the status,
the time until the last byte went out, its app, route, model and the rule that decided (a denial's
too), an error's code, and where a fallback answered, which model failed first and why (as
`x-edgeway-fallback` says it). Never the prompt or any other part of the body: the ledger keeps what a
request cost, and a prompt only where its app says `log_prompts`. Logged by `edgeway.access` at
INFO; the polls of health, metrics and the dashboard, at DEBUG.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from classifiers.privacy.known import Known

log = logging.getLogger("edgeway.access")
# what dashboards, probes and scrapers ask again and again: their lines are DEBUG (an error is INFO)
POLLED = ("/healthz", "/readyz", "/metrics", "/dashboard", "/static/", "/api/usage", "/api/quality")


class AccessLog:
    """ASGI middleware: gives every HTTP request its id and logs its line when it ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = uuid.uuid4().hex
        started = time.perf_counter()
        status = 500  # unless a response starts: an exception the error handler answers outside this

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            level = logging.DEBUG if scope["path"].startswith(POLLED) and status < 400 else logging.INFO
            if log.isEnabledFor(level):
                elapsed_ms = (time.perf_counter() - started) * 1000
                fields = access_fields(scope, state, status, elapsed_ms)
                log.log(level, access_message(fields), fields)


def access_fields(scope: Scope, state: dict[str, Any], status: int, elapsed_ms: float) -> dict[str, Any]:
    """A request's line, field by field: the record's one mapping argument, which the plain line
    is written from and `--log-format json` writes as keys. None: not known (an unrouted request's
    model), written `-`; the optional fields (`OPTIONAL`) only where they are set."""
    # A route's own path is the gateway's; one with a client's part in it (a file id, an unknown
    # path) is read by the log masker, as every field that is not `Known`.
    path = scope["path"]
    fields: dict[str, Any] = {
        "request_id": Known(state["request_id"]),
        "method": Known(scope["method"]),
        "path": Known(path) if "endpoint" in scope and not scope.get("path_params") else path,
        "status": status,
        "latency_ms": round(elapsed_ms, 1),
        "app": _known(state.get("app_name")),
        "route": _known(state.get("route")),
        "model": _known(state.get("model")),
        "rule": _known(state.get("rule")),
    }
    for name in OPTIONAL:
        if state.get(name):
            fields[name] = Known(state[name])
    return fields


# set by the request's flow where they apply: an error's code; where a fallback answered, which
# model failed first and why (as `x-edgeway-fallback` says it)
OPTIONAL = ("error", "fallback")
TAGGED = ("app", "route", "model", "rule", *OPTIONAL)  # written `name=value` after the time


def access_message(fields: dict[str, Any]) -> str:
    """The plain line's format for `fields` (%-style, by name): a value with a space is quoted."""
    message = "request %(request_id)s %(method)s %(path)s %(status)d %(latency_ms).1f ms"
    for name in TAGGED:
        if name not in fields:
            continue
        value = fields[name]
        if value is None:
            message += f" {name}=-"
        else:
            message += f' {name}="%({name})s"' if " " in str(value) else f" {name}=%({name})s"
    return message


def _known(value: str | None) -> Known | None:
    return None if value is None else Known(value)
