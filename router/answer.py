"""What a model tier gives back: a whole answer, or a stream of OpenAI chunks.

Both are already in the OpenAI Chat Completions wire shape, so the gateway sends them on as they
are; `usage` is what the ledger and the `include_usage` chunk are built from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # False when the provider's counts were missing or invalid: the ledger then counts the tokens
    # from what was delivered (router.account.RequestAccount.settled).
    measured: bool = True

    def as_openai(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass
class Answer:
    body: dict[str, Any]  # a chat.completion object
    usage: Usage
    confidence: float | None = None  # edge answers measured for a cascade


def embeddings_body(vectors: list[list[float]], model: str, prompt_tokens: int) -> dict[str, Any]:
    """An OpenAI embeddings list."""
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }


class ChunkStream(Protocol):
    """chat.completion.chunk objects, without the usage-only chunk (the gateway adds that one)."""

    @property
    def usage(self) -> Usage:
        """What was generated so far; complete once the stream has ended."""

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]: ...

    async def aclose(self) -> None: ...
