"""What one decode step reads of each waiting prompt (`edge_runtime.pacing`): a short request
beside a long prompt waits for its own step, the long prompt reads in chunks sized in time, and
cuts for short requests never starve it."""

from __future__ import annotations

import pytest

from edge_runtime.batch import BatchScheduler
from edge_runtime.pacing import ALONE_S, BESIDE_S, MAX_HELD_S, MIN_CHUNK, SHORT_PROMPT, Pacer

LONG = 4_500


def slow_machine() -> Pacer:
    """Steps as this project's 2-core CI machine takes them: 10 ms a token deep in a long prompt."""
    return Pacer(n_batch=512, token_s=0.010)


def fast_machine() -> Pacer:
    return Pacer(n_batch=512, token_s=0.0004)


def test_a_short_prompt_is_read_whole_in_a_step_that_reads_no_long_prompt():
    pacer = fast_machine()
    assert pacer.reads(decoding=0, left=[LONG]) == [pacer.chunk(beside=False)]
    # A short request arrives: its step is its prefill alone, so its first token comes after it.
    assert pacer.reads(decoding=0, left=[30, LONG]) == [30, 0]


def test_a_long_prompt_held_back_one_step_is_read_the_next_whatever_arrives():
    pacer = slow_machine()
    assert pacer.reads(decoding=0, left=[20, LONG]) == [20, 0]
    assert pacer.reads(decoding=0, left=[25, LONG]) == [25, pacer.chunk(beside=False)]  # never starved
    assert pacer.reads(decoding=0, left=[30, LONG]) == [30, 0]


def test_a_long_prompt_reads_a_chunk_sized_in_time():
    # Alone, a quarter of a second of work: 25 tokens of 10 ms on a slow machine, 625 on a fast
    # one but never past the batch.
    assert slow_machine().chunk(beside=False) == int(ALONE_S / 0.010) == 25
    assert fast_machine().chunk(beside=False) == 512
    # Beside generating sequences, whose every token waits for the step: 50 ms of work.
    assert slow_machine().chunk(beside=True) == int(BESIDE_S / 0.010) == 5
    assert fast_machine().chunk(beside=True) == int(BESIDE_S / 0.0004) == 125
    # Where one token costs more than that, it still reads MIN_CHUNK.
    assert Pacer(n_batch=512, token_s=0.3).chunk(beside=True) == MIN_CHUNK == 1


def test_the_cost_of_a_token_is_learned_from_the_steps_that_ran():
    pacer = Pacer(n_batch=512, token_s=0.001)
    pacer.measured(tokens=40, seconds=0.4, long_read=True)
    assert pacer.token_s == pytest.approx(0.8 * 0.001 + 0.2 * 0.01)
    pacer.measured(tokens=1, seconds=0.5, long_read=False)  # one token measures fixed costs: ignored
    assert pacer.token_s == pytest.approx(0.8 * 0.001 + 0.2 * 0.01)


def test_the_chunk_beside_generating_sequences_is_the_smaller_one():
    pacer = slow_machine()
    assert pacer.reads(decoding=0, left=[LONG]) == [pacer.chunk(beside=False)]
    assert pacer.reads(decoding=3, left=[LONG]) == [pacer.chunk(beside=True)]


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
    pacer = Pacer(n_batch=64, token_s=0.0001)
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
        assert steps < LONG  # MIN_CHUNK a step at the least
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
