"""What one decode step reads of each waiting prompt (`edge_runtime.pacing`), and what a step costs
(`edge_runtime.step_cost`): a short request beside a long prompt waits for its own step, a long
prompt alone reads in whole batches and beside generating sequences in chunks sized in time, cuts
for short requests never starve it, and no run of slow steps leaves the chunk stuck small."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_runtime.batch import BatchScheduler
from edge_runtime.pacing import BESIDE_S, MAX_HELD_S, MIN_CHUNK, READ_FACTOR, SHORT_PROMPT, Pacer
from edge_runtime.step_cost import StepCost

LONG = 4_500
N_BATCH = 512


class Machine:
    """Steps that take `fixed + per_token x tokens` seconds, times `slowdown` while something else
    has the cores, with a few percent of noise."""

    def __init__(self, fixed: float, per_token: float, seed: int = 0) -> None:
        self.fixed, self.per_token, self.slowdown = fixed, per_token, 1.0
        self.noise = random.Random(seed)

    def step(self, tokens: int) -> float:
        return (self.fixed + self.per_token * tokens) * self.slowdown * self.noise.uniform(0.97, 1.03)


def quiet_cost(fixed: float, per_token: float) -> StepCost:
    """A step cost already known to be `fixed + per_token x tokens`."""
    return StepCost.known(fixed, per_token)


def slow_machine() -> Pacer:
    """Steps as this project's 2-core CI machine takes them deep in a long prompt: 5 ms of fixed
    cost, 10 ms a token."""
    return Pacer(n_batch=N_BATCH, cost=quiet_cost(0.005, 0.010))


def fast_machine() -> Pacer:
    return Pacer(n_batch=N_BATCH, cost=quiet_cost(0.005, 0.0004))


def read_beside(pacer: Pacer, machine: Machine, steps: int, generating: int = 2) -> list[int]:
    """`steps` steps of a long prompt read beside `generating` sequences, each step's time told to
    the pacer as the scheduler tells it; the chunk of each."""
    chunks = []
    for _ in range(steps):
        (take,) = pacer.reads(decoding=generating, left=[LONG])
        pacer.measured(generating + take, machine.step(generating + take), long_read=True)
        chunks.append(take)
    return chunks


def serving(machine: Machine, steps: int = 30, seed: int = 0) -> Pacer:
    """A pacer that has seen a server's mix of steps on `machine`: decode steps of a few sequences,
    short prompts read whole, long prompts' batches."""
    pacer, sizes = Pacer(n_batch=N_BATCH), random.Random(seed)
    for _ in range(steps):
        tokens = sizes.choice([1, 2, 3, 4, 40, 64, N_BATCH])
        pacer.measured(tokens, machine.step(tokens), long_read=tokens == N_BATCH)
    return pacer


def quiet_chunk(fixed: float, per_token: float) -> int:
    """The chunk beside generating sequences on a quiet machine whose steps' cost is known."""
    return Pacer(n_batch=N_BATCH, cost=quiet_cost(fixed, per_token)).chunk(beside=True)


def test_a_short_prompt_is_read_whole_in_a_step_that_reads_no_long_prompt():
    pacer = fast_machine()
    assert pacer.reads(decoding=0, left=[LONG]) == [N_BATCH]
    # A short request arrives: its step is its prefill alone, so its first token comes after it.
    assert pacer.reads(decoding=0, left=[30, LONG]) == [30, 0]


def test_a_long_prompt_held_back_one_step_is_read_the_next_whatever_arrives():
    pacer = slow_machine()
    assert pacer.reads(decoding=0, left=[20, LONG]) == [20, 0]
    assert pacer.reads(decoding=0, left=[25, LONG]) == [25, N_BATCH - 25]  # never starved
    assert pacer.reads(decoding=0, left=[30, LONG]) == [30, 0]


def test_a_long_prompt_with_nothing_beside_it_is_read_in_whole_batches_however_slow_the_steps():
    assert slow_machine().chunk(beside=False) == fast_machine().chunk(beside=False) == N_BATCH
    stalled = Pacer(n_batch=N_BATCH, cost=quiet_cost(0.005, 0.3))
    assert stalled.reads(decoding=0, left=[LONG]) == [N_BATCH]
    assert stalled.reads(decoding=0, left=[100, LONG]) == [100, N_BATCH - 100]  # never past a prompt's end


def test_beside_generating_sequences_a_long_prompt_reads_a_chunk_sized_in_time():
    # 50 ms of work: 5 tokens of 10 ms would be the time, but then fixed costs would read the
    # prompt slower than READ_FACTOR allows; 125 tokens of 0.4 ms.
    assert fast_machine().chunk(beside=True) == pytest.approx(BESIDE_S / 0.0004, abs=1)
    assert slow_machine().chunk(beside=True) == MIN_CHUNK
    assert slow_machine().reads(decoding=3, left=[LONG]) == [slow_machine().chunk(beside=True)]


