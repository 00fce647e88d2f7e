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

ESTIMATED_ANSWER_TOKENS = 1024  # what a request that names no max_tokens is priced at, at most

BATCH_DISCOUNT = 0.5  # a provider batch API's price where neither the config nor LiteLLM's map says


@dataclass(frozen=True)
class Price:
    input_per_token: float
    output_per_token: float
    per_second: float = 0.0  # hardware time, for local models priced by the hour
    batch: Price | None = None  # through the provider's batch API; None: BATCH_DISCOUNT of this one

    def cost(self, prompt_tokens: int, completion_tokens: int, seconds: float = 0.0) -> float:
        return (
            prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token + seconds * self.per_second
        )

    def batched(self) -> Price:
        """The price of the same tokens answered through the provider's batch API."""
        if self.batch is not None:
            return self.batch
        return Price(self.input_per_token * BATCH_DISCOUNT, self.output_per_token * BATCH_DISCOUNT)


FREE = Price(0.0, 0.0)


def edge_price_of(usd_per_1m_tokens: float, usd_per_hour: float) -> Price:
    """A local model: per token (input and output alike), and/or hardware by the hour of busy time."""
    return Price(usd_per_1m_tokens / 1e6, usd_per_1m_tokens / 1e6, usd_per_hour / 3600)


def price_of(config: CloudModelConfig) -> Price:
    given = config.price
    if given is not None:
        batch = None
        if given.batch_input_per_1m is not None or given.batch_output_per_1m is not None:
            batch_in, batch_out = given.batch_input_per_1m, given.batch_output_per_1m
            batch = Price(
                (given.input_per_1m * BATCH_DISCOUNT if batch_in is None else batch_in) / 1e6,
                (given.output_per_1m * BATCH_DISCOUNT if batch_out is None else batch_out) / 1e6,
            )
        return Price(given.input_per_1m / 1e6, given.output_per_1m / 1e6, batch=batch)
    entry = map_entry(config)
    batch = None
    if entry.get("input_cost_per_token_batches") is not None and entry.get("output_cost_per_token_batches") is not None:
        batch = Price(float(entry["input_cost_per_token_batches"]), float(entry["output_cost_per_token_batches"]))
    return Price(
        float(entry.get("input_cost_per_token") or 0.0), float(entry.get("output_cost_per_token") or 0.0), batch=batch
    )


def cost_of(
    prices: Mapping[str, Price], model: str, usage: Usage, seconds: float = 0.0, *, batched: bool = False
) -> float:
    """What this usage of `model` cost, in USD, by `prices` (the ledger's one source of prices);
    `batched`: answered through the provider's batch API."""
    price = prices.get(model, FREE)
    if batched:
        price = price.batched()
    return price.cost(usage.prompt_tokens, usage.completion_tokens, seconds)
