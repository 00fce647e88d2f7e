"""Personal identifiers that their name announces and their own check digits vouch for, in the
formats python-stdnum keeps (74 names of 62 formats in 50 countries, generated into the reading
tables: `CHECKED_IDENTIFIERS`): "Meu CPF: 529:982:247-25", "Mój PESEL to 44051401359", "BSN
111222333", "Henkilötunnus 131052-308T".

The name is found as the other cues are, in one pass in C (an acronym as written, "CPF"; a word in
any case, "personnummer"); the value is a run of groups of letters and digits beginning within
the first few groups after it ("is", "to", ":" between), each joined to the next by at most three
separators of any kind; it is an `ID_NUMBER` where one of the formats so named says it is valid,
as written or with its separators out. The
check is what makes a bare name enough: "PIN 1234" or "the CPF rules" is none.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from functools import cache
from types import ModuleType

from classifiers.privacy.anchors import Anchors, Hits
from classifiers.privacy.findings import Finding
from classifiers.privacy.tables import CHECKED_IDENTIFIERS

DETECTOR = "stdnum"
CONFIDENCE = 0.97  # a name and a check: as sure as a national id's own shape and check

# An acronym is a cue as written ("PIN", "SIN": "pin" and "sin" are words); a longer name in any case.
_ACRONYM = re.compile(r"[^a-z]+|[A-Za-z][a-z]?[A-Z][A-Za-z]*")  # CPF, RČ, IdNr, eID, NIFp
_EXACT = {name: formats for name, formats in CHECKED_IDENTIFIERS.items() if _ACRONYM.fullmatch(name)}
_FOLDED = {name.lower(): formats for name, formats in CHECKED_IDENTIFIERS.items() if name not in _EXACT}
CUES = Anchors(_EXACT, _FOLDED)
_FORMATS = _EXACT | _FOLDED  # each cue literal -> the formats of the name it is
_LITERALS = frozenset(_FORMATS)
# What may follow a name: its value's groups of letters and digits, the first a few words on
# ("is", "to", "nr.", ":" between), each joined to the next by at most three separators.
_GROUP = re.compile(r"\w+")
_REACH = 96  # characters after a name where its value may be
_FIRST_GROUPS = 4  # the value begins at one of the first groups after the name ("CPF: 529...", "PESEL to 44...")
_MOST_GROUPS = 8  # a value's groups: "AL J 91402501 L", "0614-050707-104-8"
_SHORTEST = 6  # characters of a value: no format here is shorter


def checked(text: str, hits: Hits) -> Iterator[Finding]:
    """ID_NUMBER findings where a name of `CHECKED_IDENTIFIERS` stands and a value after it checks."""
    for literal in _LITERALS.intersection(hits):  # walks the text's few hits, not the names
        for at in hits[literal]:
            end = at + len(literal)
            if (at and text[at - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
                continue  # inside a word: "CPFs", "SINGLE"
            found = _value(text, end, _FORMATS[literal])
            if found is not None:
                yield Finding("ID_NUMBER", found[0], found[1], CONFIDENCE, DETECTOR)


def _value(text: str, start: int, formats: list[str]) -> tuple[int, int] | None:
    """Where the value after a name is, if one of `formats` checks it: the longest run of groups
    from each of the first groups after the name ("529.982.247-25 please" less "please")."""
    groups: list[tuple[int, int]] = []
    for m in _GROUP.finditer(text, start, min(len(text), start + _REACH)):
        gap = text[groups[-1][1] if groups else start : m.start()]
        if groups and (len(gap) > 3 or "\n" in gap):
            break
        groups.append((m.start(), m.end()))
    for first in range(min(_FIRST_GROUPS, len(groups))):
        for last in range(min(first + _MOST_GROUPS, len(groups)) - 1, first - 1, -1):
            at, stop = groups[first][0], groups[last][1]
            written = text[at:stop]
            compact = "".join(text[a:b] for a, b in groups[first : last + 1])
            if len(compact) < _SHORTEST or not any(c.isdigit() for c in compact):
                continue
            # as written (a format's own separators may mean something: a Finnish HETU's century
            # sign), and with every separator out ("529:982:247-25")
            if any(_valid(name, form) for name in formats for form in (written, compact)):
                return at, stop
    return None


def _valid(name: str, compact: str) -> bool:
    try:
        return bool(_format(name).is_valid(compact))
    except Exception:  # a format's own check, given what is no value of it
        return False


@cache
def _format(name: str) -> ModuleType:
    """A python-stdnum format, imported the first time its name is met (all 62 at start: 60 ms)."""
    return importlib.import_module(f"stdnum.{name}")
