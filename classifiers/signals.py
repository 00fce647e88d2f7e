"""The facts about one request that routing decides on, computed once per request."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Signals:
    prompt_tokens: int
    max_tokens: int | None
    text_only: bool
    metadata: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate_tokens(text: str) -> int:
    """Used only when no tokenizer is at hand: about four characters a token for English."""
    return max(1, (len(text) + 3) // 4)


def compute_signals(messages: list[dict[str, str]], *, max_tokens: int | None, text_only: bool,
                    metadata: dict[str, str], count_tokens: Callable[[list[dict[str, str]]], int] | None = None,
                    ) -> Signals:
    """`messages` are role + text (content parts already flattened); `count_tokens` is the edge
    model's tokenizer, chat template included, when one is loaded."""
    if count_tokens is not None:
        prompt_tokens = count_tokens(messages)
    else:
        prompt_tokens = sum(estimate_tokens(m["content"]) + 4 for m in messages)
    return Signals(prompt_tokens=prompt_tokens, max_tokens=max_tokens, text_only=text_only, metadata=metadata)