def test_the_least_chunk_keeps_a_prompt_within_the_read_factor_of_whole_batches():
    for fixed, per_token in ((0.005, 0.010), (0.005, 0.0004), (0.2, 0.007), (0.05, 0.00001), (0.0, 0.01)):
        pacer = Pacer(n_batch=N_BATCH, cost=quiet_cost(fixed, per_token))
        least = pacer.least_chunk()
        assert MIN_CHUNK <= least <= N_BATCH
        if least < N_BATCH:
            assert fixed / least + per_token <= READ_FACTOR * (fixed / N_BATCH + per_token) * (1 + 1e-6)
        if least > MIN_CHUNK:  # the smallest that does
            assert fixed / (least - 1) + per_token > READ_FACTOR * (fixed / N_BATCH + per_token)
    # a step that is mostly fixed cost (deep in a prompt, attention over all of it) reads large chunks
    assert Pacer(n_batch=N_BATCH, cost=quiet_cost(0.2, 0.007)).chunk(beside=True) >= 90


def test_the_step_cost_is_fitted_as_a_fixed_part_and_a_part_per_token():
    cost = StepCost()
    assert cost.fit() is None
    for tokens in (1, 2, 5, 9, 1, 3) * 4:
        cost.add(tokens, 0.010 + 0.005 * tokens)
    a, b = cost.fit() or (0, 0)
    assert a == pytest.approx(0.010, rel=0.05) and b == pytest.approx(0.005, rel=0.05)
    assert cost.seconds(100) == pytest.approx(0.510, rel=0.05)
    same_size = StepCost()
    for _ in range(30):
        same_size.add(4, 0.03)
    assert same_size.fit() is None  # one size of step says nothing of the part per token
    assert same_size.seconds(4) == pytest.approx(0.03, rel=0.01)  # but it says what such a step takes


def test_every_step_moves_the_cost_one_token_steps_included():
    cost = quiet_cost(0.005, 0.2)
    for _ in range(30):
        cost.add(1, 0.01)  # one-token steps, much faster than the cost says
    assert cost.seconds(1) == pytest.approx(0.01, rel=0.05)
    assert cost.token_s <= 0.01  # a token cannot cost more than the whole step it was alone in


def test_the_slow_steps_of_the_stuck_reader_do_not_stick_the_chunk():
    """The sequence that left the old pacer reading one token a step for good: three slow steps,
    then a thousand fast one-token steps."""
    pacer = Pacer(n_batch=N_BATCH)
    for tokens, seconds in ((50, 7.0), (7, 2.0), (3, 1.0)):
        pacer.measured(tokens, seconds, long_read=True)
    assert MIN_CHUNK <= pacer.chunk(beside=True) < 50  # slow steps: a small chunk, never 1
    assert pacer.chunk(beside=False) == N_BATCH  # read alone: whole batches whatever the steps say
    for _ in range(1000):
        pacer.measured(1, 0.011, long_read=False)
    machine = Machine(0.010, 0.001)
    quiet = quiet_chunk(0.010, 0.001)
    chunks = read_beside(pacer, machine, 12)
    assert all(abs(c - quiet) <= 0.2 * quiet for c in chunks[4:]), (quiet, chunks)  # back within a few steps


@settings(max_examples=60, deadline=None)
@given(
    phases=st.lists(
        st.tuples(st.floats(1.0, 60.0), st.integers(1, 40), st.sampled_from(["beside", "ones", "mixed"])),
        min_size=1,
        max_size=5,
    ),
    machine=st.sampled_from([(0.005, 0.010), (0.010, 0.001), (0.004, 0.0002), (0.1, 0.005)]),
    seed=st.integers(0, 1000),
)
def test_after_any_slow_phases_the_chunk_returns_to_its_quiet_size_within_a_few_steps(phases, machine, seed):
    fixed, per_token = machine
    quiet = quiet_chunk(fixed, per_token)
    model = Machine(fixed, per_token, seed)
    pacer = serving(model, seed=seed)
    sizes = random.Random(seed)
    for slowdown, steps, kind in phases:
        model.slowdown = slowdown
        for _ in range(steps):
            if kind == "beside":
                read_beside(pacer, model, 1)
            else:
                tokens = 1 if kind == "ones" else sizes.choice([1, 2, 4, 64, 512])
                pacer.measured(tokens, model.step(tokens), long_read=False)
        assert MIN_CHUNK <= pacer.chunk(beside=True) <= N_BATCH
        assert pacer.chunk(beside=False) == N_BATCH
    model.slowdown = 1.0
    chunks = read_beside(pacer, model, 10)
    assert all(abs(c - quiet) <= 0.2 * quiet + 1 for c in chunks[5:]), (quiet, chunks)


