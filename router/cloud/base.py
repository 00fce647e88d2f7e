"""What every cloud model shares: its config, guarded calls, no queue of its own."""

from __future__ import annotations

from router.cloud.config import CloudModelConfig
from router.tier import IDLE, Capacity, Resilience, TierKind


class CloudModel:
    tier: TierKind = "cloud"
    context_window: int | None = None  # the provider enforces its own and answers 400 past it

    def __init__(self, config: CloudModelConfig) -> None:
        self.name = config.name
        self.config = config
        self.resilience: Resilience | None = Resilience(
            config.retries, config.circuit_failures, config.circuit_cooldown_s
        )

    def capacity(self) -> Capacity:
        return IDLE
