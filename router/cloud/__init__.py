"""Cloud models: OpenAI-compatible ones forwarded directly, the rest through LiteLLM."""

from __future__ import annotations

from router.cloud.batch_api import batch_api_of
from router.cloud.config import CloudModelConfig
from router.cloud.litellm_adapter import LiteLLMModel
from router.cloud.litellm_module import warm_up
from router.cloud.openai_compat import HttpPool, OpenAICompatible, is_direct


def connect(config: CloudModelConfig, pool: HttpPool) -> OpenAICompatible | LiteLLMModel:
    model = OpenAICompatible(config, pool) if is_direct(config) else LiteLLMModel(config)
    openai_base = model.base_url if isinstance(model, OpenAICompatible) else None
    model.batch_api = batch_api_of(config, pool.client, openai_base)
    return model


def needs_litellm(configs: list[CloudModelConfig]) -> bool:
    return any(not is_direct(c) for c in configs)


__all__ = [
    "CloudModelConfig",
    "HttpPool",
    "LiteLLMModel",
    "OpenAICompatible",
    "connect",
    "needs_litellm",
    "warm_up",
]
