"""What one decode step reads of each waiting prompt (`edge_runtime.pacing`): a short request
beside a long prompt waits at most one small step, and the long prompt always advances."""

from __future__ import annotations

import pytest

from edge_runtime.pacing import HOL_SHARE, MIN_CHUNK, SHORT_PROMPT, STEP_TARGET_S, Pacer

LONG = 4_500


def slow_machine() -> Pacer:
    """Steps as this project's 2-core CI machine takes them: 10 ms a token deep in a long prompt,
    120 ms for a short request's own prefill."""
    pacer = Pacer(n_batch=512)
    pacer.token_s, pacer.short_step_s = 0.010, 0.120
    return pacer


def fast_machine() -> Pacer:
    pacer = Pacer(n_batch=512)
    pacer.token_s, pacer.short_step_s = 0.0004, 0.016
    return pacer


def test_a_short_prompt_is_read_whole_in_a_step_that_reads_no_long_prompt():
    pacer = fast_machine()
    assert pacer.reads(decoding=0, left=[LONG]) == [pacer.chunk()]
    # A short request arrives: its step is its prefill alone, so its first token comes after it.
    assert pacer.reads(decoding=0, left=[30, LONG]) == [30, 0]


def test_a_long_prompt_held_back_one_step_is_read_the_next_whatever_arrives():
    pacer = fast_machine()
    assert pacer.reads(decoding=0, left=[20, LONG]) == [20, 0]
    assert pacer.reads(decoding=0, left=[25, LONG]) == [25, pacer.chunk()]  # never starved
    assert pacer.reads(decoding=0, left=[30, LONG]) == [30, 0]


def test_a_long_prompt_reads_a_share_of_a_short_prefill_not_a_fixed_time():
    # On a fast machine a short prefill takes 16 ms: a chunk is a quarter of that, 10 tokens.
    fast = fast_machine()
    assert fast.chunk() == int(HOL_SHARE * 0.016 / 0.0004) == 10
    # On a slow one both grow together: 3 tokens of 10 ms for a 120 ms short prefill.
    assert slow_machine().chunk() == 3
    # Where one token of the long prompt costs more than that share, it still reads MIN_CHUNK.
    assert Pacer(n_batch=512, token_s=0.03, short_step_s=0.05).chunk() == MIN_CHUNK == 1
    # Where a short prefill is slow but tokens are cheap (a GPU reading a big batch), the chunk
    # stops at STEP_TARGET_S of work and at the batch.
    gpu = Pacer(n_batch=512, token_s=0.00001, short_step_s=1.0)
    assert gpu.chunk() == min(512, int(STEP_TARGET_S / 0.00001)) == 512


def test_before_any_short_step_is_measured_a_typical_short_prompt_is_assumed():
    pacer = Pacer(n_batch=512, token_s=0.001)
    assert pacer.short_step_s is None
    assert pacer.chunk() == 8  # a quarter of 32 tokens' work
    pacer.measured(tokens=40, seconds=0.2, short_only=True)
    assert pacer.short_step_s == pytest.approx(0.2)
    pacer.measured(tokens=40, seconds=0.4, short_only=False)  # a step with a long chunk in it
    assert pacer.short_step_s == pytest.approx(0.2)


def test_generating_sequences_take_their_token_first_and_prompts_share_what_is_left():
    pacer = Pacer(n_batch=64, token_s=0.0001, short_step_s=1.0)
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
