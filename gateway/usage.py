"""GET /api/usage (the ledger, filtered and grouped, or as CSV) and GET /dashboard.

An app key sees its own app only; the admin key sees every app. A browser passes the admin key
as `?key=` to /dashboard, whose script then sends it as a bearer token.
"""

from __future__ import annotations

import asyncio
import csv
import hmac
import io
import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from gateway.http import JSON
from gateway.percentiles import percentile
from gateway.running import gateway_of
from router.errors import InvalidRequest, Unauthorized
from router.ledger import APPS_OWN, RowKind, UsageRow

GROUPS = ("app", "route", "model", "rule", "day", "kind")
DASHBOARD = Path(__file__).resolve().parent / "static" / "dashboard.html"
KEY_PAGE = DASHBOARD.parent / "key.html"  # what a browser without the admin key is shown


def caller_app(request: Request) -> str | None:
    """None for the admin (every app); else the one app this key belongs to."""
    gateway = gateway_of(request)
    header = request.headers.get("authorization", "")
    key = header[7:].strip() if header.lower().startswith("bearer ") else request.query_params.get("key", "")
    admin = gateway.config.admin_key
    if admin is not None and key and hmac.compare_digest(key.encode(), admin.get_secret_value().encode()):
        return None
    if gateway.keys.open and admin is None:
        return None  # no apps, no admin key: a loopback-only gateway, its operator sees everything
    app = gateway.keys.find(key) if key else None
    if app is None:
        raise Unauthorized("Send the admin key, or an app key, as 'Authorization: Bearer <key>'.")
    return str(app.name)


def time_param(value: str | None, name: str) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or not 0 <= seconds < 1e11:
            raise InvalidRequest(f"'{name}' must be a finite time after 1970; got {value!r}.", param=name)
        return seconds
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(
            f"'{name}' must be a date (2026-11-30), a date-time or Unix seconds; got {value!r}.", param=name
        ) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _percentile(values: list[float], q: float) -> float | None:
    return round(percentile(values, q), 2) if values else None


def summarize(rows: list[UsageRow]) -> dict[str, Any]:
    """The rows' figures. Savings are counted over the rows that have a counterfactual: an app with
    no cloud (`allow_cloud: false`) saves nothing against a model it can never use, so where no row
    has one, the counterfactual and the savings are None."""
    cost = sum(r.cost_usd for r in rows)
    compared = [(r.counterfactual_usd, r.cost_usd) for r in rows if r.counterfactual_usd is not None]
    counterfactual = sum(c for c, _ in compared)
    saved = counterfactual - sum(spent for _, spent in compared)
    latencies = [r.latency_ms for r in rows if r.status == 200]
    return {
        "requests": len(rows),
        "cache_hits": sum(r.cache == "hit" for r in rows),
        "cache_saved_usd": round(sum(r.counterfactual_usd or 0.0 for r in rows if r.cache == "hit"), 6),
        "errors": sum(r.status >= 400 for r in rows),
        "unpriced_requests": sum(not r.priced for r in rows),  # answered by a model with no known price
        "edge_requests": sum(r.route == "edge" for r in rows),
        "cloud_requests": sum(r.route == "cloud" for r in rows),
        "prompt_tokens": sum(r.prompt_tokens for r in rows),
        "completion_tokens": sum(r.completion_tokens for r in rows),
        # the providers' prompt caches: their share of the prompts, and what they saved
        "cache_read_tokens": sum(r.cache_read_tokens for r in rows),
        "cache_write_tokens": sum(r.cache_write_tokens for r in rows),
        "prompt_cache_saved_usd": round(sum(r.prompt_cache_saved_usd for r in rows), 6),
        "cost_usd": round(cost, 6),
        "counterfactual_usd": round(counterfactual, 6) if compared else None,
        "savings_usd": round(saved, 6) if compared else None,
        "savings_pct": round(100 * saved / counterfactual, 1) if counterfactual else None,
        "latency_p50_ms": _percentile(latencies, 0.5),
        "latency_p95_ms": _percentile(latencies, 0.95),
        "ttft_p50_ms": _percentile([r.ttft_ms for r in rows if r.ttft_ms is not None], 0.5),
    }


def _budgets(request: Request, only: str | None) -> list[dict[str, Any]]:
    gateway = gateway_of(request)
    out = []
    for app in gateway.keys.apps():
        budget = app.now().budget
        if budget is None or (only is not None and app.name != only):
            continue
        out.append(
            {
                "app": app.name,
                "daily_usd": budget.caps.daily_usd,
                "monthly_usd": budget.caps.monthly_usd,
                "left_usd": round(gateway.ledger.left(app.name, budget.caps) or 0.0, 6),
                "on_exhausted": budget.on_exhausted,
            }
        )
    return out


