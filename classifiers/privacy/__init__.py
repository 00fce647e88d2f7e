"""Private data in prompts: validated identifiers and secrets, and contextual personal data."""

from __future__ import annotations

from pathlib import Path

from classifiers.privacy.contextual import CUES, MODEL_PATH, SpanModel, cued
from classifiers.privacy.findings import CONTEXTUAL_TYPES, ENTITY_TYPES, STRUCTURED_TYPES, Finding, drop_overlaps
from classifiers.privacy.structured import ANCHORS, find_structured


class PrivacyScanner:
    """Scans texts for private data (the Scorer keeps what it found in recent texts)."""

    def __init__(self, model_path: Path = MODEL_PATH) -> None:
        self.spans = SpanModel.load(model_path)
        self.anchors = ANCHORS + CUES

    def scan(self, text: str) -> tuple[Finding, ...]:
        """Every finding in `text`, overlaps resolved in favour of the more confident one."""
        hits = self.anchors.find(text)   # every pattern's leading literals, in one pass
        found = find_structured(text, hits)
        found += self.spans.find(text)
        found += cued(text, hits)
        return tuple(drop_overlaps(found))


__all__ = ["CONTEXTUAL_TYPES", "ENTITY_TYPES", "STRUCTURED_TYPES", "Finding", "PrivacyScanner"]
