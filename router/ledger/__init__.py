"""The usage ledger: one row per request, the stores that keep them, and budgets on top."""

from router.ledger.rows import APPS_OWN, RowKind, UsageRow
from router.ledger.store import MemoryStore, SqliteStore, Store, StoreUnavailable
from router.ledger.urls import open_store

__all__ = ["APPS_OWN", "MemoryStore", "RowKind", "SqliteStore", "Store", "StoreUnavailable", "UsageRow", "open_store"]
