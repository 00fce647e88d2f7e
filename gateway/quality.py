"""GET /api/quality: what the shadow comparisons say about an app, beside what it saved.

`app`, `from`, `to` as in /api/usage (an app key sees its own app), and `target` (the quality to
keep, 0.95 by default). The answer: the comparisons made and their verdicts, the share of
edge-served requests whose answer was as good as the cloud's (with its 95% interval), the quality
retained against all-cloud for the period's edge share, that share by complexity bucket (the app's
own calibration curve), the money the period saved and the comparisons cost, and how well the
app's router in use ranks these comparisons: its APGR (0.5 = a coin) and the edge share its best
threshold for `target` would give, on these same requests; and the same for each step of the app's
ladders between two cloud models that was compared (`steps`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from gateway.running import Gateway, gateway_of
from gateway.usage import period, summarize
from policies.schema import AUTO
from router import fitting, quality
from router.app_router import AppRouter
from router.comparisons import Comparison, StepComparison
from router.errors import InvalidRequest
from router.ladder import step_key
from router.ledger import APPS_OWN, UsageRow
from router.routing import Router
from router.routings import Example, from_comparison, step_examples

PARAMS = {"app", "from", "to", "key", "target"}
DEFAULT_TARGET = 0.95


async def api_quality(request: Request) -> Response:
    unknown = sorted(set(request.query_params) - PARAMS)
    if unknown:
        raise InvalidRequest(f"Unknown parameter {unknown[0]!r}; expected app, from, to or target.", param=unknown[0])
    target = _target(request.query_params.get("target"))
    app, since, until = period(request, "quality")
    gateway = gateway_of(request)
    comparisons = await asyncio.to_thread(gateway.shadows.comparisons.comparisons, app, since, until)
    rows: list[UsageRow] = await asyncio.to_thread(gateway.ledger.rows, app, since, until)
    requests = [r for r in rows if r.kind in APPS_OWN]
    money = summarize(requests)
    served = [r for r in requests if r.route in ("edge", "cloud")]
    edge_share = sum(r.route == "edge" for r in served) / len(served) if served else 0.0
    edge_as_good = quality.as_good([c for c in comparisons if c.served == "edge"])
    return JSON(
        {
            "app": app,
            "from": since,
            "to": until,
            "generated_at": time.time(),
            "comparisons": len(comparisons),
            "verdicts": dict(Counter(c.verdict for c in comparisons)),
            "edge_served_as_good": edge_as_good.as_dict(),
            "all_as_good": quality.as_good(comparisons).as_dict(),
            "edge_share": round(edge_share, 4),
            "quality_retained": quality.retained(edge_share, edge_as_good),
            "by_complexity": quality.by_complexity(comparisons),
            "savings_usd": money["savings_usd"],
            "cost_usd": money["cost_usd"],
            "counterfactual_usd": money["counterfactual_usd"],
            "shadow_usd": round(sum(c.shadow_usd + c.judge_usd for c in comparisons), 6),
            "router": _router_quality(gateway.router, app, _reading(gateway, app), comparisons, target),
            "steps": _steps(
                gateway.router,
                app,
                await asyncio.to_thread(gateway.shadows.comparisons.steps, app, since, until),
                target,
            ),
            # compared, failed, and why samples were skipped, since this replica started; and those under way
            "this_replica": {**gateway.shadows.stats, "in_flight": gateway.shadows.in_flight},
        }
    )


def _target(value: str | None) -> float:
    if value is None:
        return DEFAULT_TARGET
    try:
        target = float(value)
    except ValueError:
        target = -1.0
    if not 0 < target <= 1:
        raise InvalidRequest("target must be a quality to keep, in (0, 1].", param="target")
    return target


def _steps(routing: Router, app: str | None, compared: list[StepComparison], target: float) -> list[dict[str, Any]]:
    """Each ladder step between two cloud models that was compared in the period: its verdicts,
    how often the lower model's answer was as good as the upper's, what the comparisons cost, and
    how the step's router in use ranks them (`/api/quality`'s `router`, for the step)."""
    out = []
    for (step_app, lower, upper), rows in sorted(_by_step(compared).items()):
        found = step_examples(rows, step_app, lower, upper)
        ranked = fitting.ranked(found)
        router = routing.routers.current(step_key(step_app, lower, upper), None)
        judged = [e for e in found if e.edge is not None]
        out.append(
            {
                "app": step_app,
                "lower": lower,
                "upper": upper,
                "comparisons": len(rows),
                "verdicts": dict(Counter(c.verdict for c in rows)),
                "lower_as_good": round(sum(e.edge or 0.0 for e in judged) / len(judged), 4) if judged else None,
                "shadow_usd": round(sum(c.shadow_usd + c.judge_usd for c in rows), 6),
                "router": {
                    "version": router.version,
                    "apgr": _apgr(router, ranked),
                    "lower_share_at_target": fitting.threshold_for(router, found, target).edge_share if found else None,
                    "ranked": len(ranked),
                },
            }
        )
    return out


def _by_step(compared: list[StepComparison]) -> dict[tuple[str, str, str], list[StepComparison]]:
    grouped: dict[tuple[str, str, str], list[StepComparison]] = {}
    for c in compared:
        grouped.setdefault((c.app, c.lower, c.upper), []).append(c)
    return grouped


def _reading(gateway: Gateway, app: str | None) -> tuple[str | None, str | None]:
    """The edge model an `auto` rule of `app` answers on, and the one whose reading scores it
    (None: that edge model's own)."""
    policy = gateway.policy_of(app) if app is not None else None
    if policy is None:
        return next((n for n, m in gateway.router.models.items() if m.tier == "edge"), None), None
    return policy.resolve("edge", AUTO), policy.spec.router.reader


def _router_quality(
    routing: Router,
    app: str | None,
    reading: tuple[str | None, str | None],
    comparisons: list[Comparison],
    target: float,
) -> dict[str, Any]:
    """The app's router in use, measured on the period's comparisons (recomputed from what each one
    kept of the request: its text prior, its reading, its features)."""
    edge, reader = reading
    if app is None or edge is None:
        return {"version": None, "apgr": None, "edge_share_at_target": None, "ranked": 0}
    router = routing.auto.app_router(app, edge, reader)
    found = [e for c in comparisons if (e := from_comparison(c)) is not None]
    ranked = fitting.ranked(found)
    share = fitting.threshold_for(router, found, target).edge_share if found else None
    return {
        "version": router.version,
        "apgr": _apgr(router, ranked),
        "edge_share_at_target": share,
        "target": target,
        "ranked": len(ranked),
    }


def _apgr(router: AppRouter, ranked: list[Example]) -> float | None:
    """How well `router` ranks the examples whose both answers' quality is known (None: it cannot
    be told, with none, or where the upper answer recovers nothing)."""
    if not ranked:
        return None
    lower, upper = (np.array([getattr(e, side) for e in ranked], dtype=float) for side in ("edge", "cloud"))
    value = fitting.apgr(fitting.scores(router, ranked), lower, upper)
    return None if math.isnan(value) else round(value, 4)
