"""Providers' own batch APIs: requests sent as one batch, answered within a day at about half the
live price. Two wire formats, one interface (`ProviderBatchAPI`), used by the batch runner for the
lines the policy sends to these providers' models (gateway/provider_lines.py):

- OpenAI's (`OpenAIBatchAPI`), which OpenAI and Groq serve beside their chat endpoint: a file of
  requests uploaded (`POST /files`, purpose `batch`), a batch made of it (`POST /batches`), read
  (`GET /batches/{id}`) and cancelled (`POST /batches/{id}/cancel`), its output and error files
  fetched (`GET /files/{id}/content`).
- Anthropic's Message Batches (`AnthropicBatchAPI`): the requests in the body of
  `POST /v1/messages/batches`, read and cancelled likewise, the results at the batch's
  `results_url`. A line's request and its answer are translated by LiteLLM's Anthropic
  transformation, the one the live path's `litellm.acompletion` runs.

Every answer is parsed here, once, into `ProviderBatch` and `ProviderResult`.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import orjson

from router.cloud.config import CloudModelConfig
from router.cloud.http1 import Client, HTTPError, Timeouts
from router.cloud.litellm_module import load_litellm
from router.errors import InvalidRequest, UpstreamError, UpstreamTimeout
from router.request import ChatRequest

CHAT_ENDPOINT = "/v1/chat/completions"  # the `url` of each OpenAI line and the batch's `endpoint`
WINDOW = "24h"  # the only completion window OpenAI offers
OPENAI_SHAPED = frozenset({"openai", "groq"})  # an OpenAI-shaped batch API beside their chat endpoint
ANTHROPIC_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
READ_S = 120.0  # the longest silence of a batch API
TOTAL_S = 900.0  # an upload or a download as a whole: files of hundreds of MB go up and come down
_LINE_KEYS = ("model", "messages", "stream", "stream_options", "prompt")  # not parameters of the call
# Anthropic's error types, as the HTTP statuses its live API answers them with
_ANTHROPIC_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


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
    results: tuple[str, ...] = ()  # where its results are read: OpenAI's file ids, Anthropic's URL


@dataclass(frozen=True)
class ProviderResult:
    """One request's result in a provider batch."""

    custom_id: str
    status_code: int | None  # None: the provider never answered it (`error` says why)
    body: Any  # the provider's answer (200) or error body
    error: str | None = None


