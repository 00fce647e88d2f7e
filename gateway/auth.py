"""Who is calling: app keys from the config, kept only as hashes and compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from router.caller import Caller
from router.errors import Unauthorized
from router.policy_rules import PolicyRules


@dataclass(frozen=True)
class App:
    """An app as configured: its name, and `now`, which makes the app as it is for one request
    (`router.caller.Caller`: one version of its policy, budget, limits, caching and shadow for
    the whole request, even if the file is reloaded meanwhile)."""

    name: str
    now: Callable[[], Caller]


def policy_app(name: str, rules: PolicyRules, default_cloud: str | None, log_prompts: bool = False) -> App:
    """An app whose policy is a file (`rules`, which a reload changes): each request reads one
    version of it, from its first check to its row; the cloud model its savings are counted
    against is the policy's default cloud model, else `default_cloud`, and none where the policy
    keeps the app off the cloud (`allow_cloud: false`: a model it can never use is no
    counterfactual)."""

    def now() -> Caller:
        version = rules.snapshot()
        spec = version.current().spec
        return Caller(
            name,
            version,
            version.budget(),
            version.limits(),
            version.cache(),
            version.shadow(),
            (spec.defaults.cloud or default_cloud) if spec.allow_cloud else None,
            log_prompts,
            version.session(),
            spec.allow_cloud,
        )

    return App(name, now)


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
