"""Per-app rate limits: requests and tokens per minute, in fixed one-minute windows.

Tokens are counted at admission as the prompt's tokens plus the requested `max_tokens` (what
OpenAI counts too), so a request is refused before it spends anything.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_messages: int | None = None
    max_tokens: int | None = None

    def check_request(self, messages: int, max_tokens: int | None) -> int | None:
        """Raise for a request over the app's caps; return the max_tokens to use."""
        from router.errors import InvalidRequest

        if self.max_messages is not None and messages > self.max_messages:
            raise InvalidRequest(
                f"This app may send at most {self.max_messages} messages in a request; this one has {messages}.",
                param="messages",
                code="too_many_messages",
            )
        if self.max_tokens is not None and max_tokens is not None and max_tokens > self.max_tokens:
            raise InvalidRequest(
                f"This app may ask for at most max_tokens={self.max_tokens}; this request asks for {max_tokens}.",
                param="max_tokens",
                code="max_tokens_too_large",
            )
        return max_tokens if max_tokens is not None else self.max_tokens


class RateWindows:
    """In-process windows (the memory and SQLite stores); the Redis store keeps them in Redis."""

    def __init__(self) -> None:
        self._used: dict[tuple[str, int], list[int]] = {}
        self._lock = threading.Lock()

    def take(self, app: str, tokens: int, limits: Limits, now: float | None = None) -> float | None:
        """Count one request of `tokens` if both limits allow it; else the seconds until they do."""
        now = time.time() if now is None else now
        window = int(now // 60)
        with self._lock:
            used = self._used.setdefault((app, window), [0, 0])
            if (limits.requests_per_minute is not None and used[0] + 1 > limits.requests_per_minute) or (
                limits.tokens_per_minute is not None and used[1] + tokens > limits.tokens_per_minute
            ):
                return 60 - now % 60
            used[0] += 1
            used[1] += tokens
            for key in [k for k in self._used if k[1] < window]:
                del self._used[key]
        return None
