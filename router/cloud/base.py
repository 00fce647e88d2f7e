"""What every cloud model shares: its config, guarded calls, no queue of its own."""

from __future__ import annotations

from policies.needs import Need
from router.cloud.batch_api import ProviderBatchAPI
from router.cloud.config import CloudModelConfig
from router.cloud.price_map import known_context_window, known_mode
from router.errors import BodyTooLarge, EdgewayError, InvalidRequest, UpstreamError, UpstreamNotFound, UpstreamTimeout
from router.tier import IDLE, Capacity, Resilience, TierKind

CHAT = frozenset(Need) - {Need.EMBEDDINGS}  # forwarded: the provider honors or refuses them
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
        self.batch_api: ProviderBatchAPI | None = None  # its provider's batch API, where edgeway speaks it
        self.apis = config.native_apis  # what it takes as the client sent it (router.native)

    def capacity(self) -> Capacity:
        return IDLE


def status_error(name: str, status: int, reason: str) -> EdgewayError:
    """A provider's error status as the client hears it: `refused` where the request itself was
    at fault, a timeout for 408 and 504, else an upstream error carrying the provider's status."""
    message = f"{name}: the provider answered {status}: {reason}"
    refusal = refused(status, message)
    if refusal is not None:
        return refusal
    if status in (408, 504):
        return UpstreamTimeout(message, provider_status=status)
    return UpstreamError(message, provider_status=status)


def refused(status: int | None, message: str) -> EdgewayError | None:
    """A provider's refusal of the request itself, as the client hears it: 404 stays 404 (the
    gateway's config names a model or path the provider does not serve; another target may
    answer), 413 stays 413, and 400 or 422 is a request the client must change (retrying cannot
    help). None for any other status."""
    if status == 404:
        return UpstreamNotFound(message)
    if status == 413:
        return BodyTooLarge(message, code="upstream_too_large")
    if status in (400, 422):
        return InvalidRequest(message, code="upstream_rejected")
    return None
