"""Per-app spending caps: a request's worst case reserved before a call, its cost charged after it.

Kept in memory here; the ledger's shared stores (SQLite, Redis) take this role for many replicas.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
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


class Period(StrEnum):
    """What a cap counts: a UTC day's spend or a UTC month's."""

    DAILY = "daily"
    MONTHLY = "monthly"

    def resets_at(self, now: float) -> float:
        """When the period counting `now` ends and the next one starts from nothing (Unix seconds)."""
        if self is Period.DAILY:
            return now - now % 86400 + 86400
        today = datetime.fromtimestamp(now, UTC)
        year, month = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        return datetime(year, month, 1, tzinfo=UTC).timestamp()


# What float sums may be off by: six requests at $0.03 are $0.18000000000000002, and a seventh
# that would end the day at exactly the cap fits
SLACK_USD = 1e-9


@dataclass(frozen=True)
class Shortfall:
    """A cap without room for a request: which one, what it allows, what of it is spent or held by
    requests under way, the most the request may cost, and when the cap starts afresh."""

    period: Period
    cap_usd: float
    spent_usd: float
    estimate_usd: float
    resets_at: float  # Unix seconds

    def message(self) -> str:
        reset = datetime.fromtimestamp(self.resets_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        spent = f"{usd(self.spent_usd)} is spent or held by requests under way"
        if self.spent_usd + SLACK_USD < self.cap_usd:
            spent += f", and this request may cost up to {usd(self.estimate_usd)} (its max_tokens at its model's price)"
        return f"This app's {self.period} budget of {usd(self.cap_usd)} has no room: {spent}. It resets at {reset}."

    def seconds_left(self, now: float) -> float:
        return max(0.0, self.resets_at - now)


def usd(amount: float) -> str:
    """Dollars as a person reads them: $0.20, $0.0004."""
    cents = round(amount, 2)
    return f"${cents:.2f}" if abs(amount - cents) < 5e-7 else f"${amount:.6f}".rstrip("0")


def shortfall(caps: Caps, daily: float, monthly: float, estimate: float, now: float) -> Shortfall | None:
    """The first cap that `estimate` more would exceed (or that is spent already) with `daily`
    and `monthly` spent; None when every cap has room."""
    for period, cap, spent in ((Period.DAILY, caps.daily_usd, daily), (Period.MONTHLY, caps.monthly_usd, monthly)):
        if cap is not None and (spent >= cap or spent + estimate > cap + SLACK_USD):
            return Shortfall(period, cap, spent, estimate, period.resets_at(now))
    return None


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

    def reserve(self, app: str, caps: Caps, estimate: float, now: float | None = None) -> Shortfall | None:
        """Atomically: if every cap has room for `estimate` (the request's worst case) on top of
        what is spent and held, reserve it and return None; else the cap without room. The
        reservation is settled when the request's real cost is known, which is never more, so a
        cap is never exceeded, however many requests race for its last dollars."""
        now = time.time() if now is None else now
        day, month = periods(now)
        with self._lock:
            short = shortfall(caps, self._spent.get((app, day), 0.0), self._spent.get((app, month), 0.0), estimate, now)
            if short is not None:
                return short
            for key in ((app, day), (app, month)):
                self._spent[key] = self._spent.get(key, 0.0) + estimate
        return None

    def exhausted(self, app: str, caps: Caps, now: float | None = None) -> Shortfall | None:
        """The cap already spent, if one is (nothing reserved)."""
        now = time.time() if now is None else now
        daily, monthly = self.spent(app, now)
        return shortfall(caps, daily, monthly, 0.0, now)
