"""OpenAI's Batch API: `POST /v1/batches`, `GET /v1/batches`, `GET /v1/batches/{id}`,
`POST /v1/batches/{id}/cancel`.

A batch is a file of requests (`gateway/files.py`), one JSON line each: `{"custom_id", "method":
"POST", "url": <the batch's endpoint>, "body"}`. The whole file is checked when the batch is
created, so a malformed line is a 400 naming it, never a batch that fails later. Lines run on the
edge's idle time (`gateway/batch_runner.py`); the batch's state lives in the configured store
beside the ledger, so any replica answers for it and a restarted gateway resumes it.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from edge_runtime import EdgePool
from gateway import files
from gateway.chat import CHAT
from gateway.completions import COMPLETIONS
from gateway.embeddings import EMBEDDINGS
from gateway.http import JSON
from gateway.pipeline import WholeDialect, identify, read_body
from gateway.responses import RESPONSES
from gateway.running import gateway_of
from router.cloud.batch_api import BatchStatus
from router.documents import Document, Documents
from router.errors import InvalidRequest, NotFound

BATCHES = "batch"
CANCELS = "batch_cancel"  # a cancel asked for: the runner stops the batch when it sees one
# the endpoints a batch may name, and the API each line is answered in
DIALECTS: dict[str, WholeDialect] = {
    "/v1/chat/completions": CHAT,
    "/v1/completions": COMPLETIONS,
    "/v1/embeddings": EMBEDDINGS,
    "/v1/responses": RESPONSES,
}
ENDPOINTS = tuple(DIALECTS)
WINDOW = re.compile(r"^([1-9][0-9]*)(h|m)$")
LONGEST_WINDOW_S = 24 * 3600
FALLBACK_TOKENS_PER_S = 50.0  # the edge's rate before it has measured one
DEFAULT_ANSWER_TOKENS = 256  # a line that sets no max_tokens, for the window's estimate
PROMPT_CHARS_PER_TOKEN = 4


ENDED = frozenset(status for status in BatchStatus if status.ended)


@dataclass(frozen=True)
class Line:
    index: int
    custom_id: str
    body: dict[str, Any]


@dataclass
class Batch:
    id: str
    app: str
    endpoint: str
    input_file_id: str
    completion_window: str
    created_at: int
    expires_at: int
    total: int
    status: BatchStatus = BatchStatus.VALIDATING
    completed: int = 0
    failed: int = 0
    metadata: dict[str, str] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    times: dict[str, int] = field(default_factory=dict)  # in_progress_at, finalizing_at, ...: when each began
    ts: float = 0.0  # created_at to the microsecond: the order batches are listed and run in

    def body(self, cancelling: bool = False) -> dict[str, Any]:
        status = BatchStatus.CANCELLING if cancelling and self.status not in ENDED else self.status
        moments = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": None,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": status.value,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            **{f"{moment}_at": self.times.get(moment) for moment in moments},
            "request_counts": {"total": self.total, "completed": self.completed, "failed": self.failed},
            "metadata": self.metadata,
        }

    def document(self) -> Document:
        return Document(self.id, self.app, self.ts, {**asdict(self), "status": self.status.value})

    @classmethod
    def of(cls, document: Document) -> Batch:
        data = dict(document.data)
        return cls(**{**data, "status": BatchStatus(data["status"])})


def parse_lines(text: str, endpoint: str, max_lines: int) -> list[Line]:
    """The requests of a batch input file, each checked; a 400 naming the first bad line."""
    lines: list[Line] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"line {number} of the input file"
        try:
            item = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InvalidRequest(f"{where} is not JSON ({exc}).", param="input_file_id", code="invalid_line") from None
        if not isinstance(item, dict):
            raise InvalidRequest(f"{where} is not a JSON object.", param="input_file_id", code="invalid_line")
        custom_id, body = item.get("custom_id"), item.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            raise InvalidRequest(f"{where} has no 'custom_id' string.", param="input_file_id", code="invalid_line")
        if custom_id in seen:
            raise InvalidRequest(
                f"{where} repeats the custom_id {custom_id[:64]!r}; each line needs its own.",
                param="input_file_id",
                code="duplicate_custom_id",
            )
        if item.get("method") != "POST":
            raise InvalidRequest(f"{where}: 'method' must be 'POST'.", param="input_file_id", code="invalid_line")
        if item.get("url") != endpoint:
            raise InvalidRequest(
                f"{where}: 'url' must be the batch's endpoint {endpoint!r}; got {str(item.get('url'))[:80]!r}.",
                param="input_file_id",
                code="mismatched_url",
            )
        if not isinstance(body, dict):
            raise InvalidRequest(f"{where}: 'body' must be a JSON object.", param="input_file_id", code="invalid_line")
        if body.get("stream"):
            raise InvalidRequest(
                f"{where} asks for a stream; a batch line is answered whole.",
                param="input_file_id",
                code="invalid_line",
            )
        seen.add(custom_id)
        lines.append(Line(len(lines), custom_id, body))
        if len(lines) > max_lines:
            raise InvalidRequest(
                f"The input file has more than {max_lines} requests, the most one batch takes.",
                param="input_file_id",
                code="too_many_lines",
            )
    if not lines:
        raise InvalidRequest("The input file has no requests.", param="input_file_id", code="empty_file")
    return lines


def window_seconds(window: Any) -> int:
    matched = WINDOW.match(window) if isinstance(window, str) else None
    seconds = 0 if matched is None else int(matched[1]) * (3600 if matched[2] == "h" else 60)
    if not 0 < seconds <= LONGEST_WINDOW_S:
        raise InvalidRequest(
            f"'completion_window' must be a time of at most 24h, such as '24h' or '90m'; got {str(window)[:40]!r}.",
            param="completion_window",
        )
    return seconds


def estimated_seconds(lines: list[Line], tokens_per_s: float, cloud: frozenset[str] = frozenset()) -> float:
    """How long the lines would keep the edge busy: prompt and answer tokens at its decode rate,
    but for lines that name a `cloud` model (an upper bound: what the policy sends to the cloud
    from `auto` does not wait for the edge either)."""
    tokens = 0
    for line in lines:
        body = line.body
        if body.get("model") in cloud:
            continue
        answer = body.get("max_tokens") or body.get("max_completion_tokens") or body.get("max_output_tokens")
        tokens += answer if isinstance(answer, int) else DEFAULT_ANSWER_TOKENS
        tokens += len(orjson.dumps(body)) // PROMPT_CHARS_PER_TOKEN
    return tokens / tokens_per_s


def find(documents: Documents, app: str, batch_id: str) -> Batch:
    found = documents.get(BATCHES, batch_id)
    if found is None or found.app != app:
        raise NotFound(f"No batch with id {batch_id[:64]!r}.", param="batch_id", code="batch_not_found")
    return Batch.of(found)


def edge_tokens_per_s(edge: EdgePool) -> float:
    """How fast the edge decodes now, all its models together: what a batch's window is checked by."""
    rates = [engine.state().decode_tokens_per_s for engine in edge.engines.values()]
    return sum(rates) or FALLBACK_TOKENS_PER_S


