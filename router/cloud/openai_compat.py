"""Cloud models that speak the OpenAI API, reached directly over pooled keep-alive connections.

No LiteLLM on this path, and as little work as the wire allows: the request body is forwarded as
the client sent it (only `model` is replaced, and usage is asked for so that streamed answers can
be priced), and a whole answer is parsed once, with orjson. A Responses request goes to the
provider's Responses API as sent, where it has one (`router/cloud/responses.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from router.answer import Answer
from router.cloud import validate
from router.cloud.base import CloudModel, status_error
from router.cloud.config import CloudModelConfig
from router.cloud.endpoint import Endpoint, error_message, event_stream, transport_error
from router.cloud.http1 import Client, HTTPError, Response, Timeouts
from router.cloud.responses import ResponsesEndpoint, ResponseStream
from router.errors import UpstreamError
from router.native import Api
from router.request import ChatRequest, Priority
from router.tracing import outgoing_headers

# Providers whose chat endpoint is OpenAI's, and where it lives when the config gives no api_base.
DIRECT_PROVIDERS: dict[str, str | None] = {
    "openai": "https://api.openai.com/v1",
    "hosted_vllm": None,
    "openrouter": "https://openrouter.ai/api/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "groq": "https://api.groq.com/openai/v1",
}


def is_direct(config: CloudModelConfig) -> bool:
    return config.provider in DIRECT_PROVIDERS and bool(config.api_base or DIRECT_PROVIDERS[config.provider])


class HttpPool:
    """The connections to every upstream, shared by the whole gateway."""

    def __init__(self) -> None:
        self.client = Client()

    async def get(self, url: str, headers: dict[str, str], timeout_s: float) -> int:
        """The status of a GET (a health check); raises HTTPError or TimeoutError."""
        origin, target = self.client.origin(url)
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")
        response = await origin.request("GET", target, lines, b"", Timeouts(timeout_s, timeout_s, timeout_s))
        await response.read()
        return response.status

    async def close(self) -> None:
        self.client.close()


class OpenAICompatible(CloudModel):
    def __init__(self, config: CloudModelConfig, pool: HttpPool, forwards_priority: bool = False) -> None:
        super().__init__(config)
        self.forwards_priority = forwards_priority  # an edgeway edge node schedules by it
        base = (config.api_base or DIRECT_PROVIDERS[config.provider] or "").rstrip("/")
        self.base_url = base  # the provider's `/v1`: its chat endpoint and, where it has one, its batch API
        self._origin, self._target = pool.client.origin(f"{base}/chat/completions")
        _, self._legacy_target = pool.client.origin(f"{base}/completions")  # legacy text completions
        _, self._embeddings_target = pool.client.origin(f"{base}/embeddings")
        auth = b""
        if config.api_key is not None:
            auth = f"authorization: Bearer {config.api_key.get_secret_value()}\r\n".encode("latin-1")
        self._headers = b"content-type: application/json\r\naccept: application/json, text/event-stream\r\n" + auth
        self._timeouts = Timeouts(config.connect_timeout_s, config.read_timeout_s, config.timeout_s)
        # A stream may take longer than `timeout_s` in all; only silence ends it.
        self._stream_timeouts = Timeouts(config.connect_timeout_s, config.read_timeout_s, None)
        # a Responses request, where the provider takes it as sent (router/cloud/responses.py)
        self._responses = ResponsesEndpoint(
            Endpoint(config.name, pool.client, f"{base}/responses", auth, self._timeouts)
        )

    def _headers_now(self, request: ChatRequest | None = None) -> bytes:
        """The fixed headers, the current trace context for the provider, and to an edge node
        (`forwards_priority`) a background request's priority."""
        extra = outgoing_headers()  # the propagator checked what the client sent: no line breaks
        if self.forwards_priority and request is not None and request.background:
            extra["x-edgeway-priority"] = Priority.BACKGROUND
        if not extra:
            return self._headers
        return self._headers + "".join(f"{k}: {v}\r\n" for k, v in extra.items()).encode("latin-1")

    def _body(self, request: ChatRequest, stream: bool) -> bytes:
        body = dict(request.body)
        body["model"] = self.config.provider_model_id
        if stream:
            body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return orjson.dumps(body)

    async def _send(self, request: ChatRequest, body: bytes, timeouts: Timeouts) -> Response:
        target = self._target if request.prompt is None else self._legacy_target
        try:
            return await self._origin.request("POST", target, self._headers_now(request), body, timeouts)
        except (HTTPError, TimeoutError) as exc:
            raise self._transport_error(exc) from None

    async def _json(self, target: str, body: bytes, request: ChatRequest | None = None) -> Any:
        """POST `body` to `target` and the JSON it answers, or the error the answer is."""
        try:
            response = await self._origin.request("POST", target, self._headers_now(request), body, self._timeouts)
            content = await response.read()
        except (HTTPError, TimeoutError) as exc:
            raise self._transport_error(exc) from None
        if response.status >= 400:
            raise self._status_error(response.status, content)
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            raise UpstreamError(f"{self.name}: the provider answered with a body that is not JSON") from None

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        if request.speaks(self.apis & {Api.RESPONSES}):
            return await self._responses.complete(request, self.config.provider_model_id)
        target = self._target if request.prompt is None else self._legacy_target
        parsed = await self._json(target, self._body(request, False), request)
        if request.prompt is not None:
            body, usage = validate.text_completion(parsed, self.name)
        else:
            body, usage = validate.chat_completion(parsed, self.name)
        return Answer(body, usage)

    async def embed(self, request: ChatRequest) -> Answer:
        body = orjson.dumps({**request.body, "model": self.config.provider_model_id})
        parsed = await self._json(self._embeddings_target, body)
        answer, usage = validate.embeddings(parsed, self.name, len(request.inputs or ()))
        return Answer(answer, usage)

    async def stream(self, request: ChatRequest) -> SSEStream | ResponseStream:
        if request.speaks(self.apis & {Api.RESPONSES}):
            return await self._responses.stream(request, self.config.provider_model_id)
        response = await self._send(request, self._body(request, True), self._stream_timeouts)
        if response.status >= 400:
            try:
                content = await response.read()
            except (HTTPError, TimeoutError) as exc:
                raise self._transport_error(exc) from None
            raise self._status_error(response.status, content)
        return SSEStream(self, event_stream(self.name, response), legacy=request.prompt is not None)

    def _transport_error(self, exc: BaseException) -> UpstreamError:
        return transport_error(self.name, exc)

    def _status_error(self, status: int, content: bytes) -> Exception:
        return status_error(self.name, status, error_message(content))


