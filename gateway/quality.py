"""GET /api/quality: what the shadow comparisons say about an app, beside what it saved.

`app`, `from`, `to` as in /api/usage (an app key sees its own app). The answer: the comparisons
made and their verdicts, the share of edge-served requests whose answer was as good as the
cloud's (with its 95% interval), the quality retained against all-cloud for the period's edge
share, that share by complexity bucket (the app's own calibration curve), and the money the
period saved and the comparisons cost.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from gateway.usage import period, summarize
from router import quality
from router.errors import InvalidRequest
from router.ledger import UsageRow

PARAMS = {"app", "from", "to", "key"}


async def api_quality(request: Request) -> Response:
    unknown = sorted(set(request.query_params) - PARAMS)
    if unknown:
        raise InvalidRequest(f"Unknown parameter {unknown[0]!r}; expected app, from or to.", param=unknown[0])
    app, since, until = period(request, "quality")
    gateway = request.app.state.gateway
    comparisons = await asyncio.to_thread(gateway.shadows.comparisons.comparisons, app, since, until)
    rows: list[UsageRow] = await asyncio.to_thread(gateway.router.store.rows, app, since, until)
    requests = [r for r in rows if r.kind == "request"]
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
            # compared, failed, and why samples were skipped, since this replica started; and those under way
            "this_replica": {**gateway.shadows.stats, "in_flight": gateway.shadows.in_flight},
        }
    )
