"""The egress audit: what left the premises, for whom, and the proof that nothing a local-only
rule covers did.

`GET /api/audit` (the admin key; `app`, `from`, `to`, `format=csv`) and `edgeway audit --config
CFG` list the records `router.egress` keeps: for each call to a cloud model, the request, app,
provider and model, why it went (answer, fallback, escalation, shadow, judge, batch), the rule,
the findings and whether each left masked or readable, and the body as it left (masked at rest).

`edgeway audit --check` reads each record of the period against the config's policies (`check`):
the policy decides again on the facts it decided on then, and on what a re-reading finds in the
body as kept (a value the scan missed then is found by a later, better one, or by a deeper reader
that is too slow for the hot path: `Reader`). The body is kept with everything found then masked,
and a placeholder is never a finding, so whatever is found now left as written. A record a
local-only rule covers, or one that left a finding readable under a masking rule, is a breach:
each is printed and the command exits 1.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from classifiers.forwarded import Key, forwarded
from classifiers.privacy.findings import PLACEHOLDER, Span
from classifiers.signals import Scorer
from gateway.http import JSON
from gateway.running import gateway_of
from gateway.usage import caller_app, csv_cell, period
from policies.conditions import Facts
from policies.policy import AppPolicy
from router.egress import Egress, Left
from router.errors import InvalidRequest, Unauthorized
from router.redaction import dotted

COLUMNS = (
    "ts", "request_id", "app", "provider", "model", "provider_model", "api", "purpose", "rule", "outcome",
    "findings", "body",
)  # fmt: skip


@dataclass(frozen=True)
class Breach:
    """A record the policy says should not have left as it did."""

    record: Egress
    rule: str  # the policy's rule for it now
    why: str

    def as_dict(self) -> dict[str, Any]:
        r = self.record
        return {"request_id": r.request_id, "app": r.app, "ts": r.ts, "model": r.model, "rule": self.rule,
                "why": self.why}  # fmt: skip


class Reader(Protocol):
    """A re-reading of one text that left: what in it is private, each with its type and span. The
    check runs after the fact, so a reader may be slower than the hot path's scan (a learned one)."""

    def __call__(self, text: str) -> Iterable[Span]: ...


def check(
    records: Iterable[Egress],
    policy_of: Callable[[str], AppPolicy | None],
    scorer: Scorer | None = None,
    readers: Sequence[Reader] = (),
) -> list[Breach]:
    """The records a policy does not allow to have left as they did: decided again on their facts
    and on what a re-reading finds in the body as kept (the `scorer`'s scan of the whole body, its
    split values joined, and each of `readers` on each of its texts): a rule that keeps them local,
    or a masking rule under which a finding left readable. An app without a policy file has no
    local-only rule."""
    breaches = []
    for record in records:
        policy = policy_of(record.app)
        if policy is None:
            continue
        then = frozenset(record.facts.get("pii", ()))
        breach = _breach(record, policy, then, found_now(record.body, scorer, readers))
        if breach is not None:
            breaches.append(breach)
    return breaches


def found_now(body: dict[str, Any], scorer: Scorer | None, readers: Sequence[Reader] = ()) -> dict[str, str]:
    """What a re-reading finds in a body as kept (what was found then is masked in it): each type,
    and the field it is first in. A span over a placeholder is none: the gateway wrote it."""
    found: dict[str, str] = {}
    if scorer is not None:
        for f in scorer.signals([], body=body).privacy:
            if f.type != "UNSCANNED":
                found.setdefault(f.type, dotted(f.path))
    if readers:
        for path, text in forwarded(body).strings:
            if isinstance(path[-1], Key):
                continue
            placeholders = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)]
            for read in readers:
                for span in read(text):
                    if span.type != "UNSCANNED" and not any(span.start < e and s < span.end for s, e in placeholders):
                        found.setdefault(span.type, dotted(path))
    return found


def _breach(record: Egress, policy: AppPolicy, then: frozenset[str], new: dict[str, str]) -> Breach | None:
    """The breach the policy sees in `record` with the types found then and those `new` now (each
    with where it is first), if any: the types found only now left readable too."""
    verdict = policy.evaluate(_facts(record.facts, then | set(new)))
    now = f" (found now: {', '.join(f'{kind} in {where}' for kind, where in sorted(new.items()))})" if new else ""
    if verdict.deny is not None:
        return Breach(record, verdict.rule, f"rule {verdict.rule!r} denies it{now}")
    if not verdict.cloud_allowed:
        return Breach(record, verdict.rule, f"rule {verdict.rule!r} keeps it on the premises{now}")
    readable = sorted({f.type for f in record.findings if f.left == Left.READABLE} | set(new))
    if verdict.redact and readable:
        return Breach(
            record, verdict.rule, f"rule {verdict.rule!r} masks it, and {', '.join(readable)} left readable{now}"
        )
    return None


def _facts(facts: dict[str, Any], pii: frozenset[str]) -> Facts:
    complexity = float(facts.get("complexity") or 0.0)
    return Facts(
        complexity_of=lambda: complexity,
        prompt_tokens=int(facts.get("prompt_tokens") or 0),
        max_tokens=facts.get("max_tokens"),
        pii=pii,
        model=str(facts.get("model", "auto")),
        language=str(facts.get("language", "und")),
        tags=frozenset(facts.get("tags", ())),
        needs=frozenset(facts.get("needs", ())),
        latency_budget_ms=facts.get("latency_budget_ms"),
        edge_queue_wait_ms=float(facts.get("edge_queue_wait_ms") or 0.0),
        budget_left_usd=facts.get("budget_left_usd"),
    )


def as_csv(records: Iterable[Egress]) -> str:
    """One row a record: `ts` in ISO 8601 UTC, each finding as TYPE@field:masked|readable, the
    body as JSON."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for r in records:
        findings = "; ".join(f"{f.type}@{f.where}:{f.left}" for f in r.findings)
        body = json.dumps(r.body, ensure_ascii=False, sort_keys=True)
        writer.writerow([csv_cell("ts", r.ts), r.request_id, r.app, r.provider, r.model, r.provider_model, r.api,
                         r.purpose, r.rule, r.outcome, findings, body])  # fmt: skip
    return out.getvalue()


async def api_audit(request: Request) -> Response:
    """GET /api/audit: the admin key's, every app's or one's, for a period, as JSON or CSV."""
    if caller_app(request) is not None:
        raise Unauthorized("The egress audit needs the admin key.")
    params = request.query_params
    unknown = sorted(set(params) - {"app", "from", "to", "format", "key"})
    if unknown:
        raise InvalidRequest(f"Unknown parameter {unknown[0]!r}; expected app, from, to or format.", param=unknown[0])
    if params.get("format") not in (None, "json", "csv"):
        raise InvalidRequest(f"'format' must be json or csv; got {params.get('format')!r}.", param="format")
    app, since, until = period(request, "audit")
    egress = gateway_of(request).router.egress
    await egress.settled()
    records = await asyncio.to_thread(egress.find, app, since, until)
    if params.get("format") == "csv":
        return Response(
            as_csv(records),
            media_type="text/csv",
            headers={"content-disposition": 'attachment; filename="edgeway-audit.csv"'},
        )
    return JSON(
        {
            "app": app,
            "from": since,
            "to": until,
            "generated_at": time.time(),
            "count": len(records),
            "records": [r.as_dict() for r in records],
        }
    )
