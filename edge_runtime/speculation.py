"""Speculative decoding, decided step by step so that it never costs throughput.

An answer grounded in its input (extraction, quoting, editing, summarizing a supplied text) repeats
spans of the prompt. Where the last tokens written occurred before, the tokens that followed them
there are a free guess at what comes next (`PromptLookup`): no draft model. The guesses go into the
same `llama_decode` as every other sequence's token, each with its logits; the longest run of them
that the model's own greedy choice agrees with is kept, plus the model's next token, and the cache
cells of the rest are dropped. Greedy output is what it would be without speculation (each kept
token is the argmax the model computed at its position); sampled sequences never draft. With
`mode: draft` the guesses come from a small model instead (`edge_runtime.drafting`), verified the
same way.

Drafting costs every sequence in the step the time of the extra tokens, and pays only in the tokens
accepted. `Speculation` keeps a linear model of the step's time (a fixed part and a part per token,
from the steps it is told of) and each sequence's chance that a guess is right given that the ones
before it were (`rate`), and drafts as far as each further guess pays for the whole batch: with `n`
tokens in the step, a fixed cost `a` and `b` a token, the `k`-th guess is kept with chance r^k and
pays when r^k > n*b / (a + n*b). Where a token costs nearly a step (a small model on a few cores),
a guess pays only when it is nearly sure: a copied paragraph drafts eight, a list rewritten in
another shape one or two, open-ended text none. A draft model's guesses are not free: with `d`
seconds of the draft's work a guess (its decoding and its reading of the prompt, measured), they
pay when r^k > n*(b + d) / (a + n*b), so a draft too slow or too often wrong is not run.

Prompt lookup learns its rate without drafting: where a sequence does not draft, the guess it
would have made is checked against the tokens the model then writes (`PromptLookup.watch`), which
costs a dictionary read. So a sequence whose text turns to copying starts drafting within a few
tokens, and open-ended text never pays for a guess to find out. A draft model's guesses cost its
work, so a sequence that does not draft tries a short draft now and then instead (a probe). A
probe costs more than its two guesses: the draft first reads what the sequence wrote since the
draft last followed it, so the later in an answer, the dearer. Probes are paid from a budget that
each step adds `PROBE_SHARE` of its time to, each probe taking what a guess has cost so far
(reading included): however far apart they fall, they take that share of the time and no more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from edge_runtime.step_cost import StepCost

NGRAM = 3  # the longest run of last tokens looked up; shorter ones are tried after it
MIN_NGRAM = 2  # a single repeated token ("the", ",") predicts little
PRIOR_RATE = 0.5  # a sequence's chance that a guess is right before anything is known of its text
RATE_DECAY = 0.85  # weight of the past in that chance, at each guess checked
# With a draft model, a sequence that does not draft tries a short draft after this many steps times
# the tokens in the step: how its rate is learnt, and noticed to change, at a cost that stays small.
PROBE_EVERY = 16
PROBE_TOKENS = 2
# A draft model's probes cost its work: they take no more than this share of the steps' time
# (`Speculation.stepped`), saved up for at most `MOST_SAVED_S` (a quiet spell is no licence for a
# run of probes once it ends).
PROBE_SHARE = 0.01
MOST_SAVED_S = 0.5


class SpeculativeMode(StrEnum):
    PROMPT_LOOKUP = "prompt_lookup"
    DRAFT = "draft"  # a small GGUF with the same vocabulary proposes (`edge_runtime.drafting`)


@dataclass
class PromptLookup:
    """One sequence's tokens (prompt, then answer) and where each run of `MIN_NGRAM`..`NGRAM`
    tokens last occurred, kept as tokens are added: a lookup costs a dictionary read, not a search
    of the prompt."""

    tokens: list[int] = field(default_factory=list)
    _seen: dict[tuple[int, ...], int] = field(default_factory=dict)  # run -> where its next token is
    rate: float = PRIOR_RATE  # the chance a guess is right when those before it were, recent guesses weighing most
    waited: int = 0  # steps since it last drafted
    indexed: bool = True  # whether runs are kept for `guess`: not where a draft model guesses
    _watched: list[int] = field(default_factory=list)  # a guess not drafted, checked against what is written

    @classmethod
    def of(cls, prompt: list[int], rate: float = PRIOR_RATE, indexed: bool = True) -> PromptLookup:
        lookup = cls(rate=rate, indexed=indexed)
        lookup.extend(prompt)
        return lookup

    def extend(self, tokens: list[int]) -> None:
        self._check_watched(tokens)
        if not self.indexed:
            self.tokens += tokens
            return
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

    def watch(self, most: int) -> None:
        """Note the guess it would draft now, to check against the tokens the model writes next
        (`extend`): the rate learnt at no cost. One guess is watched at a time."""
        if not self._watched:
            self._watched = self.guess(most)

    def accepted(self, guessed: int, kept: int) -> None:
        """`kept` of `guessed` drafted tokens were what the model wrote."""
        self._learn(kept, missed=kept < guessed)
        self.waited = 0
        self._watched = []  # what it drafted was checked instead

    def skipped(self) -> None:
        self.waited += 1

    def _check_watched(self, tokens: list[int]) -> None:
        watched = self._watched
        if not watched:
            return
        right = 0
        for token in tokens:
            if right == len(watched):
                break
            if token != watched[right]:
                self._learn(right, missed=True)
                self._watched = []
                return
            right += 1
        self._learn(right, missed=False)
        self._watched = watched[right:]

    def _learn(self, right: int, missed: bool) -> None:
        for _ in range(right):
            self.rate = RATE_DECAY * self.rate + (1 - RATE_DECAY)
        if missed:
            self.rate *= RATE_DECAY


@dataclass
class GuessCost:
    """Seconds of a draft model's work per guess it made, recent work weighing most. Reading a
    prompt the draft has not seen counts too, shared by the guesses made once it has."""

    decay: float = 0.9
    _seconds: float = 0.0
    _guesses: float = 0.0
    _pending: float = 0.0  # work that made no guess yet (reading a prompt)

    def add(self, guesses: int, seconds: float) -> None:
        if guesses == 0:  # charged to the guesses that follow
            self._pending += seconds
            return
        self._seconds = self.decay * self._seconds + seconds + self._pending
        self._guesses = self.decay * self._guesses + guesses
        self._pending = 0.0

    @property
    def per_guess(self) -> float:
        return self._seconds / self._guesses if self._guesses else 0.0


@dataclass
class Speculation:
    """Whether, and how far, each sequence drafts this step."""

    most: int = 8  # guesses a sequence drafts at most in one step
    # the step's cost, fitted from every step the scheduler measures (the pacer's too)
    cost: StepCost = field(default_factory=StepCost)
    drafted: int = 0  # guesses made
    kept: int = 0  # of which the model agreed
    guess_cost: GuessCost | None = None  # a draft model's work per guess; None: guesses are free (prompt lookup)
    recent_rate: float = PRIOR_RATE  # accepted guesses / guesses over every sequence, recent ones weighing most
    probe_budget_s: float = 0.0  # seconds of the draft's work that probes may still take
    # this step's guesses asked of a draft model, those of them probes', and what the probes were charged
    _asked: int = 0
    _probing: int = 0
    _charged_s: float = 0.0

    @property
    def fitted(self) -> tuple[float, float] | None:
        return self.cost.estimate()

    def stepped(self, tokens_in_step: int) -> None:
        """A step of the served model is about to run: `PROBE_SHARE` of its expected time goes to
        the probes' budget."""
        if self.guess_cost is not None:
            saved = self.probe_budget_s + PROBE_SHARE * self.cost.seconds(tokens_in_step)
            self.probe_budget_s = min(saved, MOST_SAVED_S)

    def guesses(self, lookup: PromptLookup, tokens_in_step: int, room: int) -> int:
        """How many tokens `lookup`'s sequence drafts at most in a step of `tokens_in_step` other
        tokens: as many as each pays for the batch (the k-th is right with chance rate^k), a draft
        model's probe now and then, else none."""
        n = max(1, tokens_in_step)
        fitted = self.fitted
        if fitted is None:  # until the machine's step cost is known: only where it cannot cost much
            bar = PRIOR_RATE if n == 1 else 1.0
        else:
            a, b = fitted
            d = self.guess_cost.per_guess if self.guess_cost is not None else 0.0
            bar = n * (b + d) / (a + n * b)
        most, chance = min(self.most, room), lookup.rate
        paying = 0
        while paying < most and chance > bar:
            paying += 1
            chance *= lookup.rate
        if self.guess_cost is None:
            return paying
        if not paying and lookup.waited >= PROBE_EVERY * n and self.probe_budget_s > 0:
            paying = min(PROBE_TOKENS, room)
            # charged what a guess has cost so far until its own work is measured (`drafting_took`)
            charged = paying * self.guess_cost.per_guess
            self.probe_budget_s -= charged
            self._charged_s += charged
            self._probing += paying
        self._asked += paying
        return paying

    def prior(self) -> float:
        """The acceptance rate a new sequence starts from. A draft model's is its recent rate over
        every sequence: one that is mostly wrong is not run on each new request to learn that
        again. Prompt lookup's depends on the text (copied or not), so a new sequence starts from
        `PRIOR_RATE`."""
        return self.recent_rate if self.guess_cost is not None else PRIOR_RATE

    def drafting_took(self, guesses: int, seconds: float) -> None:
        """A draft model's work this step, and the guesses it made. The probes' share of it (by
        the guesses asked) replaces what they were charged: a probe that first read a long answer
        leaves the budget in debt, and the next waits until the steps have paid it."""
        if self.guess_cost is None:
            return
        self.guess_cost.add(guesses, seconds)
        if self._probing:
            self.probe_budget_s += self._charged_s - seconds * self._probing / self._asked
        self._asked = self._probing = 0
        self._charged_s = 0.0

    def counted(self, guessed: int, kept: int) -> None:
        self.drafted += guessed
        self.kept += kept
        for _ in range(kept):
            self.recent_rate = RATE_DECAY * self.recent_rate + (1 - RATE_DECAY)
        if kept < guessed:
            self.recent_rate *= RATE_DECAY
