"""A conversation stays on the model that served it.

An agent's turns share a prefix that the provider serving them has cached (and, for Claude, the
thinking signatures the next turn must send back to the same model). A router that weighs each
turn alone moves turn 7 to another model and throws both away; so a session, once served, keeps
its later turns on that model while nothing forces a move: a rule, privacy or the budget that
narrows the targets, a model that fails (its fallbacks answer and the session moves with them).

A session is recognised by, in order: the client's `x-edgeway-session` header; the API's own
session or cache key (Claude Code's `metadata.user_id`, which carries its session; `prompt_cache_key`
of Chat Completions and Responses); else a digest of the conversation's first turns (its system
prompt and first user turn, which every later turn repeats). What served it is kept in the store's
cache (memory, SQLite or Redis, so that replicas agree), per app, for `session.ttl_s`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

import orjson

from router.cache import CacheStore
from router.request import ChatRequest

SESSION_HEADER = "session"  # x-edgeway-session, as the request's metadata names it
DEFAULT_TTL_S = 3600.0  # Anthropic's longest cache lifetime: a session idle longer has lost its cache


class SessionSource(StrEnum):
    """What told the gateway which session a request belongs to."""

    HEADER = "x-edgeway-session"
    USER_ID = "metadata.user_id"
    CACHE_KEY = "prompt_cache_key"
    FIRST_TURNS = "first_turns"


@dataclass(frozen=True)
class SessionPolicy:
    """`session:` in a policy: whether its conversations keep their model, and for how long idle."""

    affinity: bool = True
    ttl_s: float = DEFAULT_TTL_S


@dataclass(frozen=True)
class Session:
    source: SessionSource
    key: str  # a digest: what identifies the session is not kept readable


def session_of(request: ChatRequest) -> Session | None:
    """The session `request` belongs to, by the first of its signs that it carries; None for a
    request that is no conversation (an embeddings request, a legacy completion)."""
    if request.inputs is not None or request.prompt is not None:
        return None
    sent = request.as_sent
    given = request.metadata.get(SESSION_HEADER)
    if given:
        return _session(SessionSource.HEADER, given)
    metadata = sent.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    if isinstance(user, str) and user:
        return _session(SessionSource.USER_ID, user)
    cache_key = sent.get("prompt_cache_key")
    if isinstance(cache_key, str) and cache_key:
        return _session(SessionSource.CACHE_KEY, cache_key)
    first = []
    for message in request.messages:
        first.append(message)
        if isinstance(message, dict) and message.get("role") == "user":
            break
    return _session(SessionSource.FIRST_TURNS, orjson.dumps(first, option=orjson.OPT_SORT_KEYS).decode())


def continues(request: ChatRequest, session: Session) -> bool:
    """Whether `request` continues its session: a session the client named (a header, the API's
    own key), or a conversation that has an earlier answer in it. Two first turns alike are two
    requests that happen to ask the same, not one conversation."""
    if session.source is not SessionSource.FIRST_TURNS:
        return True
    return any(isinstance(m, dict) and m.get("role") == "assistant" for m in request.messages)


def in_tool_loop(request: ChatRequest) -> bool:
    """Whether `request` continues a tool loop: its last assistant turn called tools and a tool's
    result answers it since. The loop is the model's unfinished turn (its thinking, for Claude,
    signed for it alone: `router.thinking`); it ends on that model, and a climb waits for the next
    user turn."""
    messages = [m for m in request.messages if isinstance(m, dict)]
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    if last is None or not messages[last].get("tool_calls"):
        return False
    return any(m.get("role") == "tool" for m in messages[last + 1 :])


def _session(source: SessionSource, material: str) -> Session:
    return Session(source, hashlib.sha256(f"{source}\n{material}".encode()).hexdigest())


class Sessions:
    """Which model served each session, kept in the cache store under the app's own namespace."""

    def __init__(self, store: CacheStore) -> None:
        self._store = store

    def model(self, app: str, session: Session) -> str | None:
        found = self._store.get(_namespace(app), session.key)
        return None if found is None else found.decode()

    def served(self, app: str, session: Session, model: str, policy: SessionPolicy) -> None:
        """`model` answered the session's latest turn: its later turns go there (for `ttl_s` idle)."""
        self._store.put(_namespace(app), session.key, model.encode(), policy.ttl_s)


def _namespace(app: str) -> str:
    return f"{app}#sessions"  # apart from the app's cached answers (`DELETE /api/cache` leaves it)
