"""What the edge runtime raises when it cannot serve a request."""

from __future__ import annotations


class EdgeError(Exception):
    """The local model could not serve this request."""


class PromptTooLong(EdgeError):
    def __init__(self, needed: int, n_ctx: int, model: str) -> None:
        super().__init__(
            f"the prompt and max_tokens need {needed} tokens but the edge model {model!r} has a context of {n_ctx}"
        )
        self.needed = needed
        self.n_ctx = n_ctx
