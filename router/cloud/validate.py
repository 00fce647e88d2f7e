"""Provider answers, checked like client input: the shape edgeway relies on, or a 502 that names
the provider and what was wrong.

Usage that is missing, negative, fractional, a string or a boolean is not charged as sent: the
answer is kept, and its usage is marked unmeasured so that the ledger counts the tokens from what
was delivered instead (`Usage.measured`)."""

from __future__ import annotations

from typing import Any

from router.answer import Usage
from router.errors import UpstreamError


def unmeasured() -> Usage:
    return Usage(0, 0, measured=False)


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def usage_of(value: object) -> Usage | None:
    """The provider's usage if it is whole non-negative token counts; None otherwise. The prompt's
    cached share as OpenAI reports it (`prompt_tokens_details.cached_tokens`), and a cache's writes
    as LiteLLM reports an Anthropic model's (`cache_creation_input_tokens`, within the prompt)."""
    if not isinstance(value, dict):
        return None
    prompt, completion = _count(value.get("prompt_tokens")), _count(value.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    details = value.get("prompt_tokens_details")
    read = _within(details.get("cached_tokens") if isinstance(details, dict) else None, prompt)
    written = _within(value.get("cache_creation_input_tokens"), prompt - read)
    return Usage(prompt, completion, cache_read_tokens=read, cache_write_tokens=written)


def _within(value: object, most: int) -> int:
    """A count of the prompt's tokens, if it is one (absent, invalid or more than the prompt: 0)."""
    count = _count(value)
    return count if count is not None and count <= most else 0


def anthropic_usage(value: object) -> Usage | None:
    """Usage as the Messages API counts it: `input_tokens` beside the cache's reads and writes,
    which together are the prompt."""
    if not isinstance(value, dict):
        return None
    uncached, completion = _count(value.get("input_tokens")), _count(value.get("output_tokens"))
    if uncached is None or completion is None:
        return None
    read = _count(value.get("cache_read_input_tokens") or 0) or 0
    written = _count(value.get("cache_creation_input_tokens") or 0) or 0
    creation = value.get("cache_creation")
    hour = _count(creation.get("ephemeral_1h_input_tokens") or 0) if isinstance(creation, dict) else 0
    return Usage(
        uncached + read + written,
        completion,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=min(hour or 0, written),
    )


def responses_usage(value: object) -> Usage | None:
    """Usage as the Responses API counts it: the whole input, its cached share in
    `input_tokens_details`; the output, reasoning included."""
    if not isinstance(value, dict):
        return None
    prompt, completion = _count(value.get("input_tokens")), _count(value.get("output_tokens"))
    if prompt is None or completion is None:
        return None
    details = value.get("input_tokens_details")
    read = _within(details.get("cached_tokens") if isinstance(details, dict) else None, prompt)
    return Usage(prompt, completion, cache_read_tokens=read)


def _message_problem(message: object) -> str | None:
    if not isinstance(message, dict):
        return "a choice has no message object"
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return "a message's content is neither text nor null"
    return _calls_problem(message.get("tool_calls"))


def _calls_problem(calls: object) -> str | None:
    if calls is None:
        return None
    if not isinstance(calls, list):
        return "tool_calls is not a list"
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("arguments", ""), str):
            return "a tool call has no function with text arguments"
    return None


