"""How much of each waiting prompt one decode step reads: a short request beside a long prompt
waits for its own step, and a long prompt alone is read in steps large enough to be read fast.

Three rules:

- A short prompt (`SHORT_PROMPT` tokens or fewer) is read whole, and the step that reads it reads
  no long prompt beside it: its first token comes after its own prefill and nothing else. So that a
  stream of short requests cannot starve a long prompt, a long prompt held back one step is read
  the next, short prompt or not.
- A long prompt's chunk is sized in time, not tokens: `BESIDE_S` of work when sequences generate
  beside it (each of their tokens waits for the whole step), `ALONE_S` when none does. Larger chunks
  read a prompt faster (on the 2-core reference machine, 4,400 tokens in 30 s in chunks of 512
  against 77 s in chunks of 16: per-step costs, and attention done in larger tiles).
- A step that reads a long prompt may be cut short (`edge_runtime.interrupt`) when a short request
  arrives: it waits a graph node, not the chunk. The chunk's work is lost, so that a stream of short
  requests cannot starve the long prompt, cuts stop once the long prompts have gone `MAX_HELD_S`
  without a step of their own; the next one runs to its end.
"""

from __future__ import annotations

from dataclasses import dataclass

SHORT_PROMPT = 64  # a prompt this short is read in one step
BESIDE_S = 0.05  # the most a long prompt's chunk adds to the step of sequences generating beside it
ALONE_S = 0.25  # a long prompt's chunk when nothing generates beside it
MAX_HELD_S = 1.0  # how long cuts may keep a long prompt from finishing a step
MIN_CHUNK = 1  # a long prompt advances every step it is not held back


@dataclass
class Pacer:
    """The step's reads, from the step times it is told (`measured`)."""

    n_batch: int
    token_s: float = 0.005  # seconds one token adds to a step
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
            take = max(0, min(n if n <= SHORT_PROMPT else budget, room))
            if n > SHORT_PROMPT:
                budget -= take
            room -= take
            takes.append(take)
        return takes

    def chunk(self, beside: bool) -> int:
        """Tokens of long prompts one step reads, `beside` sequences generating or not."""
        target = BESIDE_S if beside else ALONE_S
        return max(MIN_CHUNK, min(self.n_batch, int(target / self.token_s)))

    def measured(self, tokens: int, seconds: float, long_read: bool) -> None:
        """A step of `tokens` ran to its end in `seconds`; `long_read`: it read a long prompt."""
        if tokens > 1:  # a one-token step mostly measures fixed costs
            self.token_s = 0.8 * self.token_s + 0.2 * seconds / tokens
        if long_read:
            self.cut_since = None

    def may_cut(self, now: float) -> bool:
        """Whether a step reading a long prompt may be cut short for a short request."""
        return self.cut_since is None or now - self.cut_since < MAX_HELD_S

    def was_cut(self, now: float) -> None:
        if self.cut_since is None:
            self.cut_since = now
