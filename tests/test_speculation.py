"""Speculative decoding (`edge_runtime.speculation`): what a sequence guesses from its prompt, and
when drafting, from the prompt or from a draft model, pays for the whole batch."""

from __future__ import annotations

import pytest

from edge_runtime.speculation import (
    MOST_SAVED_S,
    PRIOR_RATE,
    PROBE_EVERY,
    PROBE_SHARE,
    PROBE_TOKENS,
    GuessCost,
    PromptLookup,
    Speculation,
)


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


def test_a_sequence_whose_guesses_fail_stops_drafting_and_learns_from_what_it_would_have_guessed():
    """Prompt lookup's guesses cost nothing to make: where a sequence does not draft, the guess it
    would have made is checked against what the model writes, so it starts drafting again as soon
    as its text turns to copying, without paying for a try."""
    speculation = fitted(0.005, 0.005)
    lookup = PromptLookup.of([7, 8, 9, 1, 2, 3, 4, 5, 6, 1, 2])
    assert lookup.rate == PRIOR_RATE
    for _ in range(6):
        lookup.accepted(guessed=4, kept=0)
    assert lookup.rate < 0.4 and speculation.guesses(lookup, tokens_in_step=1, room=100) == 0
    for _ in range(PROBE_EVERY * 8):
        lookup.skipped()
    assert speculation.guesses(lookup, tokens_in_step=1, room=100) == 0  # no probe: it watches instead
    lookup.watch(8)  # it would guess 3, 4, 5, 6, 1, 2 after "1, 2"
    lookup.extend([3])
    lookup.extend([4, 5])
    assert speculation.guesses(lookup, tokens_in_step=1, room=100) >= 1  # the model wrote what it would have
    lookup.watch(8)
    lookup.extend([6, 9])  # right, then wrong: the watch ends
    assert lookup.guess(1) == [] and lookup._watched == []


def test_each_further_guess_must_pay_for_the_batch_on_its_own():
    """The k-th guess is kept with chance rate^k: a nearly sure sequence drafts far, a middling
    one a guess or two, and how far depends on what a token costs next to a step."""
    compute_bound = fitted(0.005, 0.005)  # each token costs as much as the fixed part: bar 0.5 alone
    assert compute_bound.guesses(PromptLookup(rate=0.99), tokens_in_step=1, room=100) == 8
    assert compute_bound.guesses(PromptLookup(rate=0.8), tokens_in_step=1, room=100) == 3  # 0.8^3 0.51 > 0.5
    assert compute_bound.guesses(PromptLookup(rate=0.6), tokens_in_step=1, room=100) == 1  # 0.6^2 < 0.5
    assert compute_bound.guesses(PromptLookup(rate=0.45), tokens_in_step=1, room=100) == 0
    memory_bound = fitted(0.010, 0.002)
    assert memory_bound.guesses(PromptLookup(rate=0.85), tokens_in_step=1, room=100) == 8  # 0.85^8 0.27 > 0.17


def fitted(a: float, b: float) -> Speculation:
    speculation = Speculation()
    for tokens in (1, 2, 4, 8, 1, 6) * 4:
        speculation.cost.add(tokens, a + b * tokens)
    return speculation


def test_drafting_pays_at_batch_1_when_tokens_are_cheap_next_to_a_step():
    # a memory-bound step: 10 ms to read the weights, 2 ms a token more
    speculation = fitted(0.010, 0.002)
    half = PromptLookup(rate=0.5)
    assert speculation.guesses(half, tokens_in_step=1, room=100) == 2  # 0.5^2 > 0.002 / 0.012 > 0.5^3
    assert speculation.guesses(half, tokens_in_step=8, room=100) == 0  # 0.5 < 0.016 / 0.026
    assert speculation.guesses(PromptLookup(rate=0.97), tokens_in_step=8, room=100) == 8  # 0.97^8 > 0.62
    assert speculation.guesses(PromptLookup(rate=0.97), tokens_in_step=8, room=3) == 3  # the batch's room


def test_drafting_stops_where_the_batch_would_lose_by_it():
    # a compute-bound step: each token costs as much as the fixed part
    speculation = fitted(0.005, 0.005)
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=1, room=100) == 1  # 0.6 > 0.5
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=8, room=100) == 0  # 0.6 < 0.89
    assert speculation.guesses(PromptLookup(rate=0.995), tokens_in_step=8, room=100) == 8  # text copied


def test_before_the_step_cost_is_known_only_a_lone_sequence_drafts():
    speculation = Speculation()
    assert speculation.guesses(PromptLookup(rate=0.95), tokens_in_step=1, room=100) == 8
    assert speculation.guesses(PromptLookup(rate=0.95), tokens_in_step=2, room=100) == 0
    assert speculation.guesses(PromptLookup(rate=0.3), tokens_in_step=1, room=100) == 0


def test_a_draft_models_guesses_pay_only_beyond_their_own_cost():
    # a memory-bound step (10 ms, 2 ms a token) and a draft that takes 4 ms a guess
    speculation = fitted(0.010, 0.002)
    speculation.guess_cost = GuessCost()
    speculation.drafting_took(guesses=8, seconds=0.032)
    assert speculation.guess_cost.per_guess == pytest.approx(0.004)
    assert speculation.guesses(PromptLookup(rate=0.6), tokens_in_step=1, room=100) == 1  # 0.6 > 0.006 / 0.012
    assert speculation.guesses(PromptLookup(rate=0.4), tokens_in_step=1, room=100) == 0  # free guesses would pay
    assert speculation.guesses(PromptLookup(rate=0.9), tokens_in_step=4, room=100) == 0  # 0.9 < 0.024 / 0.018


