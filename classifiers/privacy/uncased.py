"""Names in a text typed without capitals: "hi my name is priya sharma and i work at infosys",
"can you answer cory, he asked about the invoice".

The span model finds a name by its capital (its words are cased); a user who never presses shift
gave it nothing to read, and lower-cased, PUPA's private prompts were found half as often. In a
text with no capital but the pronoun "I", a given name from Faker's lists in 86 locales
(`classifiers/models/names.json`, made by `python -m research.train`), with the surname or
given name after it, is a PERSON candidate. A name that is an English word ("mark", "will",
"grace") or a place's ("jordan", "india") is left out when the list is made. As the span model's
names are, it is a finding only in a text the private-context gate reads as someone's own
(`PrivacyScanner._decided`): "write a poem about sarah" is nobody's data.

Only caseless texts: in cased ones a lower-case first name is far more often a word ("herb",
"dakota", "valentine"), and out of fold, read everywhere, these names cost more public flags than
the PUPA prompts they found.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from classifiers.privacy.findings import Finding

MODEL_PATH = Path(__file__).resolve().parents[1] / "models" / "names.json"
DETECTOR = "uncased-name"
CONFIDENCE = 0.5  # below the span model's `confident`: the gate decides
_WORD = re.compile(r"[^\W\d_]+")


def caseless(text: str) -> bool:
    """No capital letter but "I" ("i" typed as most keyboards correct it)."""
    return text.islower() or ("I" in text and text.replace("I", "i").islower())


class UncasedNames:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self.given: frozenset[str] = frozenset(data["given"])
        self.names: frozenset[str] = self.given | frozenset(data["family"])

    def find(self, text: str) -> list[Finding]:
        """PERSON candidates in a caseless `text`: a given name and the names right after it."""
        found: list[Finding] = []
        start = end = -1
        for m in _WORD.finditer(text):
            word = unaccented(m.group())
            if end >= 0 and text[end : m.start()] == " " and word in self.names:
                end = m.end()  # "priya sharma", "mary ann"
                continue
            if end >= 0:
                found.append(Finding("PERSON", start, end, CONFIDENCE, DETECTOR))
            start, end = (m.start(), m.end()) if word in self.given else (-1, -1)
        if end >= 0:
            found.append(Finding("PERSON", start, end, CONFIDENCE, DETECTOR))
        return found


def unaccented(word: str) -> str:
    """`word` without its accents ("josé" -> "jose"): as the names list is made and looked up in."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
