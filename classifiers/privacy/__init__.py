"""Private data in prompts: validated identifiers and secrets, and contextual personal data."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from classifiers.privacy.contextual import MODEL_PATH, SpanModel, cued
from classifiers.privacy.findings import CONTEXTUAL_TYPES, ENTITY_TYPES, STRUCTURED_TYPES, Finding, drop_overlaps
from classifiers.privacy.structured import find_structured


class PrivacyScanner:
    """Scans texts for private data. Chat clients send the whole history with every turn, so the
    findings of recent texts are kept (up to `cache_chars` characters of them) and only new text
    is scanned."""

    def __init__(self, model_path: Path = MODEL_PATH, cache_chars: int = 4_000_000) -> None:
        self.spans = SpanModel.load(model_path)
        self._cache: OrderedDict[str, tuple[Finding, ...]] = OrderedDict()
        self._cache_chars = 0
        self._cache_limit = cache_chars

    def forget(self) -> None:
        self._cache.clear()
        self._cache_chars = 0

    def scan(self, text: str) -> tuple[Finding, ...]:
        """Every finding in `text`, overlaps resolved in favour of the more confident one."""
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        found = find_structured(text)
        found += self.spans.find(text)
        found += cued(text)
        result = tuple(drop_overlaps(found))
        if len(text) <= self._cache_limit // 8:
            self._cache[text] = result
            self._cache_chars += len(text)
            while self._cache_chars > self._cache_limit:
                evicted, _ = self._cache.popitem(last=False)
                self._cache_chars -= len(evicted)
        return result


__all__ = ["CONTEXTUAL_TYPES", "ENTITY_TYPES", "STRUCTURED_TYPES", "Finding", "PrivacyScanner"]
