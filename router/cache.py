"""The response cache: an answer already given, served again for free.

Opt-in per app (`cache: {ttl_s: 3600}` in its policy). An exact hit is the same app, the same
model after routing (`auto` caches what it resolved to), and the same body otherwise: messages,
tools, sampling parameters and every other field but `model`, `stream` and `stream_options`
(a cached answer replays as a stream when a client asks for one). A request sampled with
`temperature > 0` (or without a temperature, whose default samples) is cached only when the
policy says `sampled: true`. Entries of one app are never served to another: the app is part of
the key. A redacted request's answer is cached as the client saw it, restored, under its app.

Kept where the ledger is: `memory://` (least recently used out, bounded by entries and bytes),
`sqlite:///path.db` (a table beside the ledger's), `redis://` (shared by replicas, expired by
Redis). In SQLite and Redis an entry's key is a keyed hash of its key and its value is sealed
(`router.sealing`): an answer, or the ask the semantic cache compares, is not kept readable.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from router.answer import Answer, Usage
from router.request import ChatRequest
from router.sealing import Seal, SealError, store_seal

UNKEYED = ("model", "stream", "stream_options")


@dataclass(frozen=True)
class CachePolicy:
    ttl_s: float
    sampled: bool = False  # cache answers sampled with temperature > 0 too
    semantic: bool = False  # match the last user message by meaning too (router/semantic.py)
    min_similarity: float = 1.0  # the cosine a semantic match needs


def cacheable(request: ChatRequest, policy: CachePolicy) -> bool:
    if request.inputs is not None:
        return False  # embeddings: cheap, and their own kind of answer
    deterministic = request.temperature == 0 or request.body.get("temperature") == 0
    return deterministic or policy.sampled


def key_of(app: str, model: str, request: ChatRequest) -> str:
    """The app, the model that would answer, and the rest of the body as sent (in its own API:
    two Messages requests that differ in their thinking are two requests), canonically."""
    body = {k: v for k, v in request.as_sent.items() if k not in UNKEYED}
    kind = "prompt" if request.prompt is not None else str(request.api)
    material = orjson.dumps({"app": app, "model": model, "kind": kind, "body": body}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(material).hexdigest()


def pack(answer: Answer) -> bytes:
    return orjson.dumps({"body": answer.body, "usage": [answer.usage.prompt_tokens, answer.usage.completion_tokens]})


def unpack(value: bytes) -> Answer:
    stored = orjson.loads(value)
    prompt, completion = stored["usage"]
    return Answer(stored["body"], Usage(prompt, completion))


class CacheStore(Protocol):
    def get(self, app: str, key: str) -> bytes | None: ...

    def put(self, app: str, key: str, value: bytes, ttl_s: float) -> None: ...

    def clear(self, app: str) -> int:
        """Drop every entry of `app`; how many there were."""


class MemoryCache:
    """In this process: least recently used out past `max_entries` or `max_bytes`."""

    def __init__(self, max_entries: int = 10_000, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries: OrderedDict[tuple[str, str], tuple[float, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, app: str, key: str) -> bytes | None:
        with self._lock:
            found = self._entries.get((app, key))
            if found is None:
                return None
            expires, value = found
            if expires < time.time():
                self._drop((app, key))
                return None
            self._entries.move_to_end((app, key))
            return value

    def put(self, app: str, key: str, value: bytes, ttl_s: float) -> None:
        if len(value) > self.max_bytes:
            return
        with self._lock:
            if (app, key) in self._entries:
                self._drop((app, key))
            self._entries[(app, key)] = (time.time() + ttl_s, value)
            self._bytes += len(value)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _drop(self, entry: tuple[str, str]) -> None:
        _, value = self._entries.pop(entry)
        self._bytes -= len(value)

    def clear(self, app: str) -> int:
        with self._lock:
            mine = [entry for entry in self._entries if entry[0] == app]
            for entry in mine:
                self._drop(entry)
            return len(mine)


class _Sealed:
    """An entry's key as a keyed hash, its value sealed to it."""

    def __init__(self, seal: Seal) -> None:
        self._seal = seal

    def stored_key(self, key: str) -> str:
        return self._seal.digest(key)

    def sealed(self, app: str, key: str, value: bytes) -> bytes:
        return self._seal.seal(value, f"{app}/{key}".encode())

    def opened(self, app: str, key: str, value: bytes) -> bytes | None:
        try:
            return self._seal.open(value, f"{app}/{key}".encode())
        except SealError:
            return None  # sealed under another key: a miss


class SqliteCache(_Sealed):
    """A table in the ledger's file; expired entries are skipped, and swept when written."""

    def __init__(self, path: str, seal: Seal | None = None) -> None:
        super().__init__(seal or store_seal(f"sqlite:///{path}", None))
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("PRAGMA secure_delete = ON")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS response_cache (app TEXT, key TEXT, expires REAL, value BLOB, "
            "PRIMARY KEY (app, key))"
        )
        self._db.commit()

    def get(self, app: str, key: str) -> bytes | None:
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM response_cache WHERE app = ? AND key = ? AND expires >= ?",
                (app, self.stored_key(key), time.time()),
            ).fetchone()
        return self.opened(app, key, bytes(row[0])) if row else None

    def put(self, app: str, key: str, value: bytes, ttl_s: float) -> None:
        now = time.time()
        row = (app, self.stored_key(key), now + ttl_s, self.sealed(app, key, value))
        with self._lock, self._db:
            self._db.execute("DELETE FROM response_cache WHERE expires < ?", (now,))
            self._db.execute("INSERT OR REPLACE INTO response_cache VALUES (?, ?, ?, ?)", row)

    def clear(self, app: str) -> int:
        with self._lock, self._db:
            self._db.execute("DELETE FROM response_cache WHERE expires < ?", (time.time(),))
            return self._db.execute("DELETE FROM response_cache WHERE app = ?", (app,)).rowcount


class RedisCache(_Sealed):
    """Shared by every replica on the same Redis; Redis expires the entries."""

    def __init__(self, url: str, seal: Seal | None = None) -> None:
        import redis

        super().__init__(seal or store_seal(url, None))
        self._errors: tuple[type[Exception], ...] = (redis.RedisError,)
        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def get(self, app: str, key: str) -> bytes | None:
        try:
            value: Any = self._redis.get(f"edgeway:cache:{app}:{self.stored_key(key)}")
        except self._errors:
            return None  # a cache that is away is a miss, never an error
        return self.opened(app, key, bytes(value)) if value is not None else None

    def put(self, app: str, key: str, value: bytes, ttl_s: float) -> None:
        try:
            stored = f"edgeway:cache:{app}:{self.stored_key(key)}"
            self._redis.set(stored, self.sealed(app, key, value), ex=max(1, int(ttl_s)))
        except self._errors:
            pass

    def clear(self, app: str) -> int:
        removed = 0
        for found in self._redis.scan_iter(match=f"edgeway:cache:{app}:*", count=500):
            removed += int(self._redis.delete(found))
        return removed


def open_cache(store_url: str, seal: Seal | None = None) -> CacheStore:
    """The cache beside the ledger: the same kind of store at the same place, sealed with `seal`
    (by default the store's own)."""
    if store_url.startswith("sqlite:///"):
        return SqliteCache(store_url.removeprefix("sqlite:///"), seal)
    if store_url.startswith(("redis://", "rediss://", "unix://")):
        return RedisCache(store_url, seal)
    return MemoryCache()
