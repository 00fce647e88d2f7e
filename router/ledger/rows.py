"""One request, as the ledger keeps it: metadata and money; never the answer, and the prompt only
for an app that opted in (`apps[].log_prompts`), masked."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any


class RowKind(StrEnum):
    REQUEST = "request"  # a client's
    BATCH = "batch"  # a line of one of the app's batches: the app's request too
    SHADOW = "shadow"  # a shadow comparison's spend, never the app's requests
    JUDGE = "judge"  # the judge of a shadow comparison
    TOOL = "tool"  # a call to an MCP tool through /mcp: `model` is the tool, `<server>.<tool>`


@dataclass
class UsageRow:
    request_id: str
    app: str
    ts: float = field(default_factory=time.time)  # when the request arrived (Unix seconds)
    route: str = "none"  # edge | cloud | none (refused before any model)
    model: str = ""
    rule: str = ""
    status: int = 200
    stream: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ttft_ms: float | None = None
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    # the same tokens on the app's default cloud model; None for an app with no cloud model to
    # compare with (`allow_cloud: false`, a gateway without cloud models): a model it can never
    # use is no counterfactual
    counterfactual_usd: float | None = 0.0
    error: str | None = None  # the error code, for failed requests
    prompt: str | None = None  # opted-in apps only: the last user message, private data masked
    cache: str | None = None  # "hit" (served from the response cache, at no cost) or "miss"; None: no cache
    kind: str = "request"  # a RowKind
    # of prompt_tokens: read from the provider's prompt cache, and written to it; and what the
    # provider's cache saved against the same tokens uncached (less than 0 where its writes cost more
    # than its reads saved; the response cache's hits are `cache`)
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    prompt_cache_saved_usd: float = 0.0
    # False: answered by a cloud model with no known price: its cost is $0 and its counterfactual
    # the same (a price unknown is no saving)
    priced: bool = True

    @property
    def account(self) -> str:
        """Whose budget the row's cost counts against: the app's, or its shadow comparisons'."""
        return account_of(self.app, self.kind)

    @property
    def day(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.ts))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def account_of(app: str, kind: str) -> str:
    return app if kind in APPS_OWN else f"{app}#shadow"


APPS_OWN = frozenset({RowKind.REQUEST, RowKind.BATCH})  # the kinds that are the app's own requests
