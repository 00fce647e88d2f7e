"""What the classifiers learned about texts they have read lately.

Chat clients send the whole history with every turn, so each text's findings and token counts
are kept (up to `limit_chars` characters of texts, least recently used out first) and
a new turn costs only its new message and the conversation-wide complexity score.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from classifiers.privacy import Finding
from classifiers.tokens import Counts


class TextFacts(NamedTuple):
    findings: tuple[Finding, ...]
    counts: Counts  # for the token estimate


class SeenTexts:
    def __init__(self, limit_chars: int = 4_000_000) -> None:
        self._facts: OrderedDict[str, TextFacts] = OrderedDict()
        self._chars = 0
        self._limit = limit_chars

    def get(self, text: str) -> TextFacts | None:
        facts = self._facts.get(text)
        if facts is not None:
            self._facts.move_to_end(text)
        return facts

    def put(self, text: str, facts: TextFacts) -> None:
        if len(text) > self._limit // 8 or text in self._facts:
            return
        self._facts[text] = facts
        self._chars += len(text)
        while self._chars > self._limit:
            evicted, _ = self._facts.popitem(last=False)
            self._chars -= len(evicted)

    def clear(self) -> None:
        self._facts.clear()
        self._chars = 0
