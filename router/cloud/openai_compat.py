"""Cloud models that speak the OpenAI API, reached directly with one pooled httpx client.

No LiteLLM on this path: the request body is forwarded as the client sent it (only `model` is
replaced, and usage is asked for so that streamed answers can be priced).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import httpx

from router.answer import Answer, Usage
from router.cloud.config import CloudModelConfig
from router.errors import InvalidRequest, UpstreamError, UpstreamTimeout
from router.request import ChatRequest

# Providers whose chat endpoint is OpenAI's, and where it lives when the config gives no api_base.
DIRECT_PROVIDERS: dict[str, str | None] = {
    "openai": "https://api.openai.com/v1",
    "hosted_vllm": None,
    "openrouter": "https://openrouter.ai/api/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "groq": "https://api.groq.com/openai/v1",
}


def is_direct(config: CloudModelConfig) -> bool:
    return config.provider in DIRECT_PROVIDERS and (config.api_base or DIRECT_PROVIDERS[config.provider])


class OpenAICompatible:
    tier = "cloud"

    def __init__(self, config: CloudModelConfig, client: httpx.AsyncClient) -> None:
        self.name = config.name
        self.config = config
        base = (config.api_base or DIRECT_PROVIDERS[config.provider] or "").rstrip("/")
        self._url = f"{base}/chat/completions"
        self._client = client
        self._headers = {"content-type": "application/json"}
        if config.api_key is not None:
            self._headers["authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._timeout = httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s)

    def _body(self, request: ChatRequest, stream: bool) -> bytes:
        body = dict(request.body)
        body["model"] = self.config.provider_model_id
        if stream:
            body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return json.dumps(body).encode()

    async def complete(self, request: ChatRequest) -> Answer:
        try:
            response = await self._client.post(self._url, content=self._body(request, False),
                                               headers=self._headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            raise self._status_error(response.status_code, response.content)
        try:
            body = response.json()
        except ValueError:
            raise UpstreamError(f"{self.name}: the provider answered with a body that is not JSON") from None
        usage = body.get("usage") or {}
        return Answer(body, Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)))

    async def stream(self, request: ChatRequest) -> "SSEStream":
        http_request = self._client.build_request("POST", self._url, content=self._body(request, True),
                                                  headers=self._headers, timeout=self._timeout)
        try:
            response = await self._client.send(http_request, stream=True)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            content = await response.aread()
            await response.aclose()
            raise self._status_error(response.status_code, content)
        return SSEStream(self, response)

    def _transport_error(self, exc: httpx.HTTPError) -> UpstreamError:
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamTimeout(f"{self.name}: the provider did not answer in time ({type(exc).__name__})")
        return UpstreamError(f"{self.name}: could not reach the provider ({type(exc).__name__}: {exc})")

    def _status_error(self, status: int, content: bytes) -> Exception:
        reason = _error_message(content)
        message = f"{self.name}: the provider answered {status}: {reason}"
        if status in (400, 404, 413, 422):
            # The provider refused the request itself: the client can fix it, retrying cannot.
            return InvalidRequest(message, code="upstream_rejected")
        if status == 408 or status == 504:
            return UpstreamTimeout(message, provider_status=status)
        return UpstreamError(message, provider_status=status)


class SSEStream:
    """The provider's server-sent events, parsed into chunk objects."""

    def __init__(self, model: OpenAICompatible, response: httpx.Response) -> None:
        self._model = model
        self._response = response
        self.usage = Usage()

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for line in self._response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                chunk = json.loads(data)
                if "error" in chunk:
                    raise UpstreamError(f"{self._model.name}: the provider ended the stream with an error: "
                                        f"{_error_message(data.encode())}")
                if chunk.get("usage"):
                    self.usage = Usage(chunk["usage"].get("prompt_tokens", 0),
                                       chunk["usage"].get("completion_tokens", 0))
                if chunk.get("choices"):
                    yield chunk
        except httpx.HTTPError as exc:
            raise self._model._transport_error(exc) from None
        except json.JSONDecodeError:
            raise UpstreamError(f"{self._model.name}: the provider sent an event that is not JSON") from None
        finally:
            await self._response.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


def _error_message(content: bytes) -> str:
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return content[:300].decode("utf-8", "replace") or "(empty body)"
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
