"""What the gateway keeps beside the ledger: JSON documents of a few kinds (shadow comparisons,
routing records, feedback, installed routers; batches, their lines' results and their files), each
under a key, an app and a time; and leases, which one replica holds at a time (a batch's runner).

One seam, three places, as the ledger's store URL says: `memory://` (this process), `sqlite:///
path.db` (a `documents` table in the ledger's file) and `redis://` (shared by every replica: a hash
of the documents and a sorted set of their keys by time, per kind). The learning kinds never hold a
prompt or an answer; batch files hold what the app uploaded and what it asked for, for that app.
In SQLite and Redis each document's data is sealed (`router.sealing`), bound to its kind and key;
what SQLite deletes is overwritten (`secure_delete`), and `scrub()` leaves no earlier version of
a row in its write-ahead log.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from router.sealing import Seal, SealError, store_seal


@dataclass(frozen=True)
class Document:
    key: str
    app: str
    ts: float
    data: dict[str, Any]


class Documents(Protocol):
    def put(self, kind: str, document: Document) -> None:
        """Keep the document, replacing one of the same kind and key."""

    def get(self, kind: str, key: str) -> Document | None: ...

    def find(
        self, kind: str, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Document]:
        """The documents of `kind` (of `app`, from `since`, before `until`), oldest first."""

    def delete(self, kind: str, key: str) -> None: ...

    def claim(self, lease: str, owner: str, ttl_s: float) -> bool:
        """Take or renew `lease` for `owner` for `ttl_s` seconds: true unless another owner holds
        it unexpired. Atomic across every process sharing the store."""

    def scrub(self) -> None:
        """Leave nothing deleted or replaced readable where the store keeps its files (a parked
        line's values, once it settles)."""

    def close(self) -> None: ...


def _sealed(seal: Seal, kind: str, key: str, data: dict[str, Any]) -> str:
    return seal.seal_text(json.dumps(data, sort_keys=True), f"{kind}/{key}")


def _opened(seal: Seal, kind: str, key: str, stored: str) -> dict[str, Any]:
    """A document's data as kept: sealed, or a JSON object written before documents were."""
    if stored.startswith("{"):
        return dict(json.loads(stored))
    try:
        return dict(json.loads(seal.open_text(stored, f"{kind}/{key}")))
    except SealError as exc:
        raise SealError(f"the {kind} document {key!r} does not open with this store's key") from exc


def _within(d: Document, app: str | None, since: float | None, until: float | None) -> bool:
    return (app is None or d.app == app) and (since is None or d.ts >= since) and (until is None or d.ts < until)


class MemoryDocuments:
    def __init__(self, keep: int = 100_000) -> None:
        self._kinds: dict[str, dict[str, Document]] = {}
        self._keep = keep
        self._lock = threading.Lock()
        self._leases: dict[str, tuple[str, float]] = {}

    def put(self, kind: str, document: Document) -> None:
        with self._lock:
            docs = self._kinds.setdefault(kind, {})
            docs.pop(document.key, None)
            docs[document.key] = document
            while len(docs) > self._keep:  # the oldest written goes first
                del docs[next(iter(docs))]

    def get(self, kind: str, key: str) -> Document | None:
        with self._lock:
            return self._kinds.get(kind, {}).get(key)

    def find(
        self, kind: str, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Document]:
        with self._lock:
            found = [d for d in self._kinds.get(kind, {}).values() if _within(d, app, since, until)]
        return sorted(found, key=lambda d: d.ts)

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            self._kinds.get(kind, {}).pop(key, None)

    def claim(self, lease: str, owner: str, ttl_s: float) -> bool:
        now = time.time()
        with self._lock:
            holder, until = self._leases.get(lease, (owner, 0.0))
            if holder != owner and until > now:
                return False
            self._leases[lease] = (owner, now + ttl_s)
            return True

    def scrub(self) -> None:
        return None

    def close(self) -> None:
        return None


class SqliteDocuments:
    def __init__(self, path: str, seal: Seal | None = None) -> None:
        self.path = path
        self._seal = seal or store_seal(f"sqlite:///{path}", None)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS documents (kind TEXT, key TEXT, app TEXT, ts REAL, data TEXT, "
                "PRIMARY KEY (kind, key))"
            )
            db.execute("CREATE INDEX IF NOT EXISTS documents_kind_app_ts ON documents (kind, app, ts)")
            db.execute("CREATE TABLE IF NOT EXISTS leases (lease TEXT PRIMARY KEY, owner TEXT, until REAL)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10)
        db.execute("PRAGMA secure_delete = ON")  # a deleted or replaced row's bytes are zeroed
        return db

    def put(self, kind: str, document: Document) -> None:
        sealed = _sealed(self._seal, kind, document.key, document.data)
        row = (kind, document.key, document.app, document.ts, sealed)
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?)", row)

    def get(self, kind: str, key: str) -> Document | None:
        with self._lock, self._connect() as db:
            found = db.execute(
                "SELECT key, app, ts, data FROM documents WHERE kind = ? AND key = ?", (kind, key)
            ).fetchone()
        return (
            None
            if found is None
            else Document(found[0], found[1], found[2], _opened(self._seal, kind, found[0], found[3]))
        )

    def find(
        self, kind: str, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Document]:
        query, args = "SELECT key, app, ts, data FROM documents WHERE kind = ?", list[str | float]([kind])
        for clause, value in (("app = ?", app), ("ts >= ?", since), ("ts < ?", until)):
            if value is not None:
                query += f" AND {clause}"
                args.append(value)
        with self._lock, self._connect() as db:
            rows = db.execute(query + " ORDER BY ts", args).fetchall()
        return [Document(k, a, t, _opened(self._seal, kind, k, d)) for k, a, t, d in rows]

    def delete(self, kind: str, key: str) -> None:
        with self._lock, self._connect() as db:
            db.execute("DELETE FROM documents WHERE kind = ? AND key = ?", (kind, key))

    def claim(self, lease: str, owner: str, ttl_s: float) -> bool:
        now = time.time()
        with self._lock, self._connect() as db:  # one statement: atomic between processes too
            taken = db.execute(
                "INSERT INTO leases VALUES (?, ?, ?) ON CONFLICT (lease) DO UPDATE SET owner = excluded.owner, "
                "until = excluded.until WHERE leases.owner = excluded.owner OR leases.until <= ?",
                (lease, owner, now + ttl_s, now),
            )
            return taken.rowcount == 1

    def scrub(self) -> None:
        """Checkpoint the write-ahead log into the database and truncate it: the versions of a
        row written before it was deleted or replaced go with it."""
        with self._lock, self._connect() as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        return None


class RedisDocuments:
    """Per kind, a hash of the documents by key and a sorted set of the keys by time."""

    PREFIX = "edgeway:documents"

    def __init__(self, url: str, seal: Seal | None = None) -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._seal = seal or store_seal(url, None)

    def _keys(self, kind: str) -> tuple[str, str]:
        return f"{self.PREFIX}:{kind}", f"{self.PREFIX}:{kind}:by-time"

    def put(self, kind: str, document: Document) -> None:
        docs, times = self._keys(kind)
        sealed = _sealed(self._seal, kind, document.key, document.data)
        value = json.dumps({"app": document.app, "ts": document.ts, "data": sealed}, sort_keys=True)
        pipe = self._redis.pipeline()
        pipe.hset(docs, document.key, value)
        pipe.zadd(times, {document.key: document.ts})
        pipe.execute()

    def get(self, kind: str, key: str) -> Document | None:
        raw = self._redis.hget(self._keys(kind)[0], key)
        return None if raw is None else self._decoded(kind, key, raw)

    def find(
        self, kind: str, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[Document]:
        docs, times = self._keys(kind)
        low, high = "-inf" if since is None else since, "+inf" if until is None else f"({until}"
        keys: list[bytes] = self._redis.zrangebyscore(times, low, high)  # type: ignore[assignment]
        if not keys:
            return []
        values: list[bytes | None] = self._redis.hmget(docs, keys)  # type: ignore[assignment]
        found = [self._decoded(kind, k.decode(), v) for k, v in zip(keys, values, strict=True) if v is not None]
        return [d for d in found if _within(d, app, since, until)]

    def delete(self, kind: str, key: str) -> None:
        docs, times = self._keys(kind)
        pipe = self._redis.pipeline()
        pipe.hdel(docs, key)
        pipe.zrem(times, key)
        pipe.execute()

    # Take the lease if it is free or ours, in one step on the server.
    _CLAIM = """
    local holder = redis.call('GET', KEYS[1])
    if holder and holder ~= ARGV[1] then return 0 end
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
    """

    def claim(self, lease: str, owner: str, ttl_s: float) -> bool:
        key = f"{self.PREFIX}:lease:{lease}"
        return bool(self._redis.eval(self._CLAIM, 1, key, owner, int(ttl_s * 1000)))

    def scrub(self) -> None:
        return None  # a deleted key is in no later snapshot

    def close(self) -> None:
        self._redis.close()

    def _decoded(self, kind: str, key: str, raw: bytes | str) -> Document:
        value: Mapping[str, Any] = json.loads(raw)
        data = value["data"]
        opened = dict(data) if isinstance(data, dict) else _opened(self._seal, kind, key, data)
        return Document(key, value["app"], float(value["ts"]), opened)


def open_documents(store_url: str, seal: Seal | None = None) -> Documents:
    """Documents beside the ledger: the same kind of store at the same place, sealed with `seal`
    (by default the store's own, `router.sealing.store_seal`)."""
    if store_url.startswith("sqlite:///"):
        return SqliteDocuments(store_url.removeprefix("sqlite:///"), seal)
    if store_url.startswith(("redis://", "rediss://", "unix://")):
        return RedisDocuments(store_url, seal)
    return MemoryDocuments()
