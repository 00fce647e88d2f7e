"""The store a URL names: `memory://`, `sqlite:///path.db`, or Redis (`redis://`, `rediss://`,
`unix://`), whose client is imported only for a Redis URL."""

from __future__ import annotations

from router.ledger.store import MemoryStore, SqliteStore, Store


def open_store(url: str) -> Store:
    if url in ("memory://", "memory"):
        return MemoryStore()
    if url.startswith("sqlite:///"):
        return SqliteStore(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://", "unix://")):
        from router.ledger.redis_store import RedisStore

        return RedisStore(url)
    raise ValueError(f"unsupported store {url!r}: expected memory://, sqlite:///path.db or redis://host:port/db")
