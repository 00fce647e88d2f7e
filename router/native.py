"""A request and its answer in the client's own API, beside the Chat Completions reading of them.

Every API is read as Chat Completions for what routing needs (`router.request.ChatRequest`: the
messages a model reads, max_tokens, what the answer must honor), and the body the client sent is
kept with it (`Native`): a provider that speaks the client's API gets that body, with only what
the gateway must change changed (the model, a capped max_tokens, masked values), so that what Chat
Completions cannot say (`cache_control`, `thinking` and its signatures, reasoning items, documents,
`prompt_cache_key`) reaches it. A provider of another API, and the edge, get the translation.

The answer comes back the same way: a provider that answered in the client's API gives the body or
the events it wrote (`NativeAnswer`, `NativeChunk`), which the client gets as they are (restored,
where values were masked), and a Chat Completions reading of them that the gateway's own readers
use (the ledger's delivered text, the response cache, shadow comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class Api(StrEnum):
    """The wire APIs a client speaks and a provider may take."""

    CHAT_COMPLETIONS = "chat_completions"  # OpenAI's /v1/chat/completions
    RESPONSES = "responses"  # OpenAI's /v1/responses
    MESSAGES = "messages"  # Anthropic's /v1/messages


Event = tuple[str, dict[str, Any]]  # a server-sent event: its name and its data


class Codec(Protocol):
    """What the router needs of an API's request body: its Chat Completions reading (for the edge,
    a provider of another API and the signals), what that reading cannot carry, and its answer
    limit set (an app's cap applies to the body a provider receives as to the translation)."""

    @property
    def api(self) -> Api: ...

    def chat_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Chat Completions body that asks what `body` asks (never raises on a valid body)."""

    def capped(self, body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        """`body` with its answer limit set to `max_tokens` (a new body)."""

    def native_only(self, body: dict[str, Any]) -> str | None:
        """What of `body` its Chat Completions reading leaves out and its answer depends on (a
        hosted tool, an item of a kind Chat Completions has not), named for the client; None if
        the reading carries it all. Such a request goes only to a provider of its own API."""


def block_type(value: Any) -> str | None:
    """The `type` of a block, part, item or tool of a body, where it is a string (anything else is
    no type any API has)."""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


# Client headers a provider of the request's API reads, passed on as sent: which API version and
# which beta features the body is written for. Every other header stays at the gateway.
FORWARDED_HEADERS = {
    Api.MESSAGES: ("anthropic-version", "anthropic-beta"),
    Api.RESPONSES: ("openai-beta",),
    Api.CHAT_COMPLETIONS: ("openai-beta",),
}


@dataclass(frozen=True)
class Native:
    """A request's body as its client sent it, in its own API."""

    codec: Codec
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)  # of FORWARDED_HEADERS, as the client sent them
    # the configured model that signed each thinking block the body carries, by its seal, where the
    # gateway saw it signed (`router.thinking`): a model never reads a block another one signed
    signers: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> Api:
        return self.codec.api


@dataclass
class NativeAnswer:
    """A whole answer in the client's API, as its provider wrote it (a Messages `message`, a
    Responses `response`)."""

    api: Api
    body: dict[str, Any]


class NativeChunk(dict[str, Any]):
    """A chat.completion.chunk (what the gateway's readers take) that stands for these events of
    the client's API, which the client gets as they are."""

    def __init__(self, api: Api, events: list[Event], chat: dict[str, Any]) -> None:
        super().__init__(chat)
        self.api = api
        self.events = events
