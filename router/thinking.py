"""Signed thinking: a model reads only the thinking blocks it signed itself.

Anthropic signs each thinking block a model writes (`signature`; a `redacted_thinking` block's
`data` is its sealed form) and a client sends the blocks back on its later turns. A block signed by
one model is not valid for another, and a turn that continues a tool loop with thinking on must
carry the thinking of the assistant turn it answers. So, where a conversation moves between models
(a new user turn that its router climbs, a fallback after a failure), the blocks another model
signed are taken out of the body as sent, which Anthropic's API accepts for every turn but the one
a tool loop hangs on; a loop is kept on its model (`router.sessions.in_tool_loop`), and where a
fallback must answer one all the same, it answers with thinking off, which needs no earlier block.

Who signed what, the gateway notes as answers pass (`Signers.noted`): a digest of each signature
(never the signature or the thought) and the configured model that wrote it, kept in the cache
store per app (memory, SQLite or Redis, so that replicas agree) for `KEPT_S`. A block the gateway
did not see signed (sent straight to the provider before, or kept past that) goes as it was sent.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from router.answer import Answer, ChunkStream, Usage
from router.cache import CacheStore
from router.native import Api, NativeChunk, block_type
from router.request import ChatRequest
from router.tier import Tier

THOUGHTS = frozenset({"thinking", "redacted_thinking"})
KEPT_S = 7 * 86400.0  # a conversation resumed within a week still knows who signed its thinking


def sealed(block: Any) -> str | None:
    """What a thinking block is signed by (its signature, or a redacted block's sealed data), as
    a digest; None for any other block."""
    if not isinstance(block, dict):
        return None
    kind = block_type(block)
    seal = block.get("signature") if kind == "thinking" else block.get("data") if kind == "redacted_thinking" else None
    return hashlib.sha256(seal.encode()).hexdigest() if isinstance(seal, str) and seal else None


class Signers:
    """Which configured model signed each thinking block the gateway passed on, per app."""

    def __init__(self, store: CacheStore) -> None:
        self._store = store

    def noted(self, app: str, model: str, seals: list[str]) -> None:
        """`model` signed the blocks sealed by `seals` (digests: `sealed`)."""
        for seal in seals:
            self._store.put(_namespace(app), seal, model.encode(), KEPT_S)

    def known(self, app: str, request: ChatRequest) -> ChatRequest:
        """`request` with the signers of the thinking blocks its Messages body carries, as far as
        the gateway saw them signed (`Native.signers`)."""
        native = request.native
        if native is None or native.api is not Api.MESSAGES:
            return request
        signers: dict[str, str] = {}
        for block in _assistant_blocks(native.body):
            seal = sealed(block)
            if seal is not None and seal not in signers:
                found = self._store.get(_namespace(app), seal)
                if found is not None:
                    signers[seal] = found.decode()
        if not signers:
            return request
        return dataclasses.replace(request, native=dataclasses.replace(native, signers=signers))


def readable_by(request: ChatRequest, model: Tier) -> ChatRequest:
    """`request` as `model` may read it: where it goes as sent (Messages to an Anthropic model),
    without the thinking blocks another model signed; and where that leaves the turn a tool loop
    hangs on without its thinking, with thinking off. Unchanged where nothing is taken out."""
    native = request.native
    if native is None or native.api is not Api.MESSAGES or not native.signers or not request.speaks(model.apis):
        return request
    body, changed = _without_others(native.body, native.signers, model.name)
    if not changed:
        return request
    if _thinks(body) and not _loop_keeps_its_thinking(body):
        body = _unthinking(body)
    return dataclasses.replace(request, native=dataclasses.replace(native, body=body))


def _unthinking(body: dict[str, Any]) -> dict[str, Any]:
    """The body with thinking off: no `thinking`, and no context edit that clears thinking (which
    the API takes only with thinking on); the other edits as sent, and none where none are left."""
    out = {k: v for k, v in body.items() if k != "thinking"}
    managed = body.get("context_management")
    edits = managed.get("edits") if isinstance(managed, dict) else None
    if isinstance(managed, dict) and isinstance(edits, list):
        kept = [e for e in edits if not (block_type(e) or "").startswith("clear_thinking")]
        out["context_management"] = {**managed, "edits": kept}
        if not kept:
            del out["context_management"]
    return out


def _without_others(body: dict[str, Any], signers: Mapping[str, str], model: str) -> tuple[dict[str, Any], bool]:
    """The body without the thinking blocks a model other than `model` signed; an assistant turn
    that held nothing else is left out too."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, False
    kept: list[Any] = []
    changed = False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or message.get("role") != "assistant":
            kept.append(message)
            continue
        blocks = [b for b in content if signers.get(sealed(b) or "", model) == model]
        if len(blocks) == len(content):
            kept.append(message)
            continue
        changed = True
        if blocks:
            kept.append({**message, "content": blocks})
    return ({**body, "messages": kept}, True) if changed else (body, False)


def _thinks(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _loop_keeps_its_thinking(body: dict[str, Any]) -> bool:
    """Whether the assistant turn that a tool loop hangs on (the last one, where the turn after it
    answers its tool calls) still begins with its thinking; True where no loop hangs."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    if last is None or not isinstance(messages[last].get("content"), list):
        return True
    content = messages[last]["content"]
    calls = any(block_type(b) == "tool_use" for b in content)
    answered = any(block_type(b) == "tool_result" for m in messages[last + 1 :] for b in _content(m))
    return not (calls and answered) or (bool(content) and block_type(content[0]) in THOUGHTS)


def _assistant_blocks(body: dict[str, Any]) -> list[Any]:
    messages = body.get("messages")
    said = messages if isinstance(messages, list) else []
    return [block for m in said if isinstance(m, dict) and m.get("role") == "assistant" for block in _content(m)]


def _content(message: dict[str, Any]) -> list[Any]:
    """A message's blocks (none where its content is a string)."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def _namespace(app: str) -> str:
    return f"{app}#signers"


# --- noting what an answer signed ----------------------------------------------------------------
def answer_seals(answer: Answer) -> list[str]:
    """The seals of the thinking blocks a whole Messages answer holds."""
    native = answer.native
    if native is None or native.api is not Api.MESSAGES or not isinstance(native.body.get("content"), list):
        return []
    return [seal for block in native.body["content"] if (seal := sealed(block)) is not None]


class SignedStream:
    """A stream passed on as it comes, its Messages events' thinking signatures (and redacted
    blocks) handed to `note` once it ends."""

    def __init__(self, inner: ChunkStream, note: Callable[[list[str]], None]) -> None:
        self._inner, self._note = inner, note

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        seals: list[str] = []
        try:
            async for chunk in self._inner:
                if isinstance(chunk, NativeChunk) and chunk.api is Api.MESSAGES:
                    seals += [seal for event in chunk.events if (seal := _event_seal(event[1])) is not None]
                yield chunk
        finally:
            if seals:
                self._note(seals)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _event_seal(data: dict[str, Any]) -> str | None:
    """The seal an event carries: a `signature_delta`'s signature, a redacted block's data."""
    if data.get("type") == "content_block_delta":
        delta = data.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "signature_delta":
            return sealed({"type": "thinking", "signature": delta.get("signature")})
    if data.get("type") == "content_block_start":
        return sealed(data.get("content_block"))
    return None
