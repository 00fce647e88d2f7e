"""Shadow comparisons as kept: one per request that both tiers answered and a judge compared (and
one per request that two cloud models of a ladder's step answered: `StepComparison`).

Kept as documents beside the ledger (`router.documents`: memory, SQLite or Redis), read by
`GET /api/quality` and `edgeway router fit`. A comparison says which tier served the client, the
judge's verdict (edge better, tie, cloud better, or unjudged), what the comparison cost, and what
the app's router knew of the request when it decided: the text prior, the probe's score of the
edge's reading where it read, the request's features (`classifiers.asks`). Never a prompt or an
answer.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from router.documents import Document, Documents, MemoryDocuments, open_documents

KIND = "comparison"


@dataclass
class Comparison:
    request_id: str
    app: str
    rule: str
    complexity: float  # the request's text prior (P(the cloud buys something)), as scored for it
    served: str  # the tier that answered the client: edge | cloud
    edge_model: str
    cloud_model: str
    verdict: str  # edge | tie | cloud | unjudged
    judge_model: str
    judge_tokens: int = 0
    judge_usd: float = 0.0
    shadow_tokens: int = 0  # the other tier's answer
    shadow_usd: float = 0.0
    ts: float = field(default_factory=time.time)
    reading: float | None = None  # the probe's score of the edge's reading, where the edge read first
    asks: list[float] | None = None  # the request's features, `classifiers.asks.FEATURES` order

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


COLUMNS = [f.name for f in fields(Comparison)]
STEP_KIND = "step-comparison"


@dataclass
class StepComparison:
    """A comparison of a ladder's step between two models of one tier (two cloud models): the one
    that served and the other of the step, judged in both orders like the edge and the cloud."""

    request_id: str
    app: str
    rule: str
    lower: str  # the step's models, the ladder's order
    upper: str
    served: str  # the model that answered the client: lower's or upper's name
    verdict: str  # lower | tie | upper | unjudged
    prompt_tokens: int  # the step's prior reads it (router.ladder.length_score)
    judge_model: str
    judge_tokens: int = 0
    judge_usd: float = 0.0
    shadow_tokens: int = 0
    shadow_usd: float = 0.0
    ts: float = field(default_factory=time.time)
    asks: list[float] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


STEP_COLUMNS = [f.name for f in fields(StepComparison)]


class Comparisons:
    """The comparisons among the documents."""

    def __init__(self, documents: Documents | None = None) -> None:
        self.documents = documents or MemoryDocuments()

    def add(self, comparison: Comparison) -> None:
        self.documents.put(KIND, Document(comparison.request_id, comparison.app, comparison.ts, comparison.as_dict()))

    def comparisons(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Comparison]:
        known = set(COLUMNS)
        return [
            Comparison(**{k: v for k, v in d.data.items() if k in known})
            for d in self.documents.find(KIND, app, since, until)
        ]

    def add_step(self, comparison: StepComparison) -> None:
        self.documents.put(
            STEP_KIND, Document(comparison.request_id, comparison.app, comparison.ts, comparison.as_dict())
        )

    def steps(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[StepComparison]:
        known = set(STEP_COLUMNS)
        return [
            StepComparison(**{k: v for k, v in d.data.items() if k in known})
            for d in self.documents.find(STEP_KIND, app, since, until)
        ]

    def close(self) -> None:
        self.documents.close()


def open_comparisons(store_url: str) -> Comparisons:
    """Comparisons beside the ledger: the same kind of store at the same place."""
    return Comparisons(open_documents(store_url))
