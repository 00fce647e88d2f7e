"""What the app's router learns from: what it knew of each request it routed, and what was learned
of the answer afterwards (a shadow comparison, or the app's own feedback).

A `RoutingRecord` is kept for each request an `auto` rule decided: the text prior, the probe's
score of the edge's reading where it read, the request's features (`classifiers.asks`), the score
and the tier that answered: numbers, never the prompt. `Feedback` (`POST /v1/feedback`) names one
of those requests by its `x-edgeway-request-id`: a score of the answer (0 to 1), or the tier the app
prefers for it. `edgeway router fit` joins them (`Example`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from router.comparisons import Comparison, StepComparison
from router.documents import Document, Documents
from router.ladder import length_score

RECORDS, FEEDBACK = "routing", "feedback"


@dataclass(frozen=True)
class RoutingRecord:
    request_id: str
    app: str
    served: str  # edge | cloud
    prior: float  # the text prior's probability (Signals.complexity)
    reading: float | None  # the probe's score, where the edge read first
    asks: list[float]  # the request's features
    score: float | None  # what the app's router compared with its threshold
    router_version: int
    ts: float = field(default_factory=time.time)

    def save(self, documents: Documents) -> None:
        documents.put(RECORDS, Document(self.request_id, self.app, self.ts, asdict(self)))

    @classmethod
    def of(cls, data: dict[str, Any]) -> RoutingRecord:
        return cls(**data)


@dataclass(frozen=True)
class Feedback:
    request_id: str
    app: str
    score: float | None = None  # the app's rating of the answer it got, 0 (bad) to 1 (good)
    preferred: str | None = None  # the tier the app says should have answered: edge | cloud
    ts: float = field(default_factory=time.time)

    def save(self, documents: Documents) -> None:
        documents.put(FEEDBACK, Document(self.request_id, self.app, self.ts, asdict(self)))


@dataclass(frozen=True)
class Example:
    """One request as the fit sees it: what the router knew, and whether the cloud's answer was the
    better one (`cloud_better`, 0 to 1; ties 0, as the edge was as good); `edge` and `cloud` are
    the quality each tier gave (for the ranking's APGR; None where only a preference is known)."""

    prior: float
    reading: float | None
    asks: list[float] | None
    cloud_better: float
    edge: float | None
    cloud: float | None
    ts: float


def from_comparison(c: Comparison) -> Example | None:
    if c.verdict == "unjudged":
        return None
    edge = float(c.verdict in ("edge", "tie"))
    cloud = float(c.verdict in ("cloud", "tie"))
    return Example(c.complexity, c.reading, c.asks, float(c.verdict == "cloud"), edge, cloud, c.ts)


def from_step(c: StepComparison) -> Example | None:
    """A ladder step's comparison as an example of its step: the prior is the prompt's length
    (`router.ladder.length_score`), `edge` and `cloud` the quality of the step's lower and upper
    model's answers."""
    if c.verdict == "unjudged":
        return None
    lower, upper = float(c.verdict in ("lower", "tie")), float(c.verdict in ("upper", "tie"))
    return Example(length_score(c.prompt_tokens), None, c.asks, float(c.verdict == "upper"), lower, upper, c.ts)


def step_examples(comparisons: Sequence[StepComparison], app: str, lower: str, upper: str) -> list[Example]:
    """Every judged comparison of `app`'s step from `lower` to `upper`, oldest first."""
    found = [
        e for c in comparisons if (c.app, c.lower, c.upper) == (app, lower, upper) and (e := from_step(c)) is not None
    ]
    return sorted(found, key=lambda e: e.ts)


def from_feedback(f: Feedback, record: RoutingRecord) -> Example | None:
    """A preference says which tier was better; a score only of an edge answer says whether the
    cloud was needed (a good cloud answer says nothing of what the edge would have done)."""
    if f.preferred is not None:
        cloud = float(f.preferred == "cloud")
        return Example(record.prior, record.reading, record.asks, cloud, 1 - cloud, cloud, record.ts)
    if f.score is not None and record.served == "edge":
        return Example(record.prior, record.reading, record.asks, 1.0 - f.score, f.score, None, record.ts)
    return None


def examples(comparisons: Sequence[Comparison], documents: Documents, app: str) -> list[Example]:
    """Every labelled request of `app`, oldest first: its comparisons, then its feedback on the
    requests it routed (a request with both counts once, by its comparison)."""
    found = {c.request_id: e for c in comparisons if c.app == app and (e := from_comparison(c)) is not None}
    for doc in documents.find(FEEDBACK, app):
        if doc.key in found:
            continue
        record = documents.get(RECORDS, doc.key)
        if record is None:
            continue
        example = from_feedback(Feedback(**doc.data), RoutingRecord.of(record.data))
        if example is not None:
            found[doc.key] = example
    return sorted(found.values(), key=lambda e: e.ts)
