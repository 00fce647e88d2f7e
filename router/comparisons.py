"""Shadow comparisons as kept: one row per request that both tiers answered and a judge compared.

Kept where the ledger is (`memory://`, `sqlite:///path.db`, `redis://`), read by
`GET /api/quality` and `edgeway router fit`. A row says which tier served the client, the
judge's verdict (edge better, tie, cloud better, or unjudged), and what the comparison cost;
never a prompt or an answer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

import redis


@dataclass
class Comparison:
    request_id: str
    app: str
    rule: str
    complexity: float  # the request's complexity signal, as scored for it
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


COLUMNS = [f.name for f in fields(Comparison)]


class ComparisonStore(Protocol):
    def add(self, comparison: Comparison) -> None: ...

    def comparisons(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Comparison]: ...

    def close(self) -> None: ...


def _within(c: Comparison, app: str | None, since: float | None, until: float | None) -> bool:
    return (app is None or c.app == app) and (since is None or c.ts >= since) and (until is None or c.ts < until)


class MemoryComparisons:
    def __init__(self, keep: int = 100_000) -> None:
        self._rows: deque[Comparison] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def add(self, comparison: Comparison) -> None:
        with self._lock:
            self._rows.append(comparison)

    def comparisons(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Comparison]:
        with self._lock:
            return [c for c in self._rows if _within(c, app, since, until)]

    def close(self) -> None:
        return None


class SqliteComparisons:
    """A `comparisons` table in the ledger's file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS comparisons ({', '.join(COLUMNS)}, PRIMARY KEY (request_id))")
            db.execute("CREATE INDEX IF NOT EXISTS comparisons_app_ts ON comparisons (app, ts)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def add(self, comparison: Comparison) -> None:
        values = [getattr(comparison, c) for c in COLUMNS]
        with self._lock, self._connect() as db:
            db.execute(f"INSERT OR REPLACE INTO comparisons VALUES ({', '.join('?' * len(COLUMNS))})", values)

    def comparisons(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Comparison]:
        with self._lock, self._connect() as db:
            found = db.execute(f"SELECT {', '.join(COLUMNS)} FROM comparisons ORDER BY ts").fetchall()
        rows = [Comparison(**dict(zip(COLUMNS, values, strict=True))) for values in found]
        return [c for c in rows if _within(c, app, since, until)]

    def close(self) -> None:
        return None


class RedisComparisons:
    """One sorted set, scored by time, shared by every replica."""

    KEY = "edgeway:comparisons"

    def __init__(self, url: str) -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    def add(self, comparison: Comparison) -> None:
        self._redis.zadd(self.KEY, {json.dumps(comparison.as_dict(), sort_keys=True): comparison.ts})

    def comparisons(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Comparison]:
        low, high = "-inf" if since is None else since, "+inf" if until is None else f"({until}"
        raw: list[bytes] = self._redis.zrangebyscore(self.KEY, low, high)  # type: ignore[assignment]
        rows = [Comparison(**json.loads(item)) for item in raw]
        return [c for c in rows if _within(c, app, since, until)]

    def close(self) -> None:
        self._redis.close()


def open_comparisons(store_url: str) -> ComparisonStore:
    """Comparisons beside the ledger: the same kind of store at the same place."""
    if store_url.startswith("sqlite:///"):
        return SqliteComparisons(store_url.removeprefix("sqlite:///"))
    if store_url.startswith(("redis://", "rediss://", "unix://")):
        return RedisComparisons(store_url)
    return MemoryComparisons()
