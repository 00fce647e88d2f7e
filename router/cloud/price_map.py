"""What LiteLLM's bundled model map says about a cloud model: its prices and its context window.

The map is the JSON file inside the litellm package, read directly: no `import litellm` (seconds),
no network."""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from router.cloud.config import CloudModelConfig


@lru_cache(maxsize=1)
def litellm_price_map() -> dict[str, dict[str, Any]]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(spec.submodule_search_locations[0]) / "model_prices_and_context_window_backup.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def map_entry(config: CloudModelConfig) -> dict[str, Any]:
    table = litellm_price_map()
    return table.get(config.provider_model) or table.get(config.provider_model_id) or {}


def known_mode(config: CloudModelConfig) -> str:
    """ "chat" or "embedding": what the config says, else LiteLLM's map, else chat."""
    if config.mode is not None:
        return config.mode
    return "embedding" if map_entry(config).get("mode") == "embedding" else "chat"


def known_context_window(config: CloudModelConfig) -> int | None:
    """The context window the config gives, else the one in LiteLLM's map, else None."""
    if config.context_window is not None:
        return config.context_window
    window = map_entry(config).get("max_input_tokens")
    return window if isinstance(window, int) and window > 0 else None
