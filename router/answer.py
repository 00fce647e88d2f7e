"""What a model tier gives back: a whole answer, or a stream of OpenAI chunks.

Both are already in the OpenAI Chat Completions wire shape, so the gateway sends them on as they
are; `usage` is what the ledger and the `include_usage` chunk are built from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from router.native import NativeAnswer


@dataclass
class Usage:
    """Tokens as a provider counted them. `prompt_tokens` is the whole prompt, whatever the
    provider's cache did with it; the cache's share of it is apart, as each is priced apart."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # False when the provider's counts were missing or invalid: the ledger then counts the tokens
    # from what was delivered (router.account.RequestAccount.settled).
    measured: bool = True
    cache_read_tokens: int = 0  # of the prompt, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of the prompt, written to it (Anthropic's: priced above input)
    cache_write_1h_tokens: int = 0  # of those written, kept an hour rather than five minutes

    @property
    def uncached_tokens(self) -> int:
        """The prompt's tokens that neither came from the cache nor went into it."""
        return max(0, self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens)

    def as_openai(self) -> dict[str, Any]:
        """Chat Completions' usage: the cache's reads as OpenAI reports them, and its writes as
        LiteLLM does (`cache_creation_input_tokens`), where there were any."""
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cache_read_tokens or self.cache_write_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cache_read_tokens}
        if self.cache_write_tokens:
            usage["cache_creation_input_tokens"] = self.cache_write_tokens
        return usage

    def as_anthropic(self) -> dict[str, Any]:
        """Messages' usage: `input_tokens` is what the cache did not hold, beside its reads and writes."""
        usage: dict[str, Any] = {
            "input_tokens": self.uncached_tokens,
            "output_tokens": self.completion_tokens,
            "cache_creation_input_tokens": self.cache_write_tokens,
            "cache_read_input_tokens": self.cache_read_tokens,
        }
        if self.cache_write_tokens:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": self.cache_write_tokens - self.cache_write_1h_tokens,
                "ephemeral_1h_input_tokens": self.cache_write_1h_tokens,
            }
        return usage

    def as_responses(self, reasoning_tokens: int = 0) -> dict[str, Any]:
        """Responses' usage: the whole input, its cached share in `input_tokens_details`."""
        return {
            "input_tokens": self.prompt_tokens,
            "input_tokens_details": {"cached_tokens": self.cache_read_tokens},
            "output_tokens": self.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass
class Answer:
    body: dict[str, Any]  # a chat.completion object: the gateway's reading of the answer
    usage: Usage
    confidence: float | None = None  # edge answers measured for a cascade
    native: NativeAnswer | None = None  # the answer in the client's API, where its provider wrote it so


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