def test_a_draft_as_slow_as_the_model_never_pays():
    speculation = fitted(0.010, 0.002)
    speculation.guess_cost = GuessCost()
    speculation.drafting_took(guesses=4, seconds=0.048)  # 12 ms a guess: a step of the served model's own
    assert speculation.guesses(PromptLookup(rate=1.0), tokens_in_step=1, room=100) == 0


def test_a_new_sequence_starts_from_the_draft_models_recent_rate_and_from_the_prior_with_prompt_lookup():
    lookup_mode = fitted(0.010, 0.002)
    draft_mode = fitted(0.010, 0.002)
    draft_mode.guess_cost = GuessCost()
    for speculation in (lookup_mode, draft_mode):
        for _ in range(10):
            speculation.counted(guessed=8, kept=0)
    assert lookup_mode.prior() == PRIOR_RATE  # copied text and open text differ: each learns its own
    assert draft_mode.prior() == pytest.approx(PRIOR_RATE * 0.85**10)  # a miss at once, each time
    draft_mode.drafting_took(guesses=8, seconds=0.016)  # 2 ms a guess
    new = PromptLookup.of([1, 2, 3], draft_mode.prior())
    assert draft_mode.guesses(new, tokens_in_step=1, room=100) == 0  # 0.1 < 0.004 / 0.012


def test_a_draft_models_probes_take_a_hundredth_of_the_steps_time_however_dear():
    speculation = fitted(0.010, 0.002)
    speculation.guess_cost = GuessCost()
    speculation.drafting_took(guesses=2, seconds=0.012)  # 6 ms a guess: a probe costs 12 ms
    waited = PromptLookup(rate=0.0, waited=PROBE_EVERY - 1)
    speculation.stepped(tokens_in_step=1)
    assert speculation.guesses(waited, tokens_in_step=1, room=100) == 0  # a sequence first writes a few
    waited.waited = PROBE_EVERY
    assert speculation.guesses(waited, tokens_in_step=1, room=100) == PROBE_TOKENS
    speculation.drafting_took(guesses=2, seconds=0.012)
    # 12 ms is 1% of 100 steps of 12 ms: the next probe comes once they have run
    steps = 0
    while speculation.guesses(waited, tokens_in_step=1, room=100) == 0:
        speculation.stepped(tokens_in_step=1)
        steps += 1
    assert steps == pytest.approx(0.012 / (PROBE_SHARE * 0.012), abs=1)
    # that probe first read a long answer (0.3 s): the budget is in debt until the steps pay it
    speculation.drafting_took(guesses=2, seconds=0.3)
    steps = 0
    while speculation.guesses(waited, tokens_in_step=1, room=100) == 0:
        speculation.stepped(tokens_in_step=1)
        steps += 1
    assert steps * 0.012 * PROBE_SHARE == pytest.approx(0.3, rel=0.05)
    # a long quiet spell saves up for a few probes at most, not a run of them
    for _ in range(100_000):
        speculation.stepped(tokens_in_step=1)
    assert speculation.probe_budget_s == MOST_SAVED_S


def test_a_step_cost_once_known_stays_known_through_a_long_answer_at_batch_1():
    speculation = fitted(0.010, 0.002)
    assert speculation.fitted is not None
    for _ in range(2000):  # one-token steps: they track the load, not the split
        speculation.cost.add(1, 0.012)
    assert speculation.cost.fit() is None
    fixed, per_token = speculation.fitted or (0.0, 0.0)
    assert fixed + per_token == pytest.approx(0.012, rel=0.05)


def test_the_drafts_reading_of_a_prompt_is_charged_to_the_guesses_that_follow():
    cost = GuessCost()
    cost.add(guesses=0, seconds=0.030)  # reading the prompt: no guess yet
    cost.add(guesses=0, seconds=0.030)
    cost.add(guesses=6, seconds=0.012)
    assert cost.per_guess == pytest.approx(0.072 / 6)
    for _ in range(60):  # a reading long past weighs little against recent guesses
        cost.add(guesses=6, seconds=0.012)
    assert cost.per_guess == pytest.approx(0.002, rel=0.01)


def test_the_configuration_names_the_mode_and_a_draft_model_only_with_its_mode():
    from pydantic import ValidationError

    from edge_runtime.config import EdgeModelConfig

    config = EdgeModelConfig(speculative={"mode": "prompt_lookup", "most": 4})
    assert config.speculative is not None and config.speculative.most == 4
    assert EdgeModelConfig().speculative is None
    drafted = EdgeModelConfig(speculative={"mode": "draft", "draft_gguf": "draft.gguf"}).speculative
    assert drafted is not None and drafted.draft_gguf == "draft.gguf"
    with pytest.raises(ValidationError, match="mode 'draft' needs draft_gguf"):
        EdgeModelConfig(speculative={"mode": "draft"})
    with pytest.raises(ValidationError, match="draft_gguf is read only with mode: draft"):
        EdgeModelConfig(speculative={"draft_gguf": "draft.gguf"})
