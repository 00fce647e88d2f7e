"""Cloud models that speak the OpenAI API, reached directly over one pooled aiohttp session.

No LiteLLM on this path, and as little work as the wire allows: the request body is forwarded as
the client sent it (only `model` is replaced, and usage is asked for so that streamed answers can
be priced), and a whole answer is parsed once, with orjson.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import aiohttp
import orjson

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
    return config.provider in DIRECT_PROVIDERS and bool(config.api_base or DIRECT_PROVIDERS[config.provider])


class HttpPool:
    """One keep-alive connection pool for every upstream, made inside the running event loop."""

    def __init__(self, limit: int = 512) -> None:
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._limit, keepalive_timeout=60, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=True,
                                                  skip_auto_headers=("User-Agent",))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


class OpenAICompatible:
    tier = "cloud"

    def __init__(self, config: CloudModelConfig, pool: HttpPool) -> None:
        self.name = config.name
        self.config = config
        base = (config.api_base or DIRECT_PROVIDERS[config.provider] or "").rstrip("/")
        self._url = f"{base}/chat/completions"
        self._pool = pool
        self._headers = {"content-type": "application/json"}
        if config.api_key is not None:
            self._headers["authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._timeout = aiohttp.ClientTimeout(total=config.timeout_s, sock_connect=config.connect_timeout_s,
                                              sock_read=config.read_timeout_s)
        # A stream may take longer than `timeout_s` in all; only silence ends it.
        self._stream_timeout = aiohttp.ClientTimeout(total=None, sock_connect=config.connect_timeout_s,
                                                     sock_read=config.read_timeout_s)

    def _body(self, request: ChatRequest, stream: bool) -> bytes:
        body = dict(request.body)
        body["model"] = self.config.provider_model_id
        if stream:
            body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return orjson.dumps(body)

    async def complete(self, request: ChatRequest) -> Answer:
        try:
            async with self._pool.session().post(self._url, data=self._body(request, False), headers=self._headers,
                                                 timeout=self._timeout) as response:
                content = await response.read()
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise self._transport_error(exc) from None
        if status >= 400:
            raise self._status_error(status, content)
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise UpstreamError(f"{self.name}: the provider answered with a body that is not JSON") from None
        usage = body.get("usage") or {}
        return Answer(body, Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)))

    async def stream(self, request: ChatRequest) -> "SSEStream":
        try:
            response = await self._pool.session().post(self._url, data=self._body(request, True),
                                                       headers=self._headers, timeout=self._stream_timeout)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise self._transport_error(exc) from None
        if response.status >= 400:
            content = await response.read()
            response.release()
            raise self._status_error(response.status, content)
        return SSEStream(self, response)

    def _transport_error(self, exc: BaseException) -> UpstreamError:
        if isinstance(exc, asyncio.TimeoutError):
            return UpstreamTimeout(f"{self.name}: the provider did not answer in time")
        return UpstreamError(f"{self.name}: could not reach the provider ({type(exc).__name__}: {exc})")

    def _status_error(self, status: int, content: bytes) -> Exception:
        reason = _error_message(content)
        message = f"{self.name}: the provider answered {status}: {reason}"
        if status in (400, 404, 413, 422):
            # The provider refused the request itself: the client can fix it, retrying cannot.
            return InvalidRequest(message, code="upstream_rejected")
        if status in (408, 504):
            return UpstreamTimeout(message, provider_status=status)
        return UpstreamError(message, provider_status=status)


class SSEStream:
    """The provider's server-sent events, parsed into chunk objects."""

    def __init__(self, model: OpenAICompatible, response: aiohttp.ClientResponse) -> None:
        self._model = model
        self._response = response
        self.usage = Usage()

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for line in self._response.content:
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                chunk = orjson.loads(data)
                if "error" in chunk:
                    raise UpstreamError(f"{self._model.name}: the provider ended the stream with an error: "
                                        f"{_error_message(data)}")
                if chunk.get("usage"):
                    self.usage = Usage(chunk["usage"].get("prompt_tokens", 0),
                                       chunk["usage"].get("completion_tokens", 0))
                if chunk.get("choices"):
                    yield chunk
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise self._model._transport_error(exc) from None
        except orjson.JSONDecodeError:
            raise UpstreamError(f"{self._model.name}: the provider sent an event that is not JSON") from None
        finally:
            self._response.release()

    async def aclose(self) -> None:
        self._response.close()


def _error_message(content: bytes) -> str:
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content[:300].decode("utf-8", "replace") or "(empty body)"
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