class SSEStream:
    """The provider's server-sent events, parsed into chunk objects."""

    def __init__(self, model: OpenAICompatible, response: Response, legacy: bool = False) -> None:
        self._model = model
        self._response = response
        self._read = validate.text_chunk if legacy else validate.chunk  # as chat.completion.chunk objects
        self.usage = validate.unmeasured()  # until the provider's usage chunk arrives

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        name = self._model.name
        finished = False
        try:
            async for line in self._response.lines():
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    # The body's last chunk is on its way: read it, so that the connection goes
                    # back to the pool instead of being closed half-read.
                    await self._response.finish()
                    return
                chunk = self._read(orjson.loads(data), name)
                if "usage" in chunk and chunk["usage"] is not None:
                    self.usage = validate.usage_of(chunk["usage"]) or validate.unmeasured()
                if chunk.get("choices"):
                    finished = finished or any(c.get("finish_reason") for c in chunk["choices"])
                    yield chunk
            if not finished:
                raise UpstreamError(f"{name}: the provider's stream ended before the answer did")
        except (HTTPError, TimeoutError) as exc:
            raise self._model._transport_error(exc) from None
        except orjson.JSONDecodeError:
            raise UpstreamError(f"{self._model.name}: the provider sent an event that is not JSON") from None
        finally:
            self._response.release()

    async def aclose(self) -> None:
        self._response.release()
