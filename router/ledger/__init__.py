"""The usage ledger: one row per request, the stores that keep them, and budgets on top."""

from router.ledger.rows import UsageRow
from router.ledger.store import MemoryStore, SqliteStore, Store, open_store

__all__ = ["MemoryStore", "SqliteStore", "Store", "UsageRow", "open_store"]
