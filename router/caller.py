"""Who asks, and what they route by: the app as it is for one request."""

from __future__ import annotations

from dataclasses import dataclass

from router.budget import AppBudget
from router.cache import CachePolicy
from router.decision import Policy
from router.limits import Limits


@dataclass(frozen=True)
class Caller:
    """Who asks, and what they route by: read per request, so a reloaded policy applies at once."""

    app: str
    policy: Policy
    budget: AppBudget | None = None
    limits: Limits | None = None
    cache: CachePolicy | None = None
