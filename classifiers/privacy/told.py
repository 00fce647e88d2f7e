"""Street addresses that the words before them say are one, in any case: "I live at 14 kingsley
road, leeds LS6 2AB", "ship to 1600 amphitheatre parkway, mountain view, ca 94043", "my address
is 12 rue de la paix, 75002 paris", "deliver to apt 4b, 350 5th ave, new york".

The span model finds an address by its capitals; users typing in lower case, or naming a street
the model reads as famous, told it anyway. After a cue (living at, sending to, an address being
given), the clause is an address when it opens with a house number, a unit or a street word, holds
a number, and names a street (`STREET_WORDS`) that no article or pronoun introduces ("send it to 3
people in the park" is none). The address runs to the clause's end.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.contextual import STREET_WORDS
from classifiers.privacy.findings import Finding

DETECTOR = "told-address"
# Above the span model's: the cue says the whole clause is one address, where the model may read
# "Calle Mayor" in it as an organization and "28013 Madrid" as another address.
CONFIDENCE = 0.95
_CUE_WORDS = (
    "address is", "address:", "live at", "live on", "lives at", "living at", "reside at", "resides at",
    "ship to", "ship it to", "deliver to", "deliver it to", "send it to", "mail it to", "post it to",
    "located at", "staying at", "adresse", "dirección", "direccion", "indirizzo", "endereço",
)  # fmt: skip
CUES = Anchors((), _CUE_WORDS)
_CUE_SET = frozenset(_CUE_WORDS)
_CUED = re.compile(
    r"(?i)(?:address(?: is|:)|live[sd]? (?:at|on)|living at|resides? at|ship (?:it )?to|deliver (?:it )?to|"
    r"send it to|mail it to|post it to|located at|staying at|adresse|direcci[oó]n|indirizzo|endereço)"
    r"(?:[ \t]+(?:is|est|es|ist|è|é))?[\"']?[ \t]*[:=：]?[ \t]*[\"']?"
)
# A clause ends at a line break, a semicolon, a question or exclamation mark, a quote (a JSON
# string's end: `"address": "12 rue de la paix"`), or a full stop before white space (not the one
# in "St. Louis" or "5th ave.,").
_CLAUSE_END = re.compile(r"[\n;!?\"]|\.(?:\s|$)")
_OPENING = re.compile(r"(?i)(?:(?:apt|apartment|unit|flat|suite)\.?[ \t]*#?\w+,?[ \t]+)?\d{1,6}[a-z]?\b")
_INTRODUCING = frozenset("the a an this that my your his her our their its in on at of to for with".split())
_STREET_FIRST = frozenset("rue calle avenida via viale piazza rua avenue boulevard".split())
_TOKEN = re.compile(r"[\w'’.-]+")
_DIGIT = re.compile(r"\d")
_STREET_WITHIN = 7  # tokens from the clause's start


def told(text: str, hits: Hits) -> list[Finding]:
    """STREET_ADDRESS findings after their cues. `hits`: `CUES.find(text)`, or more."""
    if _CUE_SET.isdisjoint(hits):
        return []
    return [
        Finding("STREET_ADDRESS", start, end, CONFIDENCE, DETECTOR)
        for start, end in _addresses(text, starts_of(hits, _CUE_SET))
    ]


def _addresses(text: str, cues: list[int]) -> Iterator[tuple[int, int]]:
    for m in anchored(_CUED, text, cues):
        start = m.end()
        stop = _CLAUSE_END.search(text, start, start + 120)
        clause = text[start : stop.start() if stop else min(len(text), start + 120)]
        end = start + len(clause.rstrip(" \t,:-"))
        if end > start and _is_address(text[start:end]):
            yield start, end


def _is_address(clause: str) -> bool:
    if _DIGIT.search(clause) is None:
        return False
    words = [w.group().lower().rstrip(".,") for w in islice(_TOKEN.finditer(clause), _STREET_WITHIN)]
    if not words or not (_OPENING.match(clause) or words[0] in _STREET_FIRST or _compound_street(words[0])):
        return False
    return any(_street(w) and (i == 0 or words[i - 1] not in _INTRODUCING) for i, w in enumerate(words))


def _street(word: str) -> bool:
    return word in STREET_WORDS or _compound_street(word)


def _compound_street(word: str) -> bool:
    """German and Dutch write the street word into the name: "hauptstraße", "kerkstraat"."""
    return word.endswith(("straße", "strasse", "str", "straat", "weg", "gasse", "platz", "allee", "laan"))