def period(request: Request, what: str) -> tuple[str | None, float | None, float | None]:
    """The `app`, `from` and `to` a report is asked for, as far as the caller's key may see."""
    only, params = caller_app(request), request.query_params
    app = params.get("app") or None
    if only is not None:
        if app not in (None, only):
            raise Unauthorized(f"This key belongs to app {only!r} and cannot read another app's {what}.")
        app = only
    since, until = time_param(params.get("from"), "from"), time_param(params.get("to"), "to")
    if since is not None and until is not None and since > until:
        raise InvalidRequest("'from' is after 'to'.", param="from")
    return app, since, until


async def api_usage(request: Request) -> Response:
    params = request.query_params
    app, since, until = period(request, "usage")
    group_by = params.get("group_by", "day")
    if group_by not in GROUPS:
        raise InvalidRequest(f"'group_by' must be one of {list(GROUPS)}; got {group_by!r}.", param="group_by")
    if params.get("format") not in (None, "json", "csv"):
        raise InvalidRequest(f"'format' must be json or csv; got {params.get('format')!r}.", param="format")
    unknown = sorted(set(params) - {"app", "from", "to", "group_by", "format", "key"})
    if unknown:
        raise InvalidRequest(
            f"Unknown parameter {unknown[0]!r}; expected app, from, to, group_by or format.", param=unknown[0]
        )
    everything = await _rows(request, app, since, until)
    if params.get("format") == "csv":
        return _csv(everything)
    # Shadow comparisons' spend is its own kind: never in the app's request figures. Batch lines
    # are the app's requests, and also shown apart, with the edge hours they took.
    rows = [r for r in everything if r.kind in APPS_OWN]
    shadow_usd = sum(r.cost_usd for r in everything if r.kind not in APPS_OWN)
    batch = [r for r in rows if r.kind == RowKind.BATCH]
    groups: dict[str, list[UsageRow]] = {}
    for row in rows:
        groups.setdefault(row.day if group_by == "day" else str(getattr(row, group_by)), []).append(row)
    return JSON(
        {
            "app": app,
            "from": since,
            "to": until,
            "group_by": group_by,
            "generated_at": time.time(),
            "totals": {**summarize(rows), "shadow_usd": round(shadow_usd, 6)},
            "batch": {
                **summarize(batch),
                "edge_hours": round(sum(r.latency_ms for r in batch if r.route == "edge") / 3.6e6, 4),
            },
            "groups": [{"key": key, **summarize(group)} for key, group in sorted(groups.items())],
            "split": [
                {"app": name, "route": route, "requests": n} for (name, route), n in sorted(_split(rows).items())
            ],
            "budgets": _budgets(request, app),
            "recent": [r.as_dict() for r in rows[-50:][::-1]],
        }
    )


async def _rows(request: Request, app: str | None, since: float | None, until: float | None) -> list[UsageRow]:
    store = gateway_of(request).ledger
    return await asyncio.to_thread(store.rows, app, since, until)


def _split(rows: list[UsageRow]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for r in rows:
        counts[(r.app, r.route)] = counts.get((r.app, r.route), 0) + 1
    return counts


def _csv(rows: list[UsageRow]) -> Response:
    """The rows as a spreadsheet reads them: `ts` as an ISO 8601 UTC time, booleans as true and
    false, numbers without exponents (a cost of 1.53e-05 is 0.0000153), nothing for None."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(UsageRow.columns())
    for row in rows:
        writer.writerow([csv_cell(c, getattr(row, c)) for c in UsageRow.columns()])
    return Response(
        out.getvalue(),
        media_type="text/csv",
        headers={"content-disposition": 'attachment; filename="edgeway-usage.csv"'},
    )


def csv_cell(column: str, value: object) -> object:
    if column == "ts" and isinstance(value, float):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="milliseconds")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.10f}".rstrip("0").rstrip(".") or "0"
    return "" if value is None else value


async def clear_cache(request: Request) -> Response:
    """DELETE /api/cache?app=NAME (the admin key): drop the app's cached answers."""
    if caller_app(request) is not None:
        raise Unauthorized("Clearing the response cache needs the admin key.")
    app = request.query_params.get("app")
    if not app:
        raise InvalidRequest("Name the app whose cache to clear: /api/cache?app=NAME.", param="app")
    gateway = gateway_of(request)
    deleted = await asyncio.to_thread(gateway.router.cache.clear, app)
    return JSON({"app": app, "deleted": deleted})


async def dashboard(request: Request) -> Response:
    """The dashboard, for the admin key; for a browser without it, a page that asks for it (401)."""
    try:
        admin = caller_app(request) is None
    except Unauthorized:
        admin = False
    if admin:
        return HTMLResponse(DASHBOARD.read_text(encoding="utf-8"))
    page = KEY_PAGE.read_text(encoding="utf-8")
    if gateway_of(request).config.admin_key is None:
        page = page.replace(
            "Enter the gateway's <code>admin_key</code> (from its config, or <code>EDGEWAY_ADMIN_KEY</code>).",
            "This gateway has no <code>admin_key</code>: set one in its config to open the dashboard.",
        )
    elif "key" in request.query_params:
        page = page.replace('<p id="why" class="muted">', '<p id="why" class="err">That is not the admin key. ')
    return HTMLResponse(page, status_code=401)
