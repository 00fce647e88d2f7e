"""Cloud models of providers with their own wire format (Anthropic, Gemini, Bedrock, ...),
translated by LiteLLM (imported once, off the event loop: `router.cloud.litellm_module`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from router.answer import Answer
from router.cloud import validate
from router.cloud.base import CloudModel, refused
from router.cloud.litellm_module import load_litellm
from router.errors import InvalidRequest, UpstreamError, UpstreamTimeout
from router.request import ChatRequest
from router.tracing import outgoing_headers

# Keys of an OpenAI body that LiteLLM takes as named arguments instead of passing on.
# ("prompt": a legacy text completion goes to LiteLLM as a chat with the prompt as the user's turn.)
_OWN_KEYS = ("model", "messages", "stream", "stream_options", "prompt")


class LiteLLMModel(CloudModel):
    def _arguments(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        args = {k: v for k, v in request.body.items() if k not in _OWN_KEYS}
        args.update(
            model=self.config.provider_model,
            messages=request.messages,
            stream=stream,
            timeout=self.config.timeout_s,
            num_retries=0,
        )
        if stream:
            args["stream_options"] = {"include_usage": True}
        trace = outgoing_headers()
        if trace:
            args["extra_headers"] = trace
        if self.config.api_key is not None:
            args["api_key"] = self.config.api_key.get_secret_value()
        if self.config.api_base:
            args["api_base"] = self.config.api_base
        return args

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        litellm = await asyncio.to_thread(load_litellm)
        try:
            response = await litellm.acompletion(**self._arguments(request, False))
        except Exception as exc:  # LiteLLM raises its own hierarchy; all of it maps to one of ours
            raise self._error(litellm, exc) from None
        body, usage = validate.chat_completion(response.model_dump(exclude_none=False), self.name)
        return Answer(body, usage)

    async def embed(self, request: ChatRequest) -> Answer:
        litellm = await asyncio.to_thread(load_litellm)
        args: dict[str, Any] = {"model": self.config.provider_model, "input": list(request.inputs or ())}
        if self.config.api_key is not None:
            args["api_key"] = self.config.api_key.get_secret_value()
        if self.config.api_base:
            args["api_base"] = self.config.api_base
        try:
            response = await litellm.aembedding(**args, timeout=self.config.timeout_s)
        except Exception as exc:  # LiteLLM raises its own hierarchy; all of it maps to one of ours
            raise self._error(litellm, exc) from None
        answer, usage = validate.embeddings(response.model_dump(), self.name, len(request.inputs or ()))
        return Answer(answer, usage)

    async def stream(self, request: ChatRequest) -> LiteLLMStream:
        litellm = await asyncio.to_thread(load_litellm)
        try:
            wrapper = await litellm.acompletion(**self._arguments(request, True))
            iterator = wrapper.__aiter__()
            first = await iterator.__anext__()  # the provider has accepted the request once this arrives
        except StopAsyncIteration:
            raise UpstreamError(f"{self.name}: the provider closed the stream without answering") from None
        except Exception as exc:
            raise self._error(litellm, exc) from None
        return LiteLLMStream(self, litellm, first, iterator)

    def _error(self, litellm: Any, exc: Exception) -> Exception:
        status = getattr(exc, "status_code", None)
        message = f"{self.name}: {getattr(exc, 'message', None) or exc}"
        if isinstance(exc, (litellm.Timeout, asyncio.TimeoutError)):
            return UpstreamTimeout(message)
        refusal = refused(status if isinstance(status, int) else None, message)
        if refusal is not None:
            return refusal
        if isinstance(exc, litellm.BadRequestError):
            return InvalidRequest(message, code="upstream_rejected")
        return UpstreamError(message, provider_status=status if isinstance(status, int) else None)


class LiteLLMStream:
    def __init__(self, model: LiteLLMModel, litellm: Any, first: Any, iterator: Any) -> None:
        self._model = model
        self._litellm = litellm
        self._first = first
        self._iterator = iterator
        self.usage = validate.unmeasured()  # until the provider's usage arrives

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        chunk = self._first
        while True:
            body = validate.chunk(chunk.model_dump(exclude_none=True), self._model.name)
            usage = body.pop("usage", None)
            if usage:
                self.usage = validate.usage_of(usage) or validate.unmeasured()
            if body.get("choices"):
                yield body
            try:
                chunk = await self._iterator.__anext__()
            except StopAsyncIteration:
                return
            except Exception as exc:
                raise self._model._error(self._litellm, exc) from None

    async def aclose(self) -> None:
        close = getattr(self._iterator, "aclose", None)
        if close is not None:
            await close()
