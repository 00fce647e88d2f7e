"""LiteLLM itself, imported once. `import litellm` costs about 12 s and 200 MB, so it happens off
the event loop, when the first model or batch that needs it is used, or when `warm_up()` is called
after the gateway is ready; and it never fetches LiteLLM's price map from the network."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

_lock = threading.Lock()
_module: Any = None


def load_litellm() -> Any:
    """Import LiteLLM once (blocking); every caller after the first gets the same module."""
    global _module
    with _lock:
        if _module is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.telemetry = False
            litellm.drop_params = True  # a provider that lacks an OpenAI parameter ignores it
            litellm.suppress_debug_info = True
            _module = litellm
        return _module


async def warm_up() -> None:
    await asyncio.to_thread(load_litellm)
