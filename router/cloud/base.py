"""What every cloud model shares: its config, guarded calls, no queue of its own."""

from __future__ import annotations

from router.cloud.config import CloudModelConfig
from router.cloud.price_map import known_context_window, known_mode
from router.request import FEATURE_FIELDS
from router.tier import IDLE, Capacity, Resilience, TierKind

CHAT = frozenset(FEATURE_FIELDS) - {"embeddings"}  # forwarded: the provider honors or refuses them
EMBEDDING = frozenset({"embeddings"})


class CloudModel:
    tier: TierKind = "cloud"

    def __init__(self, config: CloudModelConfig) -> None:
        self.name = config.name
        self.config = config
        self.context_window = known_context_window(config)  # None: only the provider knows
        default = EMBEDDING if known_mode(config) == "embedding" else CHAT
        self.capabilities = default if config.capabilities is None else frozenset(config.capabilities)
        self.resilience: Resilience | None = Resilience(
            config.retries, config.circuit_failures, config.circuit_cooldown_s
        )

    def capacity(self) -> Capacity:
        return IDLE
