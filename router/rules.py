"""The plain rule set behind `model: auto` when an app has no policy file.

Edge first, unless the request cannot be read or held by the edge model or the app's default
tier is the cloud; the other tier is the fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from classifiers.signals import Signals
from router.decision import Catalog, Decision, LiveState
from router.errors import ModelNotFound
from router.request import ChatRequest


@dataclass(frozen=True)
class PlainRules:
    catalog: Catalog
    prefer: str = "edge"  # the app's default tier
    edge: str | None = None  # the app's default edge model (else the first one)
    cloud: str | None = None  # the app's default cloud model (else the first one)

    def decide(self, signals: Signals, request: ChatRequest, live: LiveState) -> Decision:
        if request.model != "auto":
            if request.model not in self.catalog.models:
                raise ModelNotFound(
                    f"The model {request.model!r} does not exist on this gateway; "
                    f"GET /v1/models lists the models you can use.",
                    param="model",
                )
            return Decision((request.model,), "requested-model", (f"the request named {request.model!r}",))
        edge = self.edge or next((m.name for m in self.catalog.of_tier("edge")), None)
        cloud = self.cloud or next((m.name for m in self.catalog.of_tier("cloud")), None)
        cloud_only = (cloud,) if cloud else ()
        if edge is None:
            return Decision(cloud_only, "no-edge-model", ("no edge model is configured",))
        # Without a cloud model the edge is still tried, so the client hears why it cannot serve.
        if not signals.text_only:
            return Decision(cloud_only or (edge,), "non-text-content", ("the edge model reads text only",))
        window = self.catalog.models[edge].context_window or 0
        needed = signals.prompt_tokens + (signals.max_tokens or 1)
        if needed > window:
            return Decision(
                cloud_only or (edge,),
                "exceeds-edge-context",
                (
                    f"prompt {signals.prompt_tokens} + max_tokens {signals.max_tokens or 0} tokens "
                    f"> edge context {window}",
                ),
            )
        if self.prefer == "cloud" and cloud:
            return Decision((cloud, edge), "app-default-cloud", ("the app's default tier is cloud",))
        return Decision((edge, *cloud_only), "default-edge", (f"fits the edge context ({needed} <= {window} tokens)",))
