"""What a request costs: cloud prices from the config, else from LiteLLM's bundled price map.

The price map is the JSON file inside the litellm package, read directly (no `import litellm`,
no network). A local model costs what its config says: per 1M tokens, and/or its hardware's
price per hour for the time it was busy with the request (0 by default).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from router.answer import Usage
from router.cloud.config import CloudModelConfig
from router.cloud.price_map import map_entry

ESTIMATED_ANSWER_TOKENS = 1024  # what a request that names no max_tokens is priced at, at most

BATCH_DISCOUNT = 0.5  # a provider batch API's price where neither the config nor LiteLLM's map says


# Anthropic's published multiples of the input price, for a model of theirs that neither the config
# nor LiteLLM's map prices: a cache read, a write kept five minutes, and one kept an hour.
ANTHROPIC_CACHE = (0.1, 1.25, 2.0)


@dataclass(frozen=True)
class Price:
    input_per_token: float
    output_per_token: float
    per_second: float = 0.0  # hardware time, for local models priced by the hour
    batch: Price | None = None  # through the provider's batch API; None: BATCH_DISCOUNT of this one
    # a prompt's tokens read from and written to the provider's cache; None: as input tokens
    cache_read_per_token: float | None = None
    cache_write_per_token: float | None = None
    cache_write_1h_per_token: float | None = None  # a write kept an hour; None: as any write
    # False: a cloud model neither the config nor LiteLLM's map prices (charged $0, which is no saving)
    known: bool = True

    def cost(self, prompt_tokens: int, completion_tokens: int, seconds: float = 0.0) -> float:
        """Tokens with no cache in play (an estimate, a local model)."""
        return (
            prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token + seconds * self.per_second
        )

    def charge(self, usage: Usage, seconds: float = 0.0) -> float:
        """What `usage` costs: the prompt's uncached tokens at the input price, its cached share at
        the cache's read and write prices, the answer at the output price."""
        read, write, write_1h = self.cache_prices()
        written_1h = usage.cache_write_1h_tokens
        return (
            self.cost(usage.uncached_tokens, usage.completion_tokens, seconds)
            + usage.cache_read_tokens * read
            + (usage.cache_write_tokens - written_1h) * write
            + written_1h * write_1h
        )

    def cache_prices(self) -> tuple[float, float, float]:
        """Per token: a cache read, a write, a write kept an hour."""
        read = self.input_per_token if self.cache_read_per_token is None else self.cache_read_per_token
        write = self.input_per_token if self.cache_write_per_token is None else self.cache_write_per_token
        return read, write, write if self.cache_write_1h_per_token is None else self.cache_write_1h_per_token

    def worst_case(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What a budget reserves for `prompt_tokens` and `completion_tokens`: every prompt token at
        the dearer of the input and cache-write prices (a prompt an agent marks for the cache is
        written at Anthropic's 1.25x; an hour's write, at 2x, is rare enough to settle after)."""
        dearest = max(self.input_per_token, self.cache_prices()[1])
        return prompt_tokens * dearest + completion_tokens * self.output_per_token

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
    """A cloud model's price: the config's, else LiteLLM's map's. Its cache prices: the config's,
    else the map's, else Anthropic's published multiples for an Anthropic model, else the input
    price (no saving claimed that the provider may not give)."""
    given, entry = config.price, map_entry(config)
    if given is not None:
        batch = None
        if given.batch_input_per_1m is not None or given.batch_output_per_1m is not None:
            batch_in, batch_out = given.batch_input_per_1m, given.batch_output_per_1m
            batch = Price(
                (given.input_per_1m * BATCH_DISCOUNT if batch_in is None else batch_in) / 1e6,
                (given.output_per_1m * BATCH_DISCOUNT if batch_out is None else batch_out) / 1e6,
            )
        base = Price(given.input_per_1m / 1e6, given.output_per_1m / 1e6, batch=batch)
        listed = (given.cache_read_per_1m, given.cache_write_per_1m, given.cache_write_1h_per_1m)
        configured = tuple(None if p is None else p / 1e6 for p in listed)
    else:
        batch = None
        batches = (entry.get("input_cost_per_token_batches"), entry.get("output_cost_per_token_batches"))
        if batches[0] is not None and batches[1] is not None:
            batch = Price(float(batches[0]), float(batches[1]))
        inputs, outputs = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        known = inputs is not None or outputs is not None
        base = Price(float(inputs or 0.0), float(outputs or 0.0), batch=batch, known=known)
        configured = (None, None, None)
    read, write, write_1h = (
        _first(configured[0], entry.get("cache_read_input_token_cost")),
        _first(configured[1], entry.get("cache_creation_input_token_cost")),
        _first(configured[2], entry.get("cache_creation_input_token_cost_above_1hr")),
    )
    if config.provider == "anthropic":
        multiples = [base.input_per_token * m for m in ANTHROPIC_CACHE]
        read, write, write_1h = (
            _first(read, multiples[0]),
            _first(write, multiples[1]),
            _first(write_1h, multiples[2]),
        )
    return dataclasses.replace(
        base, cache_read_per_token=read, cache_write_per_token=write, cache_write_1h_per_token=write_1h
    )


def _first(*prices: object) -> float | None:
    """The first price given (a number), else None."""
    for price in prices:
        if isinstance(price, int | float) and not isinstance(price, bool):
            return float(price)
    return None


def cost_of(
    prices: Mapping[str, Price], model: str, usage: Usage, seconds: float = 0.0, *, batched: bool = False
) -> float:
    """What this usage of `model` cost, in USD, by `prices` (the ledger's one source of prices);
    `batched`: answered through the provider's batch API."""
    price = prices.get(model, FREE)
    if batched:
        price = price.batched()
    return price.charge(usage, seconds)
