"""Cloud models: OpenAI-compatible ones forwarded directly, Anthropic's in their own API where the
client speaks it, the rest through LiteLLM."""

from __future__ import annotations

from router.cloud.anthropic import AnthropicModel
from router.cloud.batch_api import batch_api_of
from router.cloud.config import CloudModelConfig
from router.cloud.litellm_adapter import LiteLLMModel
from router.cloud.litellm_module import warm_up
from router.cloud.openai_compat import HttpPool, OpenAICompatible, is_direct


def connect(config: CloudModelConfig, pool: HttpPool) -> OpenAICompatible | AnthropicModel | LiteLLMModel:
    model: OpenAICompatible | AnthropicModel | LiteLLMModel
    if is_direct(config):
        model = OpenAICompatible(config, pool)
    elif config.provider == "anthropic":
        model = AnthropicModel(config, pool.client)
    else:
        model = LiteLLMModel(config)
    openai_base = model.base_url if isinstance(model, OpenAICompatible) else None
    model.batch_api = batch_api_of(config, pool.client, openai_base)
    return model


def needs_litellm(configs: list[CloudModelConfig]) -> bool:
    """Whether a configured model is reached through LiteLLM (neither OpenAI-compatible nor Anthropic's)."""
    return any(not is_direct(c) and c.provider != "anthropic" for c in configs)


__all__ = [
    "AnthropicModel",
    "CloudModelConfig",
    "HttpPool",
    "LiteLLMModel",
    "OpenAICompatible",
    "connect",
    "needs_litellm",
    "warm_up",
]