def test_cuts_for_short_requests_stop_before_they_starve_a_long_prompt():
    pacer = slow_machine()
    assert pacer.may_cut(now=100.0)
    pacer.was_cut(now=100.0)
    pacer.was_cut(now=100.5)  # cut again before a long step finished: held since the first cut
    assert pacer.may_cut(now=100.0 + MAX_HELD_S - 0.01)
    assert not pacer.may_cut(now=100.0 + MAX_HELD_S)  # the next long step runs to its end
    pacer.measured(tokens=30, seconds=0.25, long_read=False)  # a short request's step: still held
    assert not pacer.may_cut(now=100.0 + MAX_HELD_S)
    pacer.measured(tokens=30, seconds=0.25, long_read=True)
    assert pacer.may_cut(now=100.0 + MAX_HELD_S)


def test_generating_sequences_take_their_token_first_and_prompts_share_what_is_left():
    pacer = Pacer(n_batch=64, cost=quiet_cost(0.001, 0.0001))
    assert pacer.reads(decoding=60, left=[SHORT_PROMPT, LONG]) == [4, 0]
    assert pacer.reads(decoding=10, left=[LONG, LONG + 1]) == [54, 0]  # the shorter long one first


def test_every_prompt_is_read_to_its_end():
    pacer = slow_machine()
    left = [LONG, 40]
    steps = 0
    while any(left):
        order = sorted(range(len(left)), key=lambda i: left[i])
        takes = pacer.reads(decoding=0, left=[left[i] for i in order if left[i]])
        for i, take in zip([i for i in order if left[i]], takes, strict=True):
            left[i] -= take
        steps += 1
        assert steps < LONG // MIN_CHUNK
    assert left == [0, 0]


class _Memory:
    """llama.cpp's memory calls the scheduler makes, recorded."""

    def __init__(self) -> None:
        self.removed: list[int] = []

    def llama_memory_seq_rm(self, memory, seq_id, p0, p1):
        self.removed.append(seq_id)


def _scheduler_keeping(kept: dict[int, int], reserved: int, n_ctx: int) -> BatchScheduler:
    scheduler = object.__new__(BatchScheduler)  # the cache bookkeeping only: no model
    scheduler.lib, scheduler.memory, scheduler.draft = _Memory(), None, None
    scheduler.kept = {slot: [0] * n for slot, n in kept.items()}
    scheduler.reserved, scheduler.n_ctx = reserved, n_ctx
    return scheduler


def test_a_full_cache_forgets_the_oldest_kept_prompt_that_makes_room_alone():
    # A chat's 33 cells kept first, a 4,457-token prompt after; a new long request needs room.
    scheduler = _scheduler_keeping({0: 33, 1: 4457}, reserved=4461, n_ctx=8192)
    scheduler._make_room()
    assert list(scheduler.kept) == [0] and scheduler.lib.removed == [1]  # the chat stays cached


def test_when_no_kept_prompt_makes_room_alone_the_oldest_go_first():
    scheduler = _scheduler_keeping({0: 300, 1: 200, 2: 100}, reserved=900, n_ctx=1200)
    scheduler._make_room()  # 300 over: the oldest frees that alone
    assert list(scheduler.kept) == [1, 2]
    scheduler = _scheduler_keeping({0: 100, 1: 200, 2: 150}, reserved=800, n_ctx=1000)
    scheduler._make_room()  # 250 over: none alone; the oldest, then the oldest that frees the rest
    assert scheduler.lib.removed == [0, 1] and list(scheduler.kept) == [2]


def test_a_document_takes_an_empty_slot_else_the_one_kept_longest_ago():
    # Every slot keeps a prompt: three stale ones from long ago, then the chat just answered.
    scheduler = _scheduler_keeping({1: 44, 2: 44, 3: 44, 0: 33}, reserved=0, n_ctx=100_000)
    scheduler.free_ids, scheduler.active, scheduler.reused, scheduler.n_batch = [0, 1, 2, 3], [], 0, 512
    chat_start = [7] * 24  # the chat template, which the chat shares most of
    scheduler.kept[0] = chat_start + [1] * 9
    document = chat_start + [2] * 4000
    slot, shared = scheduler._slot_for(document)
    assert slot == 1 and shared == 0 and 0 in scheduler.kept  # the chat stays cached
    scheduler.free_ids = [0, 2, 3, 4]  # slot 1 taken; an empty one is taken before any kept one
    assert scheduler._slot_for(document)[0] == 4
