"""How much of each waiting prompt one decode step reads: a short request beside a long prompt
waits at most one small step.

A step cannot be interrupted once `llama_decode` runs, so a request that arrives while a long
prompt is being read waits for the chunk in flight, then for its own step. Three rules keep both
small:

- A short prompt (`SHORT_PROMPT` tokens or fewer) is read whole, and the step that reads it reads
  no long prompt beside it: its first token comes after its own prefill and nothing else. So that a
  stream of short requests cannot starve a long prompt, a long prompt held back one step is read
  the next, short prompt or not.
- A long prompt's chunk is sized in time, not tokens: `HOL_SHARE` of what a short request's own
  prefill step takes (measured as steps run), at most `STEP_TARGET_S`. A short request arriving
  mid-chunk waits at most that long. On a fast machine a short prefill takes 10-20 ms and the chunk
  a few ms; on a slow one both grow together.
- Every generating sequence advances one token every step; a long prompt's chunk beside them is
  the same small share, so their streams slow by at most that much.

A long prompt read in small chunks takes longer than read in one (`edgeway bench edge` prints both):
per-step costs are paid more often. That is the price of the short requests' latency; its chunk
never falls below `MIN_CHUNK` tokens, so it always advances.
"""

from __future__ import annotations

from dataclasses import dataclass

SHORT_PROMPT = 64  # a prompt this short is read in one step
STEP_TARGET_S = 0.05  # the most a long prompt's chunk may add to a step, on any machine
HOL_SHARE = 0.25  # a long prompt's chunk, as a share of a short request's own prefill step
TYPICAL_SHORT = 32  # tokens of a short chat prompt, for the estimate before one is measured
MIN_CHUNK = 1  # a long prompt advances every step it is not held back


@dataclass
class Pacer:
    """The step's reads, from the step times it is told (`measured`)."""

    n_batch: int
    token_s: float = 0.005  # seconds one token adds to a step
    short_step_s: float | None = None  # seconds a step reading only short prompts takes
    long_held: bool = False  # whether the last step held the long prompts back

    def reads(self, decoding: int, left: list[int]) -> list[int]:
        """Tokens to read this step of each waiting prompt, given with the tokens `left` to read
        of each, shortest first, beside the `decoding` tokens of generating sequences already in
        the step (one each, and any speculative guesses)."""
        room = self.n_batch - decoding
        shorts = sum(1 for n in left if n <= SHORT_PROMPT)
        hold = shorts > 0 and not self.long_held
        self.long_held = hold and any(n > SHORT_PROMPT for n in left)
        budget = 0 if hold else self.chunk()
        takes = []
        for n in left:
            take = max(0, min(n if n <= SHORT_PROMPT else budget, room))
            if n > SHORT_PROMPT:
                budget -= take
            room -= take
            takes.append(take)
        return takes

    def chunk(self) -> int:
        """Tokens of long prompts one step reads: `HOL_SHARE` of a short request's prefill step."""
        short_s = self.short_step_s if self.short_step_s is not None else TYPICAL_SHORT * self.token_s
        return max(MIN_CHUNK, min(self.n_batch, int(min(STEP_TARGET_S, HOL_SHARE * short_s) / self.token_s)))

    def measured(self, tokens: int, seconds: float, short_only: bool) -> None:
        """A step of `tokens` took `seconds`; `short_only`: it read short prompts and no long one."""
        if tokens > 1:  # a one-token step mostly measures fixed costs
            self.token_s = 0.8 * self.token_s + 0.2 * seconds / tokens
        if short_only:
            self.short_step_s = seconds if self.short_step_s is None else 0.8 * self.short_step_s + 0.2 * seconds
