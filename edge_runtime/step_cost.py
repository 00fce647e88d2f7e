"""What a decode step costs on this machine now: `fixed + per_token x tokens` seconds, from every step
that ran, one-token steps included.

Two things change a step's time, at two speeds. The machine's load moves fast, when another process
takes the cores or leaves them, and slows both parts alike; the split between the fixed part
(reading the weights, building the graph, the threads' barriers) and the part per token moves
slowly, with the model's position in long prompts. So the cost is kept as two numbers that move
apart: the part per token (`log_token`), which the load scales, and the fixed part counted in
tokens' worth (`log_fixed_tokens`), the split, which the load leaves alone. A Kalman filter tracks
both from the logarithm of each step's time (its noise a share of the time, whatever the size):
the part per token may drift `LOAD_DRIFT` between steps, the split `SPLIT_DRIFT`, ten times less,
and a step far off what both allow (`JUMP`) is taken as the load jumping: another process came or
went, as happens on a shared machine, and no drift of a tenth a step explains a step ten times
slower.

So a step that is slower or faster than expected moves the load first; it takes steps of
different sizes to move the split (a one-token step measures mostly the fixed part, a prompt's
chunk mostly the part per token). A slow phase raises the estimate within a step or two and a quiet
one brings it back as fast, whatever the sizes of the steps in between: no sequence of steps can
freeze it (a per-token cost that only larger steps could correct, and that keeps steps small,
would never be read again).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PRIOR_FIXED_S = 0.005
PRIOR_TOKEN_S = 0.005
PRIOR_SPREAD = 2.0  # the prior's standard deviation, in natural log units (a factor of 7)
NOISE = 0.1  # a step's time is measured within this share of itself (other work, timer, caches)
LOAD_DRIFT = 0.1  # how far the load may move between two steps, as a share
SPLIT_DRIFT = 0.01  # how far the split between the two parts may move between two steps, as a share
LEAST_FIXED_TOKENS = 1e-6  # no step is free of fixed costs: the split stays a number with a logarithm
JUMP = 3.0  # a step this many standard deviations off says the load jumped, not the split
SEPARATED = 0.25  # `fit` answers once both numbers are known within this share


@dataclass
class StepCost:
    """Seconds a decode step takes now as `fixed_s + token_s x tokens`, from the steps `add`ed."""

    log_token: float = math.log(PRIOR_TOKEN_S)
    log_fixed_tokens: float = math.log(PRIOR_FIXED_S / PRIOR_TOKEN_S)
    # the estimate's covariance: [[token, both], [both, split]]
    _ptt: float = PRIOR_SPREAD**2
    _pts: float = 0.0
    _pss: float = PRIOR_SPREAD**2
    _separated: bool = False  # whether `fit` has ever answered

    @classmethod
    def known(cls, fixed_s: float, token_s: float) -> StepCost:
        """A cost already measured to be `fixed_s + token_s x tokens`."""
        return cls(math.log(token_s), math.log(max(fixed_s / token_s, LEAST_FIXED_TOKENS)), NOISE**2, 0.0, NOISE**2)

    @property
    def token_s(self) -> float:
        return math.exp(self.log_token)

    @property
    def fixed_s(self) -> float:
        return math.exp(self.log_token + self.log_fixed_tokens)

    def seconds(self, tokens: int) -> float:
        """What a step of `tokens` is expected to take now."""
        return self.fixed_s + self.token_s * tokens

    def fit(self) -> tuple[float, float] | None:
        """(fixed_s, token_s), once steps of different sizes have told the two parts apart."""
        known = self._ptt <= SEPARATED**2 and self._pss <= SEPARATED**2
        return (self.fixed_s, self.token_s) if known else None

    def estimate(self) -> tuple[float, float] | None:
        """(fixed_s, token_s) once `fit` has ever answered: after that the current estimate, even
        where its spread has grown again. A long answer at batch 1 runs only one-token steps, which
        track the load but not the split, and a cost taken as unknown there made a draft model
        probe every `PROBE_EVERY` steps (`edge_runtime.speculation`)."""
        fit = self.fit()
        return fit if fit is not None or not self._separated else (self.fixed_s, self.token_s)

    def add(self, tokens: int, seconds: float) -> None:
        """A step of `tokens` ran to its end in `seconds`."""
        ptt, pts, pss = self._ptt + LOAD_DRIFT**2, self._pts, self._pss + SPLIT_DRIFT**2
        fixed_tokens = math.exp(self.log_fixed_tokens)
        # log(seconds) = log_token + log(fixed_tokens + tokens): its slope in each number
        h_split = fixed_tokens / (fixed_tokens + tokens)
        error = math.log(max(seconds, 1e-9)) - self.log_token - math.log(fixed_tokens + tokens)
        if error * error > JUMP**2 * (ptt + 2 * pts * h_split + pss * h_split * h_split + NOISE**2):
            ptt += error * error  # a step this far off: the load jumped (another process came or went)
        pt, ps = ptt + pts * h_split, pts + pss * h_split  # P h
        s = pt + ps * h_split + NOISE**2
        kt, ks = pt / s, ps / s
        self.log_token += kt * error
        self.log_fixed_tokens += ks * error
        self._ptt, self._pts, self._pss = ptt - kt * pt, pts - kt * ps, pss - ks * ps
        self._separated = self._separated or self.fit() is not None
