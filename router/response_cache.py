"""The response cache as one step of a request: before admission, an answer already given to the
same request (exact), or to one that asks the same in other words (semantic), is served again at
no cost; after a miss, the answer of the model the key names is kept for the next."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from classifiers.signals import Signals
from router import semantic
from router.answer import Answer
from router.cache import CachePolicy, CacheStore, cacheable, key_of, pack, unpack
from router.caller import Caller
from router.decision import Decision
from router.request import ChatRequest
from router.tier import Tier


@dataclass(frozen=True)
class Looked:
    """A cacheable request's look in the cache: its key, and the answer found (None: a miss)."""

    app: str
    policy: CachePolicy
    model: str  # the decision's first target: the model the key names
    key: str
    answer: Answer | None
    similarity: float | None  # a semantic hit's: how close its ask was to the cached one


class ResponseCache:
    def __init__(self, store: CacheStore, embedder: Tier | None) -> None:
        self.store = store
        self.embedder = embedder  # local: an ask compared never leaves the machine

    async def look_up(
        self, caller: Caller, request: ChatRequest, signals: Signals, decision: Decision
    ) -> Looked | None:
        """The request's answer if the app caches and one is kept; None where it is not cacheable."""
        policy = caller.cache
        if policy is None or not cacheable(request, policy):
            return None
        model = decision.targets[0]
        key = key_of(caller.name, model, request)
        found, similarity = self.store.get(caller.name, key), None
        if found is None and policy.semantic:
            found, similarity = await semantic.similar(
                self.store, self.embedder, caller.name, policy, model, request, signals.privacy
            )
        answer = unpack(found) if found is not None else None
        return Looked(caller.name, policy, model, key, answer, similarity)

    def keeper(self, looked: Looked, request: ChatRequest, signals: Signals) -> Callable[[Answer], None]:
        """What keeps a miss's answer once it is whole: under its key, and where the policy caches
        by meaning, under what a request in other words may match."""
        policy, app, exact = looked.policy, looked.app, looked.key
        record = semantic.record(app, looked.model, request, exact, signals.privacy) if policy.semantic else None

        def keep(answer: Answer) -> None:
            self.store.put(app, exact, pack(answer), policy.ttl_s)
            if record is not None:
                self.store.put(app, *record, policy.ttl_s)

        return keep
