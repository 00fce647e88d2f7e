"""The private values clients sent lately: what the gateway's log must never show.

The router notes each request's private values as the privacy scan found them in the body as
sent (`Router.signals`); the log masker (`gateway/masked_logs.py`) writes each of them, wherever
a record carries it (a provider's error quoting the prompt, a client's string in an exception, a
library's message), as its type ("[US_SSN]"). Nothing else of a record is read: an operator's
own diagnostics ("[Errno -2] Name or service not known", "not valid YAML", an exporter's
"Transient error") are no one's private data, and a scan of every record read their capitalised
words as names.

A value is kept for `KEEP_S` after the last request that carried it (longer than a request, its
retries and its shadow comparison take), the latest `MOST` of them: in this process's memory
only, as the request itself was.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable, Iterable

from classifiers.privacy.findings import Finding

KEEP_S = 15 * 60.0
MOST = 100_000
SHORTEST = 3  # characters: a shorter value would mask a log's every "id" and "ms"
_PREFIX = SHORTEST  # values are found by their first characters (one dictionary look-up a position)
# What a log names as a matter of course and masks nowhere: links (the providers and nodes it
# talks to), and a media part's or a file's finding, which is no text a log could quote.
NOT_MASKED = frozenset({"URL", "UNSCANNED"})


class ClientValues:
    """The private values of recent requests, by where they stand in a text (thread-safe: the
    router notes from the event loop and its scanning threads, and any thread logs)."""

    def __init__(self, keep_s: float = KEEP_S, most: int = MOST, clock: Callable[[], float] = time.monotonic) -> None:
        self._keep_s, self._most, self._clock = keep_s, most, clock
        self._lock = threading.Lock()
        self._types: dict[str, str] = {}  # value -> its type
        self._until: dict[str, float] = {}  # value -> when it is forgotten, oldest first
        self._by_prefix: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._types)

    def note(self, values: Iterable[tuple[str, str]]) -> None:
        """(type, value) pairs a request carried: each kept `KEEP_S` from now. A person's name is
        kept whole and word by word ("Dear Nadia" in a provider's error, for "Nadia Kowalczyk")."""
        now = self._clock()
        with self._lock:
            for kind, value in values:
                for said in _said(kind, value):
                    self._keep(kind, said, now + self._keep_s)
            self._forget(now)

    def found(self, text: str) -> list[Finding]:
        """Where each value stands in `text` as a whole (not the inside of a longer word or
        number: "Ann" is not found in "Annual"), overlapping findings included."""
        if len(text) < SHORTEST:
            return []
        hits: list[Finding] = []
        with self._lock:
            if not self._types:
                return []
            by_prefix, types = self._by_prefix, self._types
            for at in range(len(text) - SHORTEST + 1):
                bucket = by_prefix.get(text[at : at + _PREFIX])
                if bucket is None:
                    continue
                for value in bucket:
                    end = at + len(value)
                    if text.startswith(value, at) and _whole(text, at, end):
                        hits.append(Finding(types[value], at, end, 1.0, "client-value"))
        return hits

    def _keep(self, kind: str, value: str, until: float) -> None:
        if value in self._until:
            del self._until[value]  # (re-inserted last: the dictionary stays in order of time)
        else:
            self._by_prefix.setdefault(value[:_PREFIX], set()).add(value)
        self._types[value] = kind
        self._until[value] = until

    def _forget(self, now: float) -> None:
        while self._until:
            value, until = next(iter(self._until.items()))
            if until > now and len(self._until) <= self._most:
                return
            del self._until[value], self._types[value]
            bucket = self._by_prefix[value[:_PREFIX]]
            bucket.discard(value)
            if not bucket:
                del self._by_prefix[value[:_PREFIX]]


def _said(kind: str, value: str) -> list[str]:
    """What of a finding a log could quote: the value (stripped), and a person's every name."""
    value = value.strip()
    if kind in NOT_MASKED or len(value) < SHORTEST or _this_machine(kind, value):
        return []
    said = [value]
    if kind == "PERSON":
        said += [word for word in value.split() if len(word) >= SHORTEST and word != value]
    return said


def _this_machine(kind: str, value: str) -> bool:
    """127.0.0.1, ::1, 0.0.0.0: where the gateway listens, no one's private address."""
    if kind != "IP_ADDRESS":
        return False
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _whole(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is not glued to a letter before or after a letter at its edge, or
    a digit to a digit ("123-45-6789" is found in "ssn:123-45-6789" and in "ssn123-45-6789")."""
    return not (start > 0 and _glued(text[start - 1], text[start])) and not (
        end < len(text) and _glued(text[end - 1], text[end])
    )


def _glued(a: str, b: str) -> bool:
    return (a.isalpha() and b.isalpha()) or (a.isdigit() and b.isdigit())
