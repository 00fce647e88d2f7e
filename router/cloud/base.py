"""What every cloud model shares: its config, guarded calls, no queue of its own."""

from __future__ import annotations

from router.cloud.config import CloudModelConfig
from router.cloud.price_map import known_context_window
from router.request import FEATURE_FIELDS
from router.tier import IDLE, Capacity, Resilience, TierKind


class CloudModel:
    tier: TierKind = "cloud"
    capabilities: frozenset[str] = frozenset(FEATURE_FIELDS)  # forwarded: the provider honors or refuses them

    def __init__(self, config: CloudModelConfig) -> None:
        self.name = config.name
        self.config = config
        self.context_window = known_context_window(config)  # None: only the provider knows
        self.resilience: Resilience | None = Resilience(
            config.retries, config.circuit_failures, config.circuit_cooldown_s
        )

    def capacity(self) -> Capacity:
        return IDLE
