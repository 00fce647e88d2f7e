"""Matching a request to a cached one by meaning (`cache: {semantic: true}`).

A semantic hit is a request of the same app to the same model after routing whose body is the
same but for its last user message, and whose last user message (1) says the same content words
in the same order, ignoring case, punctuation, spacing, contractions and function words, and
(2) has an embedding within `min_similarity` (cosine) of the cached one's, from the edge model's
embeddings, computed locally.

Why both: measured on `gateway/bench/data/cache_pairs.jsonl` (`edgeway bench semantic-cache`),
the bundled model's pooled states rank near-misses ("capital of France" / "of Spain", "Is 97
prime" / "Is 91 prime") above true paraphrases, so no similarity threshold alone keeps false
hits out; the content words are what tell those apart, and they are checked first, so a request
with no candidate costs no embedding at all. The similarity then vetoes candidates whose words
agree but whose sense does not.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import orjson

from classifiers.forwarded import text_at
from classifiers.privacy.known import Known
from classifiers.signals import PrivacyFinding
from router import tracing
from router.cache import UNKEYED, CachePolicy, CacheStore
from router.errors import EdgewayError
from router.request import ChatRequest, parse_embeddings_request
from router.tier import Tier

log = logging.getLogger("edgeway.router")

# Words whose dropping changes no ask. Kept, because they can: question words ("when" / "why"),
# tense ("was", "did"), modals, pronouns ("can you help me" / "can I help you"), prepositions,
# negations and every content word.
FUNCTION_WORDS = frozenset("a an the is are am be please kindly hey hi hello thanks thank just".split())
CONTRACTIONS = {"what's": "what is", "it's": "it is", "that's": "that is", "i'm": "i am", "how's": "how is"}
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def content_words(text: str) -> tuple[str, ...]:
    """The words that carry the ask, in order: `What's the capital of France?` -> (capital, france)."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    words: list[str] = []
    for word in _WORD.findall(folded):
        for part in CONTRACTIONS.get(word, word).split():
            if part not in FUNCTION_WORDS:
                words.append(part.removesuffix("'s"))
    return tuple(words)


def last_user_text(request: ChatRequest) -> str | None:
    """The last message's text when it is the user's and is text only; None otherwise."""
    if request.prompt is not None or not request.messages:
        return None
    last = request.messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user" or not request.text_only:
        return None
    text = request.text_of(last)
    return text if text.strip() else None


def private_values(request: ChatRequest, findings: Sequence[PrivacyFinding]) -> list[tuple[str, str]]:
    """Each private value the scan found in the request, with its type, in a canonical order."""
    sent = request.as_sent  # (where the scan read)
    return sorted({(f.type, text_at(sent, f.path)[f.start : f.end]) for f in findings if f.end > f.start})


def semantic_key(app: str, model: str, request: ChatRequest, findings: Sequence[PrivacyFinding] = ()) -> str | None:
    """The key of the requests this one may match: the same app, model and body but for the last
    user message, which counts by its content words only, and the same private values, exactly
    (`findings`): "a note to jane.roe@example.com" and "... to jane_roe@example.com" have the same
    content words and nearly the same embedding, and one person's answer must never be served to
    another. None: not a request to match by meaning."""
    text = last_user_text(request)
    if text is None:
        return None
    body: dict[str, Any] = {k: v for k, v in request.body.items() if k not in UNKEYED}
    body["messages"] = [*request.body["messages"][:-1], {"role": "user", "words": content_words(text)}]
    if request.native is not None:  # what its own API says beside the turns (thinking, reasoning, ...)
        body["native"] = [request.api, {k: v for k, v in request.as_sent.items() if k not in _TURNS}]
    semantic = {"app": app, "model": model, "semantic": body, "private": private_values(request, findings)}
    return "semantic:" + hashlib.sha256(orjson.dumps(semantic, option=orjson.OPT_SORT_KEYS)).hexdigest()


_TURNS = frozenset({*UNKEYED, "messages", "input", "system", "instructions"})  # read as the chat messages


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def record(
    app: str, model: str, request: ChatRequest, exact: str, findings: Sequence[PrivacyFinding] = ()
) -> tuple[str, bytes] | None:
    """What the semantic index keeps of a cached request, as (its key, its value): the request's
    exact cache key and its last user text. None: not a request to match by meaning."""
    candidate, text = semantic_key(app, model, request, findings), last_user_text(request)
    if candidate is None or text is None:
        return None
    return candidate, orjson.dumps({"key": exact, "text": text})


async def similar(
    cache: CacheStore,
    embedder: Tier | None,
    app: str,
    policy: CachePolicy,
    model: str,
    request: ChatRequest,
    findings: Sequence[PrivacyFinding] = (),
) -> tuple[bytes | None, float | None]:
    """A cached answer to this request in other words, and how similar the two asks are: the
    same content words and private values first (no embedding is computed without such a
    candidate), then the edge embeddings' cosine at least `min_similarity`."""
    candidate, text = semantic_key(app, model, request, findings), last_user_text(request)
    stored = cache.get(app, candidate) if candidate is not None else None
    if stored is None or embedder is None or text is None:
        return None, None
    kept = orjson.loads(stored)
    found = cache.get(app, kept["key"])
    if found is None:
        return None, None
    texts = parse_embeddings_request({"model": embedder.name, "input": [text, kept["text"]]})
    try:
        with tracing.step("edgeway.cache.similarity") as span:
            vectors = [item["embedding"] for item in (await embedder.embed(texts)).body["data"]]
            similarity = cosine(vectors[0], vectors[1])
            span.set_attribute("edgeway.cache.similarity", similarity)
    except EdgewayError as exc:  # the cache is an optimisation: without embeddings, a miss
        log.warning("semantic cache of %s: no embeddings (%s)", Known(app), exc.message)
        return None, None
    return (found, similarity) if similarity >= policy.min_similarity else (None, None)
