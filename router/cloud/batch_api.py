"""A provider's own batch API, as OpenAI defines it: a file of requests uploaded (`POST /files`,
purpose `batch`), a batch made of it (`POST /batches`), its status read (`GET /batches/{id}`), its
output and error files fetched (`GET /files/{id}/content`), and a cancel (`POST /batches/{id}/cancel`).

Providers answer a batch within a day at half their live price (OpenAI, Groq); edgeway sends them
the batch lines its policy routes to their models (gateway/provider_lines.py). Every answer is
parsed here, once, into `ProviderBatch` and `ProviderResult`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from router.cloud.http1 import Client, HTTPError, Timeouts
from router.errors import UpstreamError, UpstreamTimeout
from router.request import ChatRequest

CHAT_ENDPOINT = "/v1/chat/completions"  # the `url` of each line and the batch's `endpoint`
WINDOW = "24h"  # the only completion window OpenAI offers
BATCH_PROVIDERS = frozenset({"openai", "groq"})  # an OpenAI-shaped batch API beside their chat endpoint


class BatchStatus(StrEnum):
    """A batch's status, as OpenAI's Batch API says it (edgeway's own `/v1/batches` say it too)."""

    VALIDATING = "validating"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        return self in (self.COMPLETED, self.FAILED, self.EXPIRED, self.CANCELLED)


@dataclass(frozen=True)
class ProviderBatch:
    id: str
    status: BatchStatus
    output_file_id: str | None = None
    error_file_id: str | None = None


@dataclass(frozen=True)
class ProviderResult:
    """One line of a provider batch's output or error file."""

    custom_id: str
    status_code: int | None  # None: the provider never answered the line (`error` says why)
    body: Any
    error: str | None = None


class OpenAIBatchAPI:
    """The batch endpoints beside an OpenAI-compatible chat endpoint (`base`: its `/v1` URL)."""

    def __init__(self, client: Client, base: str, model_id: str, name: str, headers: bytes, timeouts: Timeouts) -> None:
        self._origin, self._base = client.origin(base.rstrip("/"))
        self._model_id, self._name = model_id, name
        self._headers = headers  # authorization and the like, ready "name: value\r\n" lines
        self._timeouts = timeouts

    def line(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        """A line of the input file: the request's body, as the live chat endpoint would get it."""
        return {
            "custom_id": custom_id,
            "method": "POST",
            "url": CHAT_ENDPOINT,
            "body": {**request.body, "model": self._model_id},
        }

    async def upload(self, lines: list[dict[str, Any]]) -> str:
        """Upload the input file; its id."""
        boundary = uuid.uuid4().hex
        content = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        body = (
            (
                f'--{boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                f'--{boundary}\r\ncontent-disposition: form-data; name="file"; filename="edgeway-batch.jsonl"\r\n'
                f"content-type: application/jsonl\r\n\r\n"
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )
        kind = f"content-type: multipart/form-data; boundary={boundary}\r\n".encode()
        answer = await self._json("POST", "/files", body, kind)
        return _text(answer, "id", self._name)

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> ProviderBatch:
        body: dict[str, Any] = {"input_file_id": input_file_id, "endpoint": CHAT_ENDPOINT, "completion_window": WINDOW}
        if metadata:
            body["metadata"] = metadata
        return self._batch(await self._json("POST", "/batches", orjson.dumps(body), _JSON))

    async def retrieve(self, batch_id: str) -> ProviderBatch:
        return self._batch(await self._json("GET", f"/batches/{batch_id}", b"", b""))

    async def cancel(self, batch_id: str) -> ProviderBatch:
        return self._batch(await self._json("POST", f"/batches/{batch_id}/cancel", b"", b""))

    async def results(self, file_id: str) -> list[ProviderResult]:
        """The lines of an output or error file."""
        content = await self._content(f"/files/{file_id}/content")
        found = []
        for raw in content.splitlines():
            if not raw.strip():
                continue
            try:
                found.append(_result(orjson.loads(raw)))
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                raise UpstreamError(
                    f"{self._name}: the provider's batch file {file_id} has a line that is not a result"
                ) from None
        return found

    # --- the wire -------------------------------------------------------------------------
    async def _exchange(self, method: str, path: str, body: bytes, kind: bytes) -> tuple[int, bytes]:
        try:
            response = await self._origin.request(method, self._base + path, self._headers + kind, body, self._timeouts)
            return response.status, await response.read()
        except TimeoutError:
            raise UpstreamTimeout(f"{self._name}: the provider's batch API did not answer in time") from None
        except HTTPError as exc:
            raise UpstreamError(f"{self._name}: could not reach the provider's batch API ({exc})") from None

    async def _content(self, path: str) -> bytes:
        status, content = await self._exchange("GET", path, b"", b"")
        if status >= 400:
            raise UpstreamError(
                f"{self._name}: the provider's batch API answered {status} to GET {path}", provider_status=status
            )
        return content

    async def _json(self, method: str, path: str, body: bytes, kind: bytes) -> Any:
        status, content = await self._exchange(method, path, body, kind)
        if status >= 400:
            raise UpstreamError(
                f"{self._name}: the provider's batch API answered {status} to {method} {path}", provider_status=status
            )
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            raise UpstreamError(
                f"{self._name}: the provider's batch API answered with a body that is not JSON"
            ) from None

    def _batch(self, answer: Any) -> ProviderBatch:
        try:
            status = BatchStatus(answer["status"])
        except (KeyError, TypeError, ValueError):
            raise UpstreamError(f"{self._name}: the provider's batch API answered with no known batch status") from None
        output, error = answer.get("output_file_id"), answer.get("error_file_id")
        return ProviderBatch(
            _text(answer, "id", self._name),
            status,
            output if isinstance(output, str) and output else None,
            error if isinstance(error, str) and error else None,
        )


_JSON = b"content-type: application/json\r\n"


def _text(answer: Any, key: str, name: str) -> str:
    value = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(value, str) or not value:
        raise UpstreamError(f"{name}: the provider's batch API answered without {key!r}")
    return value


def _result(line: dict[str, Any]) -> ProviderResult:
    custom_id = line["custom_id"]
    if not isinstance(custom_id, str):
        raise ValueError("custom_id")
    response, error = line.get("response"), line.get("error")
    reason = None
    if isinstance(error, dict):
        reason = str(error.get("message") or error.get("code") or error)
    elif error is not None:
        reason = str(error)
    if not isinstance(response, dict):
        return ProviderResult(custom_id, None, None, reason or "the provider gave no response")
    status = response.get("status_code")
    if not isinstance(status, int) or isinstance(status, bool):
        raise ValueError("status_code")
    return ProviderResult(custom_id, status, response.get("body"), reason)
