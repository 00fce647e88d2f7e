"""Per-app spending caps: checked before a call, charged after it.

Kept in memory here; the ledger's shared stores (SQLite, Redis) take this role for many replicas.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Caps:
    daily_usd: float | None = None
    monthly_usd: float | None = None


StoreOutage = Literal["deny", "edge", "local"]


@dataclass(frozen=True)
class AppBudget:
    """An app's caps, what happens once they are spent (edge only, or 429), and while the shared
    store that counts them cannot be reached (`store_outage`; default: as `on_exhausted`)."""

    caps: Caps
    on_exhausted: Literal["edge", "deny"] = "edge"
    store_outage: StoreOutage | None = None

    @property
    def outage(self) -> StoreOutage:
        return self.store_outage or self.on_exhausted


def periods(now: float) -> tuple[str, str]:
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    return day, day[:7]


def seconds_to_midnight(now: float) -> float:
    return 86400 - now % 86400


class BudgetBook:
    def __init__(self) -> None:
        self._spent: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def spent(self, app: str, now: float | None = None) -> tuple[float, float]:
        day, month = periods(time.time() if now is None else now)
        with self._lock:
            return self._spent.get((app, day), 0.0), self._spent.get((app, month), 0.0)

    def left(self, app: str, caps: Caps, now: float | None = None) -> float | None:
        """USD left under the tighter cap, or None when the app has no cap."""
        daily, monthly = self.spent(app, now)
        lefts = [cap - used for cap, used in ((caps.daily_usd, daily), (caps.monthly_usd, monthly)) if cap]
        return min(lefts) if lefts else None

    def charge(self, app: str, usd: float, now: float | None = None) -> None:
        """Add `usd` (negative to give back what a reservation over-estimated)."""
        if not usd:
            return
        day, month = periods(time.time() if now is None else now)
        with self._lock:
            for key in ((app, day), (app, month)):
                self._spent[key] = self._spent.get(key, 0.0) + usd

    def set_spent(self, app: str, now: float, daily: float, monthly: float) -> None:
        """Take the spend another book keeps (a shared store) as this one's."""
        day, month = periods(now)
        with self._lock:
            self._spent[(app, day)] = daily
            self._spent[(app, month)] = monthly

    def admit(self, app: str, caps: Caps, estimate: float, now: float | None = None) -> bool:
        """Atomically: if every cap still has room, reserve `estimate` against it and say yes. The
        reservation is settled when the request's real cost is known, so requests racing at the
        limit overspend by at most one request's cost."""
        now = time.time() if now is None else now
        day, month = periods(now)
        with self._lock:
            spent = {"daily": self._spent.get((app, day), 0.0), "monthly": self._spent.get((app, month), 0.0)}
            if any(
                cap is not None and spent[name] >= cap
                for name, cap in (("daily", caps.daily_usd), ("monthly", caps.monthly_usd))
            ):
                return False
            for key in ((app, day), (app, month)):
                self._spent[key] = self._spent.get(key, 0.0) + estimate
        return True
