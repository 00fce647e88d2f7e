"""Who is calling: app keys from the config, kept only as hashes and compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from router.budget import AppBudget
from router.cache import CachePolicy
from router.caller import Caller
from router.decision import Policy
from router.errors import Unauthorized
from router.limits import Limits
from router.served import ShadowPolicy


@dataclass(frozen=True)
class App:
    name: str
    policy: Policy
    budget: Callable[[], AppBudget | None] = lambda: None  # read per request: a reload applies at once
    reference: Callable[[], str | None] = lambda: None  # the cloud model of the all-cloud counterfactual
    limits: Callable[[], Limits | None] = lambda: None  # read per request
    log_prompts: bool = False  # the ledger keeps its prompts (masked) for the dashboard
    cache: Callable[[], CachePolicy | None] = lambda: None  # read per request
    shadow: Callable[[], ShadowPolicy | None] = lambda: None  # read per request
    # this app with every read above bound to the policy file as it is now (None: nothing reloads)
    snapshot: Callable[[], App] | None = None

    def now(self) -> App:
        """This app for one request: one version of its policy for the whole request, even if the
        file is reloaded meanwhile."""
        return self if self.snapshot is None else self.snapshot()

    def caller(self) -> Caller:
        """This app as the router sees it now."""
        return Caller(self.name, self.policy, self.budget(), self.limits(), self.cache())


def key_hash(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


class AppKeys:
    """Maps a bearer key to its app. With no apps configured every caller is the `default` app
    (the gateway then listens on loopback only; see GatewayConfig.require_auth_or_loopback)."""

    def __init__(self, apps: list[tuple[str, App]], open_app: App | None = None) -> None:
        self._apps = [(key_hash(key), app) for key, app in apps]
        self._open_app = open_app

    def apps(self) -> list[App]:
        return [self._open_app] if self._open_app is not None else [app for _, app in self._apps]

    @property
    def open(self) -> bool:
        return self._open_app is not None

    def find(self, key: str) -> App | None:
        digest = key_hash(key)
        found = None
        for stored, app in self._apps:  # compare against every key so timing says nothing
            if hmac.compare_digest(stored, digest):
                found = app
        return found

    def named(self, name: str) -> App | None:
        """The app of this name (a batch's, whose lines carry no key)."""
        return next((app for app in self.apps() if app.name == name), None)

    def identify(self, authorization: str | None) -> App:
        if self._open_app is not None:
            return self._open_app
        if not authorization:
            raise Unauthorized("Missing API key: send your app key as 'Authorization: Bearer <key>'.")
        scheme, _, key = authorization.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthorized("Malformed Authorization header: expected 'Bearer <key>'.")
        found = self.find(key.strip())
        if found is None:
            raise Unauthorized("Incorrect API key provided. Use the key of an app configured on this gateway.")
        return found
