"""Cloud models: OpenAI-compatible ones forwarded directly, the rest through LiteLLM."""

from __future__ import annotations

import httpx

from router.cloud.config import CloudModelConfig, Price
from router.cloud.litellm_adapter import LiteLLMModel, warm_up
from router.cloud.openai_compat import OpenAICompatible, is_direct


def connect(config: CloudModelConfig, client: httpx.AsyncClient) -> OpenAICompatible | LiteLLMModel:
    return OpenAICompatible(config, client) if is_direct(config) else LiteLLMModel(config)


def needs_litellm(configs: list[CloudModelConfig]) -> bool:
    return any(not is_direct(c) for c in configs)


__all__ = ["CloudModelConfig", "LiteLLMModel", "OpenAICompatible", "Price", "connect", "needs_litellm", "warm_up"]
