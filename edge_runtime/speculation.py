"""Prompt-lookup speculative decoding, decided step by step so that it never costs throughput.

An answer grounded in its input (extraction, quoting, editing, summarizing a supplied text) repeats
spans of the prompt. Where the last tokens written occurred before, the tokens that followed them
there are a free guess at what comes next (`PromptLookup`): no draft model. The guesses go into the
same `llama_decode` as every other sequence's token, each with its logits; the longest run of them
that the model's own greedy choice agrees with is kept, plus the model's next token, and the cache
cells of the rest are dropped. Greedy output is what it would be without speculation (each kept
token is the argmax the model computed at its position); sampled sequences never draft.

Drafting costs every sequence in the step the time of the extra tokens, and pays only in the tokens
accepted. `Speculation` keeps a linear model of the step's time (a fixed part and a part per token,
from the steps it is told of) and each sequence's acceptance rate, and drafts only where the
expected tokens per second of the whole batch rise: with `n` tokens in the step, a fixed cost `a`
and `b` a token, `k` guesses accepted at rate `r` pay when r > n*b / (a + n*b). At batch 1 on a
memory-bound machine that is a low bar; with eight sequences it is near certainty, and open-ended
text, whose guesses fail, stops drafting after a few steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

NGRAM = 3  # the longest run of last tokens looked up; shorter ones are tried after it
MIN_NGRAM = 2  # a single repeated token ("the", ",") predicts little
PRIOR_RATE = 0.5  # a sequence's acceptance rate before it has drafted: in a big batch, it must earn its drafts
RATE_DECAY = 0.7  # weight of the past in a sequence's acceptance rate
# A sequence that does not draft tries a short draft after this many steps times the tokens in the
# step: how its rate is learnt, and noticed to change, at a cost that stays small in a big batch.
PROBE_EVERY = 16
PROBE_TOKENS = 2


class SpeculativeMode(StrEnum):
    PROMPT_LOOKUP = "prompt_lookup"
    DRAFT = "draft"  # a small draft GGUF proposes: in the configuration's language, not built


@dataclass
class PromptLookup:
    """One sequence's tokens (prompt, then answer) and where each run of `MIN_NGRAM`..`NGRAM`
    tokens last occurred, kept as tokens are added: a lookup costs a dictionary read, not a search
    of the prompt."""

    tokens: list[int] = field(default_factory=list)
    _seen: dict[tuple[int, ...], int] = field(default_factory=dict)  # run -> where its next token is
    rate: float = PRIOR_RATE  # accepted guesses / guesses, recent ones weighing most
    waited: int = 0  # steps since it last drafted

    @classmethod
    def of(cls, prompt: list[int]) -> PromptLookup:
        lookup = cls()
        lookup.extend(prompt)
        return lookup

    def extend(self, tokens: list[int]) -> None:
        for token in tokens:
            self.tokens.append(token)
            end = len(self.tokens)
            # the runs that end here, keyed to where the token after them will be (the latest wins)
            for n in range(MIN_NGRAM, NGRAM + 1):
                if end - 1 >= n:  # a run that has a token after it already: key it to that token
                    self._seen[tuple(self.tokens[end - 1 - n : end - 1])] = end - 1

    def guess(self, most: int) -> list[int]:
        """Up to `most` tokens to follow the last one (the token about to be decoded), from where
        the run of tokens ending in it occurred before: the longest run that did."""
        if most <= 0:
            return []
        for n in range(NGRAM, MIN_NGRAM - 1, -1):
            at = self._seen.get(tuple(self.tokens[-n:])) if len(self.tokens) >= n else None
            if at is not None:
                return self.tokens[at : at + most]
        return []

    def accepted(self, guessed: int, kept: int) -> None:
        self.rate = RATE_DECAY * self.rate + (1 - RATE_DECAY) * (kept / guessed)
        self.waited = 0

    def skipped(self) -> None:
        self.waited += 1


@dataclass
class StepCost:
    """Seconds a decode step takes as a + b x tokens, fitted to recent steps (each weighing
    `DECAY` less than the next)."""

    decay: float = 0.95
    _n: float = 0.0
    _x: float = 0.0
    _y: float = 0.0
    _xx: float = 0.0
    _xy: float = 0.0

    def add(self, tokens: int, seconds: float) -> None:
        d = self.decay
        self._n, self._x, self._y = d * self._n + 1, d * self._x + tokens, d * self._y + seconds
        self._xx, self._xy = d * self._xx + tokens * tokens, d * self._xy + tokens * seconds

    def fit(self) -> tuple[float, float] | None:
        """(a, b), once steps of different sizes have been seen."""
        spread = self._n * self._xx - self._x * self._x
        if self._n < 4 or spread <= 1e-9 * max(1.0, self._n * self._xx):
            return None
        b = (self._n * self._xy - self._x * self._y) / spread
        a = (self._y - b * self._x) / self._n
        return (a, b) if a > 0 and b > 0 else None


@dataclass
class Speculation:
    """Whether, and how far, each sequence drafts this step."""

    most: int = 8  # guesses a sequence drafts at most in one step
    cost: StepCost = field(default_factory=StepCost)
    drafted: int = 0  # guesses made
    kept: int = 0  # of which the model agreed
    fitted: tuple[float, float] | None = None  # the cost's fit after the last step: once a step, not a sequence

    def guesses(self, lookup: PromptLookup, tokens_in_step: int, room: int) -> int:
        """How many tokens `lookup`'s sequence drafts at most in a step of `tokens_in_step` other
        tokens: `most` where its rate pays for the batch, a probe now and then, else none."""
        n = max(1, tokens_in_step)
        fitted = self.fitted
        if fitted is None:  # until the machine's step cost is known: only where it cannot cost much
            pays = n == 1 and lookup.rate >= PRIOR_RATE
        else:
            a, b = fitted
            pays = lookup.rate > n * b / (a + n * b)
        if pays:
            return min(self.most, room)
        if lookup.waited >= PROBE_EVERY * n:
            return min(PROBE_TOKENS, room)
        return 0

    def measured(self, tokens: int, seconds: float) -> None:
        self.cost.add(tokens, seconds)
        self.fitted = self.cost.fit()

    def counted(self, guessed: int, kept: int) -> None:
        self.drafted += guessed
        self.kept += kept
