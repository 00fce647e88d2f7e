"""Circuit breakers always recover: whatever happens to a half-open probe, a later request probes."""

from __future__ import annotations

import asyncio

import pytest

from router.errors import UpstreamError
from router.resilience import Breaker, CircuitOpen, RetryPolicy, guarded

NO_RETRY = RetryPolicy(attempts=0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def failing() -> str:
    raise UpstreamError("503", provider_status=503)


async def answering() -> str:
    return "ok"


async def opened(clock: Clock) -> Breaker:
    breaker = Breaker("cloud", failures_to_open=2, cooldown_s=10, clock=clock)
    for _ in range(2):
        with pytest.raises(UpstreamError):
            await guarded(breaker, NO_RETRY, failing)
    assert breaker.state == "open"
    with pytest.raises(CircuitOpen):
        await guarded(breaker, NO_RETRY, answering)
    clock.now += 10
    assert breaker.state == "half-open"
    return breaker


async def test_a_probe_whose_client_leaves_gives_its_slot_to_the_next_request():
    clock = Clock()
    breaker = await opened(clock)
    stalled = asyncio.Event()

    async def stalls() -> str:
        await stalled.wait()
        return "never"

    probe = asyncio.ensure_future(guarded(breaker, NO_RETRY, stalls))
    await asyncio.sleep(0)
    with pytest.raises(CircuitOpen):  # one probe at a time
        await guarded(breaker, NO_RETRY, answering)
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert await guarded(breaker, NO_RETRY, answering) == "ok"
    assert breaker.state == "closed"


async def test_a_probe_that_raises_an_unexpected_error_reopens_and_a_later_one_probes_again():
    clock = Clock()
    breaker = await opened(clock)

    async def crashes() -> str:
        raise RuntimeError("a bug in a provider adapter")

    with pytest.raises(RuntimeError):
        await guarded(breaker, NO_RETRY, crashes)
    assert breaker.state == "open"
    clock.now += 10
    assert await guarded(breaker, NO_RETRY, answering) == "ok"
    assert breaker.state == "closed"


async def test_a_probe_that_times_out_reopens_and_a_later_one_probes_again():
    clock = Clock()
    breaker = await opened(clock)

    async def times_out() -> str:
        raise TimeoutError

    with pytest.raises(TimeoutError):
        await guarded(breaker, NO_RETRY, times_out)
    clock.now += 10
    assert await guarded(breaker, NO_RETRY, answering) == "ok"


async def test_many_requests_at_the_moment_of_half_opening_send_one_probe_and_all_recover():
    clock = Clock()
    breaker = await opened(clock)
    calls = 0
    release = asyncio.Event()

    async def slow_answer() -> str:
        nonlocal calls
        calls += 1
        await release.wait()
        return "ok"

    racing = [asyncio.ensure_future(guarded(breaker, NO_RETRY, slow_answer)) for _ in range(50)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*racing, return_exceptions=True)
    assert calls == 1  # exactly one probe reached the provider
    assert results.count("ok") == 1 and all(isinstance(r, CircuitOpen) for r in results if r != "ok")
    assert breaker.state == "closed"
    assert [await guarded(breaker, NO_RETRY, answering) for _ in range(3)] == ["ok"] * 3
