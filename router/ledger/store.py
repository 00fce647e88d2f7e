"""Where usage rows and spend live: `memory://` (default) or `sqlite:///path.db` (one node that keeps
its history across restarts). Both keep budget counters in memory, so a budget check costs a dict
lookup; SQLite writes go through a background thread, off the event loop, and the counters are
rebuilt from the rows when the file is opened again.
"""

from __future__ import annotations

import operator
import queue
import sqlite3
import threading
from collections import deque
from pathlib import Path
from typing import Any, Protocol

from router.budget import BudgetBook, Caps, Shortfall
from router.ledger.rows import UsageRow, account_of
from router.limits import Limits, RateWindows


class StoreUnavailable(Exception):
    """A shared store (Redis) cannot be reached to admit a request: the app's `store_outage` decides."""


class Store(Protocol):
    """The ledger's rows, the budgets' spend and the rate windows, in one place per deployment."""

    def append(self, row: UsageRow, reserved: float = 0.0) -> None:
        """Keep the row and charge its cost, less what was reserved for it at admission."""

    def reserve(self, app: str, caps: Caps, estimate: float) -> Shortfall | None:
        """Reserve `estimate` if every cap has room for it on top of what is spent and held,
        atomically, and return None; else the cap without room. Raises StoreUnavailable where the
        spend is shared and cannot be read."""

    def reserve_alone(self, app: str, caps: Caps, estimate: float) -> Shortfall | None:
        """While the shared spend cannot be read (`store_outage: local`): reserve `estimate` from
        this replica's share of what was left when it last could, so that replicas together stay
        within the cap; else the share without room."""

    def exhausted(self, app: str, caps: Caps) -> Shortfall | None:
        """The cap already spent, as this replica last knew the spend; None while each has room."""

    def take(self, app: str, tokens: int, limits: Limits) -> float | None:
        """Count a request against the app's rate limits; None, or the seconds to wait."""

    def rows(
        self, app: str | None = None, since: float | None = None, until: float | None = None
    ) -> list[UsageRow]: ...

    def left(self, app: str, caps: Caps, now: float | None = None) -> float | None:
        """What is left under the app's tighter cap; None without caps."""

    def charge(self, app: str, usd: float, now: float | None = None) -> None: ...

    def status(self) -> str:
        """ "ok", or "degraded: " and the reason."""

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every row appended so far is written; False if that took over `timeout`."""

    def close(self) -> None: ...


class LocalCounters:
    """Budgets and rate windows in this process's memory: a dict lookup per check."""

    def __init__(self) -> None:
        self.budgets = BudgetBook()
        self.windows = RateWindows()

    def reserve(self, app: str, caps: Caps, estimate: float) -> Shortfall | None:
        return self.budgets.reserve(app, caps, estimate)

    def reserve_alone(self, app: str, caps: Caps, estimate: float) -> Shortfall | None:
        return self.budgets.reserve(app, caps, estimate)  # one process's counters are never away

    def exhausted(self, app: str, caps: Caps) -> Shortfall | None:
        return self.budgets.exhausted(app, caps)

    def take(self, app: str, tokens: int, limits: Limits) -> float | None:
        return self.windows.take(app, tokens, limits)

    def left(self, app: str, caps: Caps, now: float | None = None) -> float | None:
        return self.budgets.left(app, caps, now)

    def charge(self, app: str, usd: float, now: float | None = None) -> None:
        self.budgets.charge(app, usd, now)


_VALUES = operator.attrgetter(*UsageRow.columns())
_APP, _TS = UsageRow.columns().index("app"), UsageRow.columns().index("ts")


class MemoryStore(LocalCounters):
    """Rows in a ring of the latest `keep` requests (budgets count everything, in separate counters).

    The ring holds plain tuples, not UsageRow objects: tuples of strings and numbers leave the
    garbage collector's watch, and a full collection over 100,000 rows took 20 ms as objects
    against 3 ms as tuples (a pause every request in flight would wait out)."""

    def __init__(self, keep: int = 100_000) -> None:
        super().__init__()
        self._rows: deque[tuple[Any, ...]] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def append(self, row: UsageRow, reserved: float = 0.0) -> None:
        with self._lock:
            self._rows.append(_VALUES(row))
        self.budgets.charge(row.account, row.cost_usd - reserved, row.ts)

    def rows(self, app: str | None = None, since: float | None = None, until: float | None = None) -> list[UsageRow]:
        with self._lock:
            snapshot = list(self._rows)
        return [
            UsageRow(*r)
            for r in snapshot
            if (app is None or r[_APP] == app)
            and (since is None or r[_TS] >= since)
            and (until is None or r[_TS] < until)
        ]

    def status(self) -> str:
        return "ok"

    def flush(self, timeout: float = 10.0) -> bool:
        return True

    def close(self) -> None:
        return None


