"""Who asks, and what they route by: the app as it is for one request, built once per request
from one version of its policy (a reload meanwhile applies to the next request)."""

from __future__ import annotations

from dataclasses import dataclass

from router.budget import AppBudget
from router.cache import CachePolicy
from router.decision import Policy
from router.limits import Limits
from router.served import ShadowPolicy
from router.sessions import SessionPolicy


@dataclass(frozen=True)
class Caller:
    """Who asks, and what they route by: the app's name, its policy, budget, limits and caching,
    the shadow comparisons it asks for, the cloud model its savings are counted against (none for
    an app that may not reach the cloud: it has no counterfactual), whether its ledger rows keep
    prompts, and whether any of its requests may reach a cloud model at all."""

    name: str  # the app's
    policy: Policy
    budget: AppBudget | None = None
    limits: Limits | None = None
    cache: CachePolicy | None = None
    shadow: ShadowPolicy | None = None
    reference: str | None = None  # the cloud model of the all-cloud counterfactual
    log_prompts: bool = False  # the ledger keeps its prompts (masked) for the dashboard
    session: SessionPolicy = SessionPolicy()  # whether a conversation's turns keep their model
    cloud: bool = True  # False for a policy's `allow_cloud: false`: edge models only, ever
