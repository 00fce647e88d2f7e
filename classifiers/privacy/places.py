"""Places: countries, their states and provinces, and cities ("in pampanga", "Changting", "青岛").

Where someone lives, works or studies is as telling as their name: 42 of the PUPA prompts the
other detectors miss have a place among their private units (31 have nothing else). A place
named in a question about the world ("What is the capital of France?") is public, so a place is
a finding the private-context gate decides on, as a name the span model finds is: found in a
letter, a résumé or a business plan, not in a public question.

The names are GeoNames' cities of 15,000 people or more, its countries and US states, and ISO
3166's subdivisions, with the Chinese names of countries and of cities of 500,000 or more
(`classifiers/models/places.json`, made by `python -m research.train`). A name that is a
common English word ("Nice", "Reading", "Mobile") is left out when it is made. Places are looked
up only in a text the gate reads as private (`PrivacyScanner._decided`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from classifiers import _scan
from classifiers.privacy.findings import Finding

MODEL_PATH = Path(__file__).resolve().parents[1] / "models" / "places.json"
CONFIDENCE = 0.3  # below the span model's `confident`: the gate decides
DETECTOR = "place"
TYPE = "LOCATION"
LONGEST = 3  # words in a place name looked up: "Rio de Janeiro", "New South Wales"
_HAN_RANGE = ((0x4E00, 0x9FFF),)  # asked first, in C: the pattern's search cost 100 instructions a character
_HAN = re.compile(f"[{chr(_HAN_RANGE[0][0])}-{chr(_HAN_RANGE[0][1])}]{{2,}}")


class Places:
    """Place names, in lower case and single spaces (found by the compiled `Phrases`), and
    Chinese ones as written."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self.latin = _scan.Phrases(data["names"], LONGEST)
        self.han: frozenset[str] = frozenset(data["han"])
        # the lengths of the names that begin with each character, longest first
        lengths: dict[str, set[int]] = {}
        for name in self.han:
            lengths.setdefault(name[0], set()).add(len(name))
        self._han_lengths = {first: sorted(ns, reverse=True) for first, ns in lengths.items()}
        # a name can begin only at one of these: the search skips the rest in C (one character at a
        # time in Python, a Chinese text cost 2 us a character)
        self._han_first = re.compile("[" + "".join(sorted(lengths)) + "]") if lengths else None

    def find(self, text: str) -> list[Finding]:
        chinese = self._chinese(text) if not text.isascii() and _scan.any_in(text, _HAN_RANGE) else []
        return [Finding(TYPE, s, e, CONFIDENCE, DETECTOR) for s, e in self.latin.find(text) + chinese]

    def _chinese(self, text: str) -> list[tuple[int, int]]:
        """The longest name at each character of a run of Chinese characters (no spaces between words)."""
        found: list[tuple[int, int]] = []
        if self._han_first is None:
            return found
        for run in _HAN.finditer(text):
            i, end = run.start(), run.end()
            while (m := self._han_first.search(text, i, end - 1)) is not None:
                i = m.start()
                n = next((n for n in self._han_lengths[text[i]] if i + n <= end and text[i : i + n] in self.han), 0)
                if n:
                    found.append((i, i + n))
                i += n or 1
        return found