def chat_completion(body: object, provider: str) -> tuple[dict[str, Any], Usage]:
    """A whole answer's body and usage; UpstreamError if it is not a chat.completion object."""
    if not isinstance(body, dict):
        raise UpstreamError(f"{provider}: the provider answered with JSON that is not a chat.completion object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise UpstreamError(f"{provider}: the provider's answer has no choices")
    for choice in choices:
        problem = _message_problem(choice.get("message") if isinstance(choice, dict) else None)
        if problem is not None:
            raise UpstreamError(f"{provider}: the provider's answer is malformed: {problem}")
    return body, usage_of(body.get("usage")) or unmeasured()


def text_completion(body: object, provider: str) -> tuple[dict[str, Any], Usage]:
    """A legacy text_completion answer, checked, in the chat.completion shape edgeway carries."""
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list) or not body["choices"]:
        raise UpstreamError(f"{provider}: the provider's answer is not a text_completion object with choices")
    choices = []
    for i, choice in enumerate(body["choices"]):
        if not isinstance(choice, dict) or not isinstance(choice.get("text"), str):
            raise UpstreamError(f"{provider}: the provider's answer is malformed: a choice has no text")
        message = {"role": "assistant", "content": choice["text"]}
        choices.append(
            {"index": choice.get("index", i), "message": message, "finish_reason": choice.get("finish_reason")}
        )
    chat = {**body, "object": "chat.completion", "choices": choices}
    return chat, usage_of(body.get("usage")) or unmeasured()


def embeddings(body: object, provider: str, count: int) -> tuple[dict[str, Any], Usage]:
    """An embeddings list with one vector (floats, or base64 when asked) per input."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise UpstreamError(f"{provider}: the provider's answer is not an embeddings list with {count} vectors")
    for item in data:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not (
            isinstance(vector, str) or (isinstance(vector, list) and all(isinstance(x, int | float) for x in vector))
        ):
            raise UpstreamError(f"{provider}: the provider's answer holds an embedding that is not a vector")
    assert isinstance(body, dict)
    usage = body.get("usage")
    prompt = _count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
    return body, Usage(prompt, 0) if prompt is not None else unmeasured()


def text_chunk(event: object, provider: str) -> dict[str, Any]:
    """A legacy streamed event, checked, as a chat.completion.chunk."""
    if not isinstance(event, dict):
        raise UpstreamError(f"{provider}: the provider sent a stream event that is not a text_completion chunk")
    if "error" in event:
        raise UpstreamError(f"{provider}: the provider ended the stream with an error: {_reason(event['error'])}")
    choices = []
    for choice in event.get("choices") or []:
        if not isinstance(choice, dict) or not isinstance(choice.get("text", ""), str):
            raise UpstreamError(f"{provider}: the provider sent a malformed text_completion chunk")
        delta = {"content": choice["text"]} if choice.get("text") else {}
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    return {**event, "object": "chat.completion.chunk", "choices": choices}


def chunk(event: object, provider: str) -> dict[str, Any]:
    """One streamed event, which must be a chat.completion.chunk object (or an error)."""
    if not isinstance(event, dict):
        raise UpstreamError(f"{provider}: the provider sent a stream event that is not a chat.completion.chunk")
    if "error" in event:
        raise UpstreamError(f"{provider}: the provider ended the stream with an error: {_reason(event['error'])}")
    choices = event.get("choices", [])
    if not isinstance(choices, list):
        raise UpstreamError(f"{provider}: the provider sent a chunk whose choices are not a list")
    for choice in choices:
        delta = choice.get("delta", {}) if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            raise UpstreamError(f"{provider}: the provider sent a chunk choice without a delta object")
        content = delta.get("content")
        problem = (
            "a delta's content is not text"
            if content is not None and not isinstance(content, str)
            else _calls_problem(delta.get("tool_calls"))
        )
        if problem is not None:
            raise UpstreamError(f"{provider}: the provider sent a malformed chunk: {problem}")
    return event


def _reason(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)[:300]
    return str(error)[:300]


def delivered_text(body: dict[str, Any]) -> str:
    """What a whole answer gave the client to read: content and tool call arguments."""
    pieces: list[str] = []
    for choice in body.get("choices") or []:
        message = choice.get("message") or {}
        pieces.append(message.get("content") or "")
        pieces += [(c.get("function") or {}).get("arguments") or "" for c in message.get("tool_calls") or []]
    return "".join(pieces)


def delta_text(event: dict[str, Any]) -> str:
    """What one chunk gave the client to read."""
    pieces: list[str] = []
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        pieces.append(delta.get("content") or "")
        pieces += [(c.get("function") or {}).get("arguments") or "" for c in delta.get("tool_calls") or []]
    return "".join(pieces)
