"""LiteLLM itself, imported once. `import litellm` costs about 10 s and 200 MB, so it happens off
the event loop: while the gateway starts (`warm_up()`, before it is ready) where a configured model
is reached through it, else when a batch first needs it; and it never fetches LiteLLM's price map
from the network."""

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
