"""`redis://host:port/db`: the ledger and budgets shared by many gateway replicas.

- Admission is one Lua script: it checks the app's daily and monthly spend and the request's
  worst-case cost against the caps and, if there is room, reserves that cost, atomically; the row's
  real cost (never more) settles the reservation later. Replicas racing at the limit never
  exceed it.
- Rows and charges are written by a background thread, off the event loop.
- Redis down: the gateway keeps serving, `status()` says degraded (shown by /readyz), and the rows
  wait in memory until Redis is back, then are written: nothing is lost. Admission raises
  StoreUnavailable and the app's `store_outage` decides: refuse, the edge, or `admit_alone`, which
  spends from this replica's share of what was left at the last admission Redis answered (the
  replicas count themselves there, each admission a heartbeat), so that replicas that cannot see
  each other's spend stay within the cap together.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from dataclasses import dataclass

import redis
from redis.client import Pipeline

from router.budget import SLACK_USD, BudgetBook, Caps, Shortfall, periods, shortfall
from router.ledger.rows import UsageRow
from router.ledger.store import StoreUnavailable
from router.limits import Limits, RateWindows

ROWS = "edgeway:usage"
REPLICAS = "edgeway:replicas"  # each replica's last admission, by time: who shares the budgets
REPLICA_SEEN_S = 120  # a replica that admitted nothing for this long no longer counts
_ADMIT = """
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', tonumber(ARGV[4]) - tonumber(ARGV[6]))
local replicas = redis.call('ZCARD', KEYS[3])
local day, month = tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(redis.call('GET', KEYS[2]) or '0')
local day_cap, month_cap, estimate, slack = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[7])
if (day_cap >= 0 and (day >= day_cap or day + estimate > day_cap + slack))
  or (month_cap >= 0 and (month >= month_cap or month + estimate > month_cap + slack)) then
  return {0, tostring(day), tostring(month), replicas}
end
if estimate > 0 then
  day = tonumber(redis.call('INCRBYFLOAT', KEYS[1], ARGV[3]))
  month = tonumber(redis.call('INCRBYFLOAT', KEYS[2], ARGV[3]))
  redis.call('EXPIRE', KEYS[1], 172800)
  redis.call('EXPIRE', KEYS[2], 3456000)
