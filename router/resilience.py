"""Keeping a failing upstream from taking requests down with it: bounded retries with backoff and
jitter on retryable errors, and a circuit breaker per model.

A breaker opens after `failures_to_open` failed attempts in a row (each retry is an attempt: one
request to a dead provider makes three); while open, calls fail at once (so
the router moves on to the next target without waiting on a dead provider). After `cooldown_s` it
lets one probe through (half-open): success closes it, failure opens it again.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from router.errors import EdgewayError, UpstreamError

T = TypeVar("T")
CLOSED, HALF_OPEN, OPEN = "closed", "half-open", "open"


@dataclass
class RetryPolicy:
    attempts: int = 2  # retries after the first try
    base_delay_s: float = 0.1
    max_delay_s: float = 1.0

    def delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter."""
        return random.uniform(0, min(self.max_delay_s, self.base_delay_s * 2**attempt))


def retryable(exc: EdgewayError) -> bool:
    """Worth trying the same upstream again: transport errors, timeouts, 429 and 5xx, never a 4xx
    (a refusal the provider will repeat: a rejected request, an unknown model, a body too large)."""
    if not isinstance(exc, UpstreamError) and exc.status < 500:
        return False
    status = exc.provider_status if isinstance(exc, UpstreamError) else None
    return status is None or status == 429 or status >= 500


class CircuitOpen(UpstreamError):
    code = "circuit_open"


class Breaker:
    def __init__(
        self,
        name: str,
        failures_to_open: int = 5,
        cooldown_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.failures_to_open = failures_to_open
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.failures = 0  # attempts in a row, retries included
        self.failed_calls = 0  # the requests those attempts were made for
        self.opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return CLOSED
        return HALF_OPEN if self._clock() - self.opened_at >= self.cooldown_s else OPEN

    def allow(self) -> bool:
        state = self.state
        if state == CLOSED:
            return True
        if state == HALF_OPEN and not self._probing:
            self._probing = True
            return True
        return False

    def succeeded(self) -> None:
        self.failures, self.failed_calls, self.opened_at, self._probing = 0, 0, None, False

    def failed(self, retry: bool = False) -> None:
        """An attempt failed; `retry`: a retry of a request whose first attempt failed already."""
        self.failures += 1
        self.failed_calls += 0 if retry else 1
        if self._probing or self.failures >= self.failures_to_open:
            self.opened_at = self._clock()
        self._probing = False

    def abandoned(self) -> None:
        """A call that ended without an answer either way (its client left, its task was
        cancelled): a probe gives its slot back, so the next request probes instead."""
        self._probing = False

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "consecutive_failures": self.failures}


async def guarded(breaker: Breaker, retry: RetryPolicy, call: Callable[[], Awaitable[T]]) -> T:
    """Run `call` through the breaker, retrying retryable failures with backoff and jitter."""
    for attempt in range(retry.attempts + 1):
        if not breaker.allow():
            calls = breaker.failed_calls
            raise CircuitOpen(
                f"{breaker.name}: the circuit is open after {breaker.failures} failed attempts in a row "
                f"({calls} request{'' if calls == 1 else 's'}, retries included); "
                f"not calling the provider for up to {breaker.cooldown_s:g} s",
                retry_after=breaker.cooldown_s,
            )
        try:
            result = await call()
        except EdgewayError as exc:
            if not retryable(exc):
                breaker.succeeded()  # the provider answered: it is up, the request was at fault
                raise
            breaker.failed(retry=attempt > 0)
            if attempt == retry.attempts:
                raise
            await asyncio.sleep(retry.delay(attempt))
            continue
        except Exception:
            breaker.failed(retry=attempt > 0)  # an error nobody expected is a failure of the provider's path too
            raise
        except BaseException:
            breaker.abandoned()  # cancelled: no verdict on the provider
            raise
        breaker.succeeded()
        return result
    raise AssertionError("unreachable")
