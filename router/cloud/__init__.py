"""Cloud models: OpenAI-compatible ones forwarded directly, the rest through LiteLLM."""

from __future__ import annotations

from router.cloud.batch_api import batch_api_of
from router.cloud.config import CloudModelConfig
from router.cloud.litellm_adapter import LiteLLMModel, warm_up
from router.cloud.openai_compat import HttpPool, OpenAICompatible, is_direct


def connect(config: CloudModelConfig, pool: HttpPool) -> OpenAICompatible | LiteLLMModel:
    direct = is_direct(config)
    model = OpenAICompatible(config, pool) if direct else LiteLLMModel(config)
    model.batch_api = batch_api_of(config, pool.client, direct)
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
