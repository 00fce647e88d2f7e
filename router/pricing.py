"""What a request costs: cloud prices from the config, else from LiteLLM's bundled price map.

The price map is the JSON file inside the litellm package, read directly (no `import litellm`,
no network). Local models cost nothing per token here; hardware cost accounting belongs to the
ledger.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from router.cloud.config import CloudModelConfig


@dataclass(frozen=True)
class Price:
    input_per_token: float
    output_per_token: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token


FREE = Price(0.0, 0.0)


@lru_cache(maxsize=1)
def litellm_price_map() -> dict:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(spec.submodule_search_locations[0]) / "model_prices_and_context_window_backup.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def price_of(config: CloudModelConfig) -> Price:
    if config.price is not None:
        return Price(config.price.input_per_1m / 1e6, config.price.output_per_1m / 1e6)
    table = litellm_price_map()
    entry = table.get(config.provider_model) or table.get(config.provider_model_id) or {}
    return Price(float(entry.get("input_cost_per_token") or 0.0), float(entry.get("output_cost_per_token") or 0.0))