end
return {1, tostring(day), tostring(month), replicas}
"""
_TAKE = """
local used = redis.call('HMGET', KEYS[1], 'requests', 'tokens')
local requests, tokens = tonumber(used[1] or '0'), tonumber(used[2] or '0')
local rpm, tpm, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if (rpm >= 0 and requests + 1 > rpm) or (tpm >= 0 and tokens + cost > tpm) then return 0 end
redis.call('HINCRBY', KEYS[1], 'requests', 1)
redis.call('HINCRBY', KEYS[1], 'tokens', cost)
redis.call('EXPIRE', KEYS[1], 120)
return 1
"""
RETRY_SECONDS = 0.5


@dataclass(frozen=True)
class Charge:
    """A write waiting for Redis: spend, and the usage row it comes from (none for a reservation)."""

    app: str
    usd: float
    ts: float
    row: UsageRow | None = None


Pending = Charge | threading.Event  # an event is set once everything queued before it is written


def _cap(limit: float | None) -> float:
    """A cap as the Lua scripts take it: -1 for none."""
    return -1 if limit is None else limit


def _keys(app: str, now: float) -> tuple[str, str]:
    day, month = periods(now)
    return f"edgeway:spend:{app}:{day}", f"edgeway:spend:{app}:{month}"


class RedisStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self._admit = self._redis.register_script(_ADMIT)
        self._take = self._redis.register_script(_TAKE)
        self._windows = RateWindows()  # the fallback while Redis is away
        self._local = BudgetBook()  # spend as last seen in Redis, plus this replica's since
        self.replica = uuid.uuid4().hex
        self._replicas = 1  # sharing the budgets, as Redis last counted them
        self._alone = BudgetBook()  # this replica's reservations since Redis went away, by app
        self._seen: dict[str, tuple[float, float]] = {}  # per app: (daily, monthly) spend Redis last said
        self._backlog: queue.Queue[Pending] = queue.Queue()
        self._error: str | None = None
        self._closing = threading.Event()
        self._give_up_at = float("inf")
        self._writer = threading.Thread(target=self._write, name="ledger-redis", daemon=True)
        self._writer.start()

    # --- budgets --------------------------------------------------------------------------
    def reserve(self, app: str, caps: Caps, estimate: float) -> Shortfall | None:
        now = time.time()
        try:
            allowed, day, month, replicas = self._admit(
                keys=[*_keys(app, now), REPLICAS],
                args=[
                    _cap(caps.daily_usd),
                    _cap(caps.monthly_usd),
                    estimate,
                    now,
                    self.replica,
                    REPLICA_SEEN_S,
                    SLACK_USD,
                ],
            )
        except redis.RedisError as exc:
            self._degraded(exc)
            raise StoreUnavailable(str(exc)) from None
        self._local.set_spent(app, now, float(day), float(month))  # the fallback if Redis goes away
        self._seen[app] = (float(day), float(month))
        self._replicas = max(1, int(replicas))
        self._alone = BudgetBook()  # Redis answers: an outage's account starts afresh next time
        if allowed:
            return None
        # the script's test, on the spend it read: the same floats, so the same cap (inf: any one
        # of them, were the two ever to differ)
        day_spent, month_spent = float(day), float(month)
        return shortfall(caps, day_spent, month_spent, estimate, now) or shortfall(
            caps, day_spent, month_spent, float("inf"), now
        )

    def reserve_alone(self, app: str, caps: Caps, estimate: float) -> Shortfall | None:
        """From this replica's share (one in as many replicas as Redis last counted) of what each
        cap had left when Redis last answered: while it has room for `estimate`, the reservation
        is made."""
        day, month = self._seen.get(app, self._local.spent(app))
        share = Caps(
            None if caps.daily_usd is None else max(0.0, caps.daily_usd - day) / self._replicas,
            None if caps.monthly_usd is None else max(0.0, caps.monthly_usd - month) / self._replicas,
        )
        short = self._alone.reserve(app, share, estimate)
        if short is not None:
            return short
        self._local.charge(app, estimate)
        return None

    def exhausted(self, app: str, caps: Caps) -> Shortfall | None:
        return self._local.exhausted(app, caps)

    def take(self, app: str, tokens: int, limits: Limits) -> float | None:
        now = time.time()
        try:
            allowed = self._take(
                keys=[f"edgeway:rate:{app}:{int(now // 60)}"],
                args=[_cap(limits.requests_per_minute), _cap(limits.tokens_per_minute), tokens],
            )
        except redis.RedisError as exc:
            self._degraded(exc)
            return self._windows.take(app, tokens, limits, now)
        return None if allowed else 60 - now % 60

    def left(self, app: str, caps: Caps, now: float | None = None) -> float | None:
        return self._local.left(app, caps, now)

    def charge(self, app: str, usd: float, now: float | None = None) -> None:
        self._local.charge(app, usd, now)
        self._backlog.put(Charge(app, usd, time.time() if now is None else now))

    # --- rows -----------------------------------------------------------------------------
    def append(self, row: UsageRow, reserved: float = 0.0) -> None:
        self._local.charge(row.account, row.cost_usd - reserved, row.ts)
        self._backlog.put(Charge(row.account, row.cost_usd - reserved, row.ts, row))

    def _write(self) -> None:
        pending: list[Pending] = []
        while not (self._closing.is_set() and not pending and self._backlog.empty()):
            try:
                pending.append(self._backlog.get(timeout=0.2))
            except queue.Empty:
                if self._error is not None and not pending:
                    self._probe()
            while not self._backlog.empty() and len(pending) < 500:
                pending.append(self._backlog.get())
            if not pending:
                continue
            try:
                self._flush(pending)
            except redis.RedisError as exc:
                self._degraded(exc)
                if self._closing.wait(RETRY_SECONDS) and time.monotonic() > self._give_up_at:
                    break
                continue
            pending = []
            self._error = None

    def _probe(self) -> None:
        try:
            self._redis.ping()
            self._error = None
        except redis.RedisError as exc:
            self._degraded(exc)

    def _flush(self, items: list[Pending]) -> None:
        pipe = self._redis.pipeline(transaction=True)
        for item in items:
            if isinstance(item, threading.Event):
                continue
            if item.row is not None:
                pipe.zadd(ROWS, {json.dumps(item.row.as_dict(), sort_keys=True): item.row.ts})
            self._charge_in(pipe, item.app, item.usd, item.ts)
        pipe.execute()
        for item in items:
            if isinstance(item, threading.Event):
                item.set()

    @staticmethod
    def _charge_in(pipe: Pipeline, app: str, usd: float, ts: float) -> None:
        if usd:
            day_key, month_key = _keys(app, ts)
            pipe.incrbyfloat(day_key, usd)
            pipe.expire(day_key, 172800)
            pipe.incrbyfloat(month_key, usd)
            pipe.expire(month_key, 3456000)

    def flush(self, timeout: float = 10) -> bool:
        done = threading.Event()
        self._backlog.put(done)
        return done.wait(timeout)

    def rows(self, app: str | None = None, since: float | None = None, until: float | None = None) -> list[UsageRow]:
        self.flush(timeout=2)
        try:
            raw = self._redis.zrangebyscore(
                ROWS, "-inf" if since is None else since, "+inf" if until is None else f"({until}"
            )
        except redis.RedisError as exc:
            self._degraded(exc)
            return []
        rows = [UsageRow(**json.loads(item)) for item in raw]  # type: ignore[arg-type]  # zrangebyscore: members
        return [r for r in rows if app is None or r.app == app]

    # --- health ---------------------------------------------------------------------------
    def _degraded(self, exc: Exception) -> None:
        self._error = f"{type(exc).__name__}: {exc}"

    def status(self) -> str:
        if self._error is None:
            return "ok"
        return (
            f"degraded: redis unreachable ({self._error}); budgets from local counters, "
            f"{self._backlog.qsize()} queued writes"
        )

    def close(self) -> None:
        self._give_up_at = time.monotonic() + 5  # on shutdown, wait a little for Redis, then stop
        self._closing.set()
        self._writer.join(timeout=10)
        self._redis.close()