_COLUMNS = UsageRow.columns()
_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
  request_id TEXT PRIMARY KEY, app TEXT NOT NULL, ts REAL NOT NULL, route TEXT, model TEXT, rule TEXT,
  status INTEGER, stream INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, ttft_ms REAL,
  latency_ms REAL, cost_usd REAL, counterfactual_usd REAL, error TEXT, prompt TEXT);
CREATE INDEX IF NOT EXISTS usage_app_ts ON usage (app, ts);
"""
_INSERT = f"INSERT OR REPLACE INTO usage ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """A ledger written by an older edgeway lacks the newer columns: add them, empty."""
    present = {name for _, name, *_ in db.execute("PRAGMA table_info(usage)")}
    for column in _COLUMNS:
        if column not in present:
            db.execute(f"ALTER TABLE usage ADD COLUMN {column}")
    db.commit()


class SqliteStore(LocalCounters):
    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = str(path)
        self._queue: queue.Queue[UsageRow | None | threading.Event] = queue.Queue()
        db = sqlite3.connect(self.path, timeout=10)
        # WAL, set here before any other connection to the file (the cache's, the documents') and
        # the writer thread: a journal mode cannot change while another connection holds the file,
        # and a writer that failed to set it once died with the ledger unwritten
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
        _add_missing_columns(db)
        for app, kind, ts, cost in db.execute("SELECT app, kind, ts, cost_usd FROM usage WHERE cost_usd > 0"):
            self.budgets.charge(account_of(app, kind or "request"), cost, ts)
        db.close()
        self._error: str | None = None
        self._writer = threading.Thread(target=self._write, name="ledger-sqlite", daemon=True)
        self._writer.start()

    def append(self, row: UsageRow, reserved: float = 0.0) -> None:
        self.budgets.charge(row.account, row.cost_usd - reserved, row.ts)
        self._queue.put(row)

    def _write(self) -> None:
        db = sqlite3.connect(self.path, timeout=10)
        while True:
            item = self._queue.get()
            if item is None:
                break
            if isinstance(item, threading.Event):
                item.set()
                continue
            batch = [item]
            while not self._queue.empty() and len(batch) < 500:
                nxt = self._queue.get()
                if nxt is None or isinstance(nxt, threading.Event):
                    self._queue.put(nxt)  # handle it after this batch is written
                    break
                batch.append(nxt)
            try:
                with db:
                    db.executemany(_INSERT, [tuple(getattr(r, c) for c in _COLUMNS) for r in batch])
                self._error = None
            except sqlite3.Error as exc:
                self._error = str(exc)
        db.close()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every row appended so far is on disk."""
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def rows(self, app: str | None = None, since: float | None = None, until: float | None = None) -> list[UsageRow]:
        self.flush()
        clauses, args = [], []
        for clause, value in (("app = ?", app), ("ts >= ?", since), ("ts < ?", until)):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        db = sqlite3.connect(self.path)
        try:
            found = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM usage{where} ORDER BY ts", args).fetchall()
        finally:
            db.close()
        return [_row(dict(zip(_COLUMNS, values, strict=True))) for values in found]

    def status(self) -> str:
        if not self._writer.is_alive():
            return "degraded: the ledger writer stopped"
        return f"degraded: {self._error}" if self._error else "ok"

    def close(self) -> None:
        self._queue.put(None)
        self._writer.join(timeout=30)


def _row(values: dict[str, Any]) -> UsageRow:
    """A row as SQLite gives it back; a column added after the row was written reads as its default."""
    given = {k: v for k, v in values.items() if v is not None or k in _NULLABLE}  # (a newer column: its default)
    booleans = {"stream": bool(values["stream"]), "priced": bool(given.get("priced", True))}
    return UsageRow(**{**given, **booleans, "kind": values["kind"] or "request"})


_NULLABLE = frozenset({"ttft_ms", "error", "prompt", "cache"})  # the row's fields whose None means something
