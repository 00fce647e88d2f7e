"""Prompt-lookup speculative decoding (`edge_runtime.speculation`): what a sequence guesses, and when
drafting pays for the whole batch."""

from __future__ import annotations

import pytest

from edge_runtime.speculation import PRIOR_RATE, PROBE_EVERY, PROBE_TOKENS, PromptLookup, Speculation, StepCost


def test_the_guess_is_what_followed_the_last_tokens_where_they_occurred_before():
    # "... the lens turned , the lens" -> what followed "the lens" before
    lookup = PromptLookup.of([5, 10, 11, 12, 13, 7, 10, 11])
    assert lookup.guess(3) == [12, 13, 7]
    assert lookup.guess(1) == [12]
    lookup.extend([12])  # the model wrote what was guessed: the longer run now leads
    assert lookup.guess(2) == [13, 7]


def test_the_longest_run_that_occurred_before_decides_and_the_latest_occurrence_wins():
    lookup = PromptLookup.of([1, 2, 3, 40, 9, 2, 3, 50, 1, 2, 3])
    assert lookup.guess(1) == [40]  # (1, 2, 3) was followed by 40; (2, 3) last by 50
    other = PromptLookup.of([2, 3, 40, 2, 3, 50, 8, 2, 3])
    assert other.guess(1) == [50]


def test_nothing_is_guessed_where_nothing_repeats():
    lookup = PromptLookup.of([1, 2, 3, 4, 5])
    assert lookup.guess(4) == []
    assert PromptLookup.of([1, 2, 1]).guess(4) == []  # a single token repeated predicts little
    assert PromptLookup.of([1, 2, 1, 2]).guess(0) == []


def test_a_sequence_whose_guesses_fail_stops_drafting_and_probes_now_and_then():
    speculation = fitted(0.005, 0.005)
    lookup = PromptLookup.of([1, 2, 1, 2])
    assert lookup.rate == PRIOR_RATE
    for _ in range(6):
        lookup.accepted(guessed=4, kept=0)
    assert lookup.rate < 0.1
    assert speculation.guesses(lookup, tokens_in_step=1, room=100) == 0
    for _ in range(PROBE_EVERY):
        lookup.skipped()
    assert speculation.guesses(lookup, tokens_in_step=1, room=100) == PROBE_TOKENS  # a short try
    assert speculation.guesses(lookup, tokens_in_step=8, room=100) == 0  # in a full step, rarer
    for _ in range(PROBE_EVERY * 7):
        lookup.skipped()
    assert speculation.guesses(lookup, tokens_in_step=8, room=100) == PROBE_TOKENS
    for _ in range(4):  # the tries are kept: the text turned to copying, and it drafts in full again
        lookup.accepted(guessed=2, kept=2)
    assert lookup.waited == 0 and speculation.guesses(lookup, tokens_in_step=1, room=100) == speculation.most


def test_the_step_cost_is_fitted_as_a_fixed_part_and_a_part_per_token():
    cost = StepCost()
    assert cost.fit() is None
    for tokens in (1, 2, 5, 9, 1, 3):
        cost.add(tokens, 0.010 + 0.005 * tokens)
    a, b = cost.fit() or (0, 0)
    assert a == pytest.approx(0.010) and b == pytest.approx(0.005)
    same_size = StepCost()
    for _ in range(10):
        same_size.add(4, 0.03)
    assert same_size.fit() is None  # one size of step says nothing of the part per token


def fitted(a: float, b: float) -> Speculation:
    speculation = Speculation()
    for tokens in (1, 2, 4, 8, 1, 6):
        speculation.measured(tokens, a + b * tokens)
    return speculation


def test_drafting_pays_at_batch_1_when_tokens_are_cheap_next_to_a_step():
    # a memory-bound step: 10 ms to read the weights, 2 ms a token more
    speculation = fitted(0.010, 0.002)
    half = PromptLookup(rate=0.5)
    assert speculation.guesses(half, tokens_in_step=1, room=100) == 8  # 0.5 > 0.002 / 0.012
    assert speculation.guesses(half, tokens_in_step=8, room=100) == 0  # 0.5 < 0.016 / 0.026
    assert speculation.guesses(PromptLookup(rate=0.7), tokens_in_step=8, room=100) == 8
    assert speculation.guesses(PromptLookup(rate=0.7), tokens_in_step=8, room=3) == 3  # the batch's room


def test_drafting_stops_where_the_batch_would_lose_by_it():
    # a compute-bound step: each token costs as much as the fixed part
    speculation = fitted(0.005, 0.005)
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=1, room=100) == 8  # 0.6 > 0.5
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=8, room=100) == 0  # 0.6 < 0.89
    assert speculation.guesses(PromptLookup(rate=0.95), tokens_in_step=8, room=100) == 8  # text copied


def test_before_the_step_cost_is_known_only_a_lone_sequence_drafts():
    speculation = Speculation()
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=1, room=100) == 8
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=2, room=100) == 0
    assert speculation.guesses(PromptLookup(rate=0.3), tokens_in_step=1, room=100) == 0


def test_the_configuration_names_the_mode_and_refuses_what_this_version_does_not_run():
    from pydantic import ValidationError

    from edge_runtime.config import EdgeModelConfig

    config = EdgeModelConfig(speculative={"mode": "prompt_lookup", "most": 4})
    assert config.speculative is not None and config.speculative.most == 4
    assert EdgeModelConfig().speculative is None
    with pytest.raises(ValidationError, match="mode 'draft'.*not supported"):
        EdgeModelConfig(speculative={"mode": "draft", "draft_gguf": "draft.gguf"})
    with pytest.raises(ValidationError, match="draft_gguf is read only with mode: draft"):
        EdgeModelConfig(speculative={"draft_gguf": "draft.gguf"})
