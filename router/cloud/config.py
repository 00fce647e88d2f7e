"""What one cloud model needs: the `cloud.models` entries of the gateway config."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from policies.schema import known_needs
from router.native import Api

DEFAULT_APIS = {
    "anthropic": frozenset({Api.MESSAGES}),
    "openai": frozenset({Api.CHAT_COMPLETIONS, Api.RESPONSES}),
}


class PriceConfig(BaseModel):
    """`cloud.models[].price`: USD per 1M tokens, as providers publish them."""

    model_config = ConfigDict(extra="forbid")

    input_per_1m: float = Field(ge=0)
    output_per_1m: float = Field(ge=0)
    # through the provider's batch API; else LiteLLM's map says, else half (OpenAI's, Anthropic's
    # and Groq's published discount)
    batch_input_per_1m: float | None = Field(None, ge=0)
    batch_output_per_1m: float | None = Field(None, ge=0)
    # a prompt's tokens read from the provider's prompt cache, and written to it (kept five minutes,
    # and an hour); else LiteLLM's map says, else Anthropic's multiples for its models, else input
    cache_read_per_1m: float | None = Field(None, ge=0)
    cache_write_per_1m: float | None = Field(None, ge=0)
    cache_write_1h_per_1m: float | None = Field(None, ge=0)


class CloudModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    provider_model: str  # a LiteLLM model string: provider/model
    api_key: SecretStr | None = None
    api_base: str | None = None
    price: PriceConfig | None = None
    context_window: int | None = Field(None, ge=1)  # prompt + answer tokens; else LiteLLM's map says
    mode: Literal["chat", "embedding"] | None = None  # what the model does; else LiteLLM's map says, else chat
    # What it honors beyond plain chat (of policies.needs.Need); else every request field is
    # forwarded and the provider honors or refuses it. A need left out is routed elsewhere.
    capabilities: list[str] | None = None
    timeout_s: float = Field(60.0, gt=0)  # the whole non-streamed answer
    connect_timeout_s: float = Field(5.0, gt=0)
    read_timeout_s: float = Field(30.0, gt=0)  # the longest silence: before the first byte, between chunks
    retries: int = Field(2, ge=0, le=10)  # on 429, 5xx, timeouts and broken connections only
    circuit_failures: int = Field(5, ge=1)  # failed attempts in a row (retries included) that open the circuit
    circuit_cooldown_s: float = Field(10.0, gt=0)  # how long it stays open before one probe
    # Batch lines routed here go through the provider's own batch API, at its batch price
    # (router/cloud/batch_api.py). None: on for the providers known to have one.
    batch_api: bool | None = None
    # The APIs its provider takes a request in as the client sent it (the rest are translated to
    # one it takes). None: Messages for Anthropic's models, Chat Completions and Responses for
    # OpenAI's, Chat Completions for the other OpenAI-compatible providers.
    apis: list[Api] | None = None

    @field_validator("capabilities")
    @classmethod
    def _known_capabilities(cls, value: list[str] | None) -> list[str] | None:
        return known_needs(value)

    @field_validator("provider_model")
    @classmethod
    def _has_provider(cls, value: str) -> str:
        if "/" not in value.strip("/"):
            raise ValueError("expected a LiteLLM model string 'provider/model', such as 'openai/gpt-4o-mini'")
        return value

    @property
    def provider(self) -> str:
        return self.provider_model.split("/", 1)[0]

    @property
    def native_apis(self) -> frozenset[Api]:
        """The APIs its provider takes requests in as sent (`apis`, else its provider's own)."""
        if self.apis is not None:
            return frozenset(self.apis)
        return DEFAULT_APIS.get(self.provider, frozenset({Api.CHAT_COMPLETIONS}))

    @property
    def provider_model_id(self) -> str:
        return self.provider_model.split("/", 1)[1]
