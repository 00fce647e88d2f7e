"""What a request costs: cloud prices from the config, else from LiteLLM's bundled price map.

The price map is the JSON file inside the litellm package, read directly (no `import litellm`,
no network). A local model costs what its config says: per 1M tokens, and/or its hardware's
price per hour for the time it was busy with the request (0 by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from router.answer import Usage
from router.cloud.config import CloudModelConfig
from router.cloud.price_map import map_entry


@dataclass(frozen=True)
class Price:
    input_per_token: float
    output_per_token: float
    per_second: float = 0.0  # hardware time, for local models priced by the hour

    def cost(self, prompt_tokens: int, completion_tokens: int, seconds: float = 0.0) -> float:
        return (
            prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token + seconds * self.per_second
        )


FREE = Price(0.0, 0.0)


def edge_price_of(usd_per_1m_tokens: float, usd_per_hour: float) -> Price:
    """A local model: per token (input and output alike), and/or hardware by the hour of busy time."""
    return Price(usd_per_1m_tokens / 1e6, usd_per_1m_tokens / 1e6, usd_per_hour / 3600)


def price_of(config: CloudModelConfig) -> Price:
    if config.price is not None:
        return Price(config.price.input_per_1m / 1e6, config.price.output_per_1m / 1e6)
    entry = map_entry(config)
    return Price(float(entry.get("input_cost_per_token") or 0.0), float(entry.get("output_cost_per_token") or 0.0))


def cost_of(prices: Mapping[str, Price], model: str, usage: Usage, seconds: float = 0.0) -> float:
    """What this usage of `model` cost, in USD, by `prices` (the ledger's one source of prices)."""
    return prices.get(model, FREE).cost(usage.prompt_tokens, usage.completion_tokens, seconds)
