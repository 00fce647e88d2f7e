"""What a generation is asked to do (`Sampling`), what it reports of each token (`TokenLogprob`),
and why it ended (`FinishReason`): plain data, read by the scheduler, the generation and the
edge tier alike."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class TokenLogprob:
    token: int
    logprob: float
    top: list[tuple[int, float]]  # (token, logprob) of the likeliest tokens, likeliest first


class FinishReason(StrEnum):
    """Why a generation ended. The first two are Chat Completions' own words, which an answer
    carries as they are; the others end a generation that answers no one."""

    STOP = "stop"  # an end-of-generation token, or one of the request's stop sequences
    LENGTH = "length"  # max_tokens reached
    CANCELLED = "cancelled"  # its client left, or it was cancelled before it ended
    ROUTED = "routed"  # its gate did not keep it: read, scored, and sent elsewhere
    ERROR = "error"  # the runtime failed it (the error is what its reader gets)


@dataclass(frozen=True)
class Sampling:
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    confidence: bool = False  # also measure the model's mean token probability (for cascades)
    grammar: str | None = None  # GBNF the answer must follow (edge_runtime.grammar)
    logprobs: int | None = None  # report each token's log-probability and this many alternatives
    frequency_penalty: float = 0.0  # OpenAI's: minus this times how often a token was written so far
    presence_penalty: float = 0.0  # minus this once a token was written at all
    logit_bias: tuple[tuple[int, float], ...] = ()  # (token id of this model, added to its logit)
    # Batch work: it runs only in steps no interactive request needs (edge_runtime.batch)
    background: bool = False
