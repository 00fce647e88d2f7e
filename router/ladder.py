"""A ladder's pieces that need no router: how a step between two models that are not an edge and
a cloud one is scored before it is fitted, the order in which a ladder's models are fallbacks, and
the name under which a step's fitted router is installed."""

from __future__ import annotations

from classifiers.signals import Signals

# The prompt length at which `length_score` is one half: a few paragraphs (tokens of the prompt).
LENGTH_MIDPOINT = 400


def length_score(prompt_tokens: int) -> float:
    """A prompt's length as a step's prior score: 0.5 at `LENGTH_MIDPOINT` tokens, rising with
    length. On held-out sets whose label is a mid-size model against a frontier one (unseen MMLU
    subjects and GSM8K, Mixtral against GPT-4), length ranked above the bundled text prior."""
    return prompt_tokens / (prompt_tokens + LENGTH_MIDPOINT)


def step_key(app: str, lower: str, upper: str) -> str:
    """Where the fitted router of `app`'s step from `lower` to `upper` is installed
    (`router.installed`, whose versions are kept per key)."""
    return f"{app}/{lower}>{upper}"


def fallbacks(ladder: tuple[str, ...], top: str, signals: Signals, exclude: str | None = None) -> tuple[str, ...]:
    """The ladder's other models in the order they are tried if `top` fails: up first (an answer
    at least as good), then down; down first for a request with private data in it, which then
    reaches fewer providers."""
    at = ladder.index(top)
    up, down = ladder[at + 1 :], ladder[:at][::-1]
    order = down + up if signals.privacy else up + down
    return tuple(t for t in order if t != exclude)


def adjacent(ladder: tuple[str, ...], served: str) -> str | None:
    """The model a shadow comparison sets beside `served`: the next one up, or at the top the one
    below (None: `served` is not on the ladder)."""
    if served not in ladder:
        return None
    at = ladder.index(served)
    return ladder[at + 1] if at + 1 < len(ladder) else ladder[at - 1]
