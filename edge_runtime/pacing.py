"""How much of each waiting prompt one decode step reads: a short request beside a long prompt
waits for its own step, a long prompt read alone is read in whole batches, and one read beside
generating sequences in chunks sized in time.

Three rules:

- A short prompt (`SHORT_PROMPT` tokens or fewer) is read whole, and the step that reads it reads
  no long prompt beside it: its first token comes after its own prefill and nothing else. So that a
  stream of short requests cannot starve a long prompt, a long prompt held back one step is read
  the next, short prompt or not.
- A long prompt with nothing generating beside it is read `n_batch` tokens a step, llama.cpp's own
  batch: nothing waits on the step, and fewer, larger steps read a prompt fastest (per-step costs,
  and attention done in larger tiles). A short request that arrives meanwhile cuts the step
  (`edge_runtime.interrupt`): it waits a graph node, not the batch.
- Beside generating sequences (each of whose tokens waits for the whole step), a long prompt's
  chunk is sized in time: `BESIDE_S` of work by the step cost measured now
  (`edge_runtime.step_cost`), and never so small that the prompt's reading takes more than
  `READ_FACTOR` times its reading in whole batches: with a step's fixed cost `a` and `b` a token,
  chunks of `c` read a token in `a / c + b`, whole batches in `a / n_batch + b`. Nor below
  `MIN_CHUNK`, whatever the estimate, since a step's fixed cost is never nothing.

A cut step's work is lost, so that a stream of short requests cannot starve the long prompt, cuts
stop once the long prompts have gone `MAX_HELD_S` without a step of their own; the next one runs to
its end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from edge_runtime.step_cost import StepCost

SHORT_PROMPT = 64  # a prompt this short is read in one step
BESIDE_S = 0.05  # the most a long prompt's chunk adds to the step of sequences generating beside it
READ_FACTOR = 1.25  # a long prompt read beside others takes at most this times its reading in whole batches
MIN_CHUNK = 8  # the least chunk of a long prompt in a step that reads it
MAX_HELD_S = 1.0  # how long cuts may keep a long prompt from finishing a step


@dataclass
class Pacer:
    """The step's reads, from the step times it is told (`measured`)."""

    n_batch: int
    cost: StepCost = field(default_factory=StepCost)  # what a step costs now, from every step measured
    long_held: bool = False  # whether the last step held the long prompts back
    cut_since: float | None = None  # when a cut first kept the long prompts from a step of their own

    def reads(self, decoding: int, left: list[int]) -> list[int]:
        """Tokens to read this step of each waiting prompt, given with the tokens `left` to read
        of each, shortest first, beside the `decoding` tokens of generating sequences already in
        the step (one each, and any speculative guesses)."""
        room = self.n_batch - decoding
        shorts = sum(1 for n in left if n <= SHORT_PROMPT)
        hold = shorts > 0 and not self.long_held
        self.long_held = hold and any(n > SHORT_PROMPT for n in left)
        budget = 0 if hold else self.chunk(beside=decoding > 0)
        takes = []
        for n in left:
            take = max(0, min(n, room) if n <= SHORT_PROMPT else min(n, budget, room))
            if n > SHORT_PROMPT:
                budget -= take
            room -= take
            takes.append(take)
        return takes

    def chunk(self, beside: bool) -> int:
        """Tokens of long prompts one step reads, `beside` sequences generating or not."""
        if not beside:
            return self.n_batch
        return min(self.n_batch, max(self.least_chunk(), int(BESIDE_S / self.cost.token_s)))

    def least_chunk(self) -> int:
        """The smallest chunk that reads a long prompt within `READ_FACTOR` of its time in whole
        batches, by the step cost measured now (and `MIN_CHUNK` at the least)."""
        fixed, per_token = self.cost.fixed_s, self.cost.token_s
        slack = READ_FACTOR * (fixed / self.n_batch + per_token) - per_token  # > 0: READ_FACTOR > 1
        return min(self.n_batch, max(MIN_CHUNK, math.ceil(fixed / slack)))

    def measured(self, tokens: int, seconds: float, long_read: bool) -> None:
        """A step of `tokens` ran to its end in `seconds`; `long_read`: it read a long prompt."""
        self.cost.add(tokens, seconds)
        if long_read:
            self.cut_since = None

    def may_cut(self, now: float) -> bool:
        """Whether a step reading a long prompt may be cut short for a short request."""
        return self.cut_since is None or now - self.cut_since < MAX_HELD_S

    def was_cut(self, now: float) -> None:
        if self.cut_since is None:
            self.cut_since = now