class ProviderBatchAPI(Protocol):
    async def line(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        """The request as one entry of a batch (kept until the batch is sent, and to read its answer)."""

    async def submit(self, lines: list[dict[str, Any]], metadata: dict[str, str]) -> ProviderBatch:
        """Make a batch of the entries."""

    async def retrieve(self, batch_id: str) -> ProviderBatch: ...

    async def cancel(self, batch_id: str) -> ProviderBatch: ...

    async def results(self, batch: ProviderBatch) -> list[ProviderResult]:
        """An ended batch's results."""

    async def answer(self, body: Any, line: dict[str, Any]) -> Any:
        """A 200 result's body as a chat.completion object (to be validated as a live answer)."""


def batch_api_of(config: CloudModelConfig, client: Client, openai_base: str | None) -> ProviderBatchAPI | None:
    """The model's provider's batch API, where edgeway speaks it and the config does not turn it
    off (`batch_api`; None: on for the providers known to have one). `openai_base`: the `/v1` URL
    of the model's OpenAI-compatible endpoint, None for a model reached through LiteLLM."""
    known = (openai_base is not None and config.provider in OPENAI_SHAPED) or config.provider == "anthropic"
    if not (config.batch_api if config.batch_api is not None else known):
        return None
    key = config.api_key.get_secret_value() if config.api_key is not None else None
    if config.provider == "anthropic":
        headers = f"anthropic-version: {ANTHROPIC_VERSION}\r\n" + (f"x-api-key: {key}\r\n" if key else "")
        wire = _Wire(client, config, headers.encode("latin-1"))
        return AnthropicBatchAPI(wire, config.api_base or ANTHROPIC_BASE, config.provider_model_id)
    assert openai_base is not None  # the config check: another provider's batch API is refused
    wire = _Wire(client, config, f"authorization: Bearer {key}\r\n".encode("latin-1") if key else b"")
    return OpenAIBatchAPI(wire, openai_base, config.provider_model_id)


class _Wire:
    """JSON and content over the gateway's pooled connections, failures as UpstreamErrors."""

    def __init__(self, client: Client, config: CloudModelConfig, headers: bytes) -> None:
        self.client, self.name, self.headers = client, config.name, headers  # headers: ready "name: value\r\n" lines
        self.timeouts = Timeouts(config.connect_timeout_s, READ_S, TOTAL_S)

    async def exchange(self, method: str, url: str, body: bytes = b"", kind: bytes = b"") -> tuple[int, bytes]:
        origin, target = self.client.origin(url)
        try:
            response = await origin.request(method, target, self.headers + kind, body, self.timeouts)
            return response.status, await response.read()
        except TimeoutError:
            raise UpstreamTimeout(f"{self.name}: the provider's batch API did not answer in time") from None
        except HTTPError as exc:
            raise UpstreamError(f"{self.name}: could not reach the provider's batch API ({exc})") from None

    async def content(self, url: str) -> bytes:
        status, content = await self.exchange("GET", url)
        if status >= 400:
            raise UpstreamError(
                f"{self.name}: the provider's batch API answered {status} to GET {url}", provider_status=status
            )
        return content

    async def json(self, method: str, url: str, body: bytes = b"", kind: bytes = b"") -> Any:
        status, content = await self.exchange(method, url, body, kind)
        if status >= 400:
            raise UpstreamError(
                f"{self.name}: the provider's batch API answered {status} to {method} {url}", provider_status=status
            )
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            raise UpstreamError(
                f"{self.name}: the provider's batch API answered with a body that is not JSON"
            ) from None

    def text(self, answer: Any, key: str) -> str:
        value = answer.get(key) if isinstance(answer, dict) else None
        if not isinstance(value, str) or not value:
            raise UpstreamError(f"{self.name}: the provider's batch API answered without {key!r}")
        return value

    def lines(self, content: bytes, where: str) -> list[dict[str, Any]]:
        found = []
        for raw in content.splitlines():
            if raw.strip():
                try:
                    line = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    line = None
                if not isinstance(line, dict):
                    raise UpstreamError(
                        f"{self.name}: the provider's batch results ({where}) have a line that is not a result"
                    )
                found.append(line)
        return found


_JSON = b"content-type: application/json\r\n"


class OpenAIBatchAPI:
    """The batch endpoints beside an OpenAI-compatible chat endpoint (`base`: its `/v1` URL)."""

    def __init__(self, wire: _Wire, base: str, model_id: str) -> None:
        self._wire, self._base, self._model_id = wire, base.rstrip("/"), model_id

    async def line(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        """A line of the input file: the request's body, as the live chat endpoint would get it."""
        return {"custom_id": custom_id, "method": "POST", "url": CHAT_ENDPOINT,
                "body": {**request.body, "model": self._model_id}}  # fmt: skip

    async def submit(self, lines: list[dict[str, Any]], metadata: dict[str, str]) -> ProviderBatch:
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
        file_id = self._wire.text(await self._wire.json("POST", f"{self._base}/files", body, kind), "id")
        made: dict[str, Any] = {"input_file_id": file_id, "endpoint": CHAT_ENDPOINT, "completion_window": WINDOW}
        if metadata:
            made["metadata"] = metadata
        return self._batch(await self._wire.json("POST", f"{self._base}/batches", orjson.dumps(made), _JSON))

    async def retrieve(self, batch_id: str) -> ProviderBatch:
        return self._batch(await self._wire.json("GET", f"{self._base}/batches/{batch_id}"))

    async def cancel(self, batch_id: str) -> ProviderBatch:
        return self._batch(await self._wire.json("POST", f"{self._base}/batches/{batch_id}/cancel"))

    async def results(self, batch: ProviderBatch) -> list[ProviderResult]:
        found = []
        for file_id in batch.results:
            for line in self._wire.lines(await self._wire.content(f"{self._base}/files/{file_id}/content"), file_id):
                found.append(self._result(line, file_id))
        return found

    async def answer(self, body: Any, line: dict[str, Any]) -> Any:
        return body  # the chat endpoint's own answer

    def _batch(self, answer: Any) -> ProviderBatch:
        try:
            status = BatchStatus(answer["status"])
        except (KeyError, TypeError, ValueError):
            raise UpstreamError(
                f"{self._wire.name}: the provider's batch API answered with no known batch status"
            ) from None
        files = (answer.get("output_file_id"), answer.get("error_file_id"))
        return ProviderBatch(self._wire.text(answer, "id"), status, tuple(f for f in files if isinstance(f, str) and f))

    def _result(self, line: dict[str, Any], where: str) -> ProviderResult:
        custom_id, response, error = line.get("custom_id"), line.get("response"), line.get("error")
        reason = None
        if isinstance(error, dict):
            reason = str(error.get("message") or error.get("code") or error)
        elif error is not None:
            reason = str(error)
        status = response.get("status_code") if isinstance(response, dict) else None
        if not isinstance(custom_id, str) or (
            response is not None and (not isinstance(status, int) or isinstance(status, bool))
        ):
            raise UpstreamError(
                f"{self._wire.name}: the provider's batch results ({where}) have a line that is not a result"
            )
        if not isinstance(response, dict):
            return ProviderResult(custom_id, None, None, reason or "the provider gave no response")
        return ProviderResult(custom_id, status, response.get("body"), reason)


class AnthropicBatchAPI:
    """Anthropic's Message Batches (`base`: the API's origin, without `/v1`)."""

    def __init__(self, wire: _Wire, base: str, model_id: str) -> None:
        self._wire, self._url, self._model_id = wire, base.rstrip("/") + "/v1/messages/batches", model_id

    async def line(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        """The request in Messages' shape, as LiteLLM's live call would send it. Kept beside it:
        `json_mode` (a JSON answer asked for, which LiteLLM reads back from a forced tool or a
        structured output) and the beta features the request needs (`anthropic-beta`)."""
        litellm = await _litellm()
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        arguments = {k: v for k, v in request.body.items() if k not in _LINE_KEYS}
        messages: Any = request.messages  # (OpenAI's message dicts, which LiteLLM types as TypedDicts)
        try:
            optional = litellm.get_optional_params(
                model=self._model_id, custom_llm_provider="anthropic", drop_params=True, **arguments
            )
            headers: dict[str, str] = {}  # (where LiteLLM adds the betas the request needs)
            params = AnthropicConfig().transform_request(self._model_id, messages, optional, {}, headers)
        except Exception as exc:  # LiteLLM's refusal of a request it cannot translate is the client's
            raise InvalidRequest(f"{self._wire.name}: {exc}", code="upstream_rejected") from None
        json_mode = bool(params.pop("json_mode", False))
        betas = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
        return {"custom_id": custom_id, "params": params, "json_mode": json_mode, "betas": betas}

    async def submit(self, lines: list[dict[str, Any]], metadata: dict[str, str]) -> ProviderBatch:
        requests = [{"custom_id": line["custom_id"], "params": line["params"]} for line in lines]
        betas = sorted({beta for line in lines for beta in line.get("betas", ())})
        kind = _JSON + (f"anthropic-beta: {','.join(betas)}\r\n".encode("latin-1") if betas else b"")
        return self._batch(await self._wire.json("POST", self._url, orjson.dumps({"requests": requests}), kind))

    async def retrieve(self, batch_id: str) -> ProviderBatch:
        return self._batch(await self._wire.json("GET", f"{self._url}/{batch_id}"))

    async def cancel(self, batch_id: str) -> ProviderBatch:
        return self._batch(await self._wire.json("POST", f"{self._url}/{batch_id}/cancel"))

    async def results(self, batch: ProviderBatch) -> list[ProviderResult]:
        found = []
        for url in batch.results:
            for line in self._wire.lines(await self._wire.content(url), url):
                found.append(self._result(line, url))
        return found

    async def answer(self, body: Any, line: dict[str, Any]) -> Any:
        litellm = await _litellm()
        import httpx
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        if not isinstance(body, dict):
            raise UpstreamError(
                f"{self._wire.name}: the provider's batch answered with a message that is not an object"
            )
        try:
            response = AnthropicConfig().transform_parsed_response(
                completion_response=body,
                raw_response=httpx.Response(200),
                model_response=litellm.ModelResponse(),
                json_mode=bool(line.get("json_mode")),
            )
        except Exception as exc:  # a message LiteLLM cannot read is a broken answer, as on the live path
            raise UpstreamError(
                f"{self._wire.name}: the provider's batch answered a message edgeway cannot read ({exc})"
            ) from None
        return response.model_dump(exclude_none=False)

    def _batch(self, answer: Any) -> ProviderBatch:
        state = answer.get("processing_status") if isinstance(answer, dict) else None
        if state not in ("in_progress", "canceling", "ended"):
            raise UpstreamError(f"{self._wire.name}: the provider's batch API answered with no known batch status")
        if state == "ended":
            status = BatchStatus.CANCELLED if answer.get("cancel_initiated_at") else BatchStatus.COMPLETED
        else:
            status = BatchStatus.IN_PROGRESS if state == "in_progress" else BatchStatus.CANCELLING
        url = answer.get("results_url")
        return ProviderBatch(self._wire.text(answer, "id"), status, (url,) if isinstance(url, str) and url else ())

    def _result(self, line: dict[str, Any], where: str) -> ProviderResult:
        custom_id, result = line.get("custom_id"), line.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if not isinstance(custom_id, str) or not isinstance(result, dict) or not isinstance(kind, str):
            raise UpstreamError(
                f"{self._wire.name}: the provider's batch results ({where}) have a line that is not a result"
            )
        if kind == "succeeded":
            return ProviderResult(custom_id, 200, result.get("message"))
        if kind == "errored":
            error = result.get("error")
            inner = error.get("error") if isinstance(error, dict) else None
            details = inner if isinstance(inner, dict) else error if isinstance(error, dict) else {}
            status = _ANTHROPIC_STATUS.get(str(details.get("type")), 500)
            return ProviderResult(custom_id, status, {"error": details}, str(details.get("message") or kind))
        return ProviderResult(custom_id, None, None, kind)  # canceled, expired


async def _litellm() -> Any:
    return await asyncio.to_thread(load_litellm)  # (12 s the first time: off the event loop)
