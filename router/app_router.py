"""The app's router: what decides a rule with `route: auto`, edge or cloud.

Its score is P(the cloud's answer to this request is better than the edge's). It combines, as a
logistic regression, what is known of the request: the text prior's logit (`Signals.complexity`),
and where the edge model read the prompt first, its probe's score of that reading
(`edge_runtime.reading`). At cold start the combination is the one fitted with the probe (research/,
or `edgeway router probe` for another GGUF); `edgeway router fit` fits an app's own from its
comparisons and feedback, and installs it (versioned, in the store) only when it ranks that app's
held-out comparisons better than the router in use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from classifiers.asks import FEATURES, features
from router.request import ChatRequest


def logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-500.0, min(500.0, z))))


@dataclass(frozen=True)
class Combination:
    """A logistic combination: bias + prior * the prior's logit + reading * the probe's score +
    the weights of the request's features (`classifiers.asks`, by name: a fitted router's)."""

    prior: float = 1.0
    reading: float = 0.0
    bias: float = 0.0
    asks: Mapping[str, float] = field(default_factory=dict)

    def score(self, prior_logit: float, reading: float | None = None, asks: list[float] | None = None) -> float:
        z = self.bias + self.prior * prior_logit
        if reading is not None:
            z += self.reading * reading
        if asks is not None and self.asks:
            z += sum(w * asks[FEATURES.index(name)] for name, w in self.asks.items())
        return sigmoid(z)

    def as_dict(self) -> dict[str, Any]:
        return {"prior": self.prior, "reading": self.reading, "bias": self.bias, "asks": dict(self.asks)}

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Combination:
        return cls(float(data["prior"]), float(data["reading"]), float(data["bias"]), dict(data.get("asks") or {}))


TEXT_ALONE = Combination()  # the prior's own calibrated score


@dataclass(frozen=True)
class AppRouter:
    """One version of an app's router: how it scores without the edge's reading, and with it."""

    text: Combination = TEXT_ALONE
    read: Combination | None = None  # None: the edge's reading is not used (no probe for the model)
    version: int = 0  # 0: the cold-start router; an installed one counts up from 1
    threshold: float | None = None  # a fitted router's own (for its target quality); None: the policy's
    fitted: Mapping[str, Any] = field(default_factory=dict)  # what it was fitted on, and how it validated

    @property
    def needs_asks(self) -> bool:
        return bool(self.text.asks or (self.read is not None and self.read.asks))

    def score(self, prior: float, reading: float | None = None, asks: list[float] | None = None) -> float:
        """The score: `prior` is the text prior's probability; `reading` the probe's score, if the
        edge read the prompt."""
        if reading is not None and self.read is not None:
            return self.read.score(logit(prior), reading, asks)
        return self.text.score(logit(prior), None, asks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text.as_dict(),
            "read": None if self.read is None else self.read.as_dict(),
            "version": self.version,
            "threshold": self.threshold,
            "fitted": dict(self.fitted),
        }

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> AppRouter:
        read = data.get("read")
        return cls(
            Combination.of(data["text"]),
            None if read is None else Combination.of(read),
            int(data["version"]),
            None if data.get("threshold") is None else float(data["threshold"]),
            dict(data.get("fitted") or {}),
        )


def cold_start(read: Combination | None) -> AppRouter:
    """The router of an app with none installed: the prior alone, and the probe's combination."""
    return AppRouter(TEXT_ALONE, read)


def request_features(request: ChatRequest) -> list[float]:
    """The features of `classifiers.asks` of a request: its whole text, and its latest user text as
    the ask."""
    texts = [request.text_of(m) for m in request.messages]
    users = [t for m, t in zip(request.messages, texts, strict=True) if m.get("role") == "user" and t.strip()]
    whole = "\n".join(texts)
    return features(whole, users[-1] if users else whole, whole.count(" ") + whole.count("\n") + 1)