def cancel_asked(documents: Documents, batch_id: str) -> bool:
    return documents.get(CANCELS, batch_id) is not None


async def create(request: Request) -> Response:
    app = identify(request)
    gateway = gateway_of(request)
    body, _ = await read_body(request)
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    unknown = sorted(set(body) - {"input_file_id", "endpoint", "completion_window", "metadata"})
    if unknown:
        raise InvalidRequest(f"Unknown parameter {unknown[0][:64]!r}.", param=unknown[0][:64])
    endpoint = body.get("endpoint")
    if endpoint not in ENDPOINTS:
        raise InvalidRequest(
            f"'endpoint' must be one of {', '.join(ENDPOINTS)}; got {str(endpoint)[:80]!r}.", param="endpoint"
        )
    window = window_seconds(body.get("completion_window"))
    metadata = body.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()) or len(metadata) > 16
    ):
        raise InvalidRequest("'metadata' must be an object of at most 16 strings.", param="metadata")
    file_id = body.get("input_file_id")
    if not isinstance(file_id, str):
        raise InvalidRequest("'input_file_id' must be the id of a file uploaded with purpose 'batch'.")
    stored = files.find(gateway.documents, app.name, file_id)
    if stored.purpose != files.Purpose.BATCH:
        raise InvalidRequest(f"File {file_id!r} is a batch's output, not an input.", param="input_file_id")
    text = files.content(gateway.documents, stored)
    lines = parse_lines(text, endpoint, gateway.config.batches.max_lines)
    rate = edge_tokens_per_s(gateway.edge)
    cloud = frozenset(name for name, model in gateway.router.models.items() if model.tier == "cloud")
    needed = estimated_seconds(lines, rate, cloud)
    if needed > window:
        raise InvalidRequest(
            f"The batch would keep the edge busy for about {needed / 60:.0f} minutes ({len(lines)} requests at "
            f"{rate:.0f} tokens/s), more than its completion_window of {body['completion_window']}: split it, "
            "or give it a longer window.",
            param="completion_window",
            code="completion_window_too_short",
        )
    now = time.time()
    batch = Batch(
        id=f"batch_{uuid.uuid4().hex[:24]}",
        app=app.name,
        endpoint=endpoint,
        input_file_id=file_id,
        completion_window=body["completion_window"],
        created_at=int(now),
        expires_at=int(now) + window,
        total=len(lines),
        metadata=metadata,
        ts=now,
    )
    gateway.documents.put(BATCHES, batch.document())
    gateway.batch_bell.ring()
    return JSON(batch.body())


async def retrieve(request: Request) -> Response:
    app = identify(request)
    documents = gateway_of(request).documents
    batch = find(documents, app.name, request.path_params["batch_id"])
    return JSON(batch.body(cancel_asked(documents, batch.id)))


async def cancel(request: Request) -> Response:
    app = identify(request)
    gateway = gateway_of(request)
    batch = find(gateway.documents, app.name, request.path_params["batch_id"])
    if batch.status in ENDED:
        raise InvalidRequest(
            f"Batch {batch.id} is {batch.status.value}; only a batch still running can be cancelled.",
            code="batch_ended",
        )
    gateway.documents.put(CANCELS, Document(batch.id, app.name, time.time(), {}))
    gateway.batch_bell.ring()
    return JSON(batch.body(cancelling=True))


async def list_batches(request: Request) -> Response:
    app = identify(request)
    params = request.query_params
    try:
        limit = int(params.get("limit", "20"))
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        raise InvalidRequest("'limit' must be a whole number from 1 to 100.", param="limit")
    documents = gateway_of(request).documents
    batches = [Batch.of(d) for d in reversed(documents.find(BATCHES, app=app.name))]  # newest first
    after = params.get("after")
    if after is not None:
        ids = [b.id for b in batches]
        if after not in ids:
            raise NotFound(f"No batch with id {after[:64]!r}.", param="after", code="batch_not_found")
        batches = batches[ids.index(after) + 1 :]
    page = batches[:limit]
    data = [b.body(cancel_asked(documents, b.id)) for b in page]
    return JSON(
        {
            "object": "list",
            "data": data,
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": len(batches) > limit,
        }
    )
