"""POST /v1/feedback: what the app learned of an answer, for its router to learn from.

    {"request_id": "<x-edgeway-request-id>", "score": 0.0}        # the answer was bad (0) .. good (1)
    {"request_id": "<x-edgeway-request-id>", "preferred": "cloud"} # the tier that should have answered

With the app's key, for the app's own requests that a `route: auto` rule decided (those the gateway
kept a routing record of); `edgeway router fit` adds them to the shadow comparisons it fits on.
Feedback on a request given twice keeps the later. Nothing of the request's text is involved.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http import JSON
from gateway.pipeline import identify, read_body
from gateway.running import gateway_of
from router.errors import InvalidRequest, NotFound
from router.routings import FEEDBACK, RECORDS, Feedback

TIERS = ("edge", "cloud")


def parse_feedback(body: Any, app: str) -> Feedback:
    if not isinstance(body, dict):
        raise InvalidRequest("The body must be a JSON object: {request_id, score | preferred}.")
    unknown = sorted(set(body) - {"request_id", "score", "preferred"})
    if unknown:
        raise InvalidRequest(
            f"Unknown field {unknown[0]!r}; expected request_id, score or preferred.", param=unknown[0]
        )
    request_id = body.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        raise InvalidRequest("request_id must be the x-edgeway-request-id of an answer.", param="request_id")
    score, preferred = body.get("score"), body.get("preferred")
    if (score is None) == (preferred is None):
        raise InvalidRequest("Give either score (0 to 1) or preferred (edge or cloud), not both.", param="score")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score) or not 0 <= score <= 1
    ):
        raise InvalidRequest("score must be a number from 0 (a bad answer) to 1 (a good one).", param="score")
    if preferred is not None and preferred not in TIERS:
        raise InvalidRequest("preferred must be edge or cloud.", param="preferred")
    return Feedback(request_id, app, None if score is None else float(score), preferred)


async def feedback(request: Request) -> Response:
    app = identify(request)
    body, _ = await read_body(request)
    given = parse_feedback(body, app.name)
    documents = gateway_of(request).router.routers.documents
    record = await asyncio.to_thread(documents.get, RECORDS, given.request_id)
    if record is None or record.app != app.name:  # another app's request is as unknown as a made-up one
        raise NotFound(
            f"No request {given.request_id!r} of this app that a route: auto rule decided; feedback is for those.",
            param="request_id",
        )
    await asyncio.to_thread(given.save, documents)
    return JSON(
        {"request_id": given.request_id, "object": FEEDBACK, "recorded": True},
        headers={"x-edgeway-request-id": request.state.request_id},
    )
