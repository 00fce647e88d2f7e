"""Running a pattern only where a match can start.

A Python regex pass over a page of text costs 30-150 us here, whether or not it finds anything.
Most of the privacy patterns begin with a literal ("sk-", "eyJ", "password", "diagnosed with"):
`Anchors` finds all of them in one pass in C (classifiers/scan/anchors.c), and `anchored()`
tries each pattern only where its literals occur, yielding exactly what `pattern.finditer(text)`
would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from classifiers import _scan

Hits = dict[str, list[int]]  # literal -> where it occurs, in order
# The scripts a literal may begin in besides ASCII: Cyrillic, Arabic, kana, CJK ideographs, Hangul.
SCRIPTS = ((0x0400, 0x04FF), (0x0600, 0x06FF), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3))


def _in_scripts(literal: str) -> bool:
    return any(first <= ord(literal[0]) <= last for first, last in SCRIPTS)


class Anchors:
    """Literals to find in a text, `exact` ones as written and `folded` ones (given in lower case)
    in any case, as re's IGNORECASE matches them."""

    def __init__(self, exact: Iterable[str], folded: Iterable[str]) -> None:
        self.exact: tuple[str, ...] = tuple(dict.fromkeys(exact))
        self.folded: tuple[str, ...] = tuple(dict.fromkeys(folded))
        if set(self.exact) & set(self.folded) or any(f != f.lower() for f in self.folded):
            raise ValueError("a literal is either exact or folded, and folded ones are lower case")
        if any(not _in_scripts(w) for w in (*self.exact, *self.folded) if not w[0].isascii()):
            raise ValueError("a literal begins with an ASCII character or a letter of SCRIPTS")
        # The C automaton holds literals that begin with ASCII; the others ("密码", "пароль") are
        # searched for as written (a folded one in lower case, capitalized and in capitals).
        self.native = _scan.Anchors(
            [w for w in self.exact if w[0].isascii()], [w for w in self.folded if w[0].isascii()]
        )
        self._scripted = tuple((w, w) for w in self.exact if not w[0].isascii()) + tuple(
            (written, w)
            for w in self.folded
            if not w[0].isascii()
            for written in dict.fromkeys((w, w.capitalize(), w.upper()))
        )

    def find(self, text: str) -> Hits:
        return self.scripted(text, self.native.find(text))

    def scripted(self, text: str, hits: Hits) -> Hits:
        """`hits` (the C automaton's) with the literals that begin in `SCRIPTS` added. A text with
        no letter of those scripts is answered in one pass in C: searching it for each of them cost
        60 us a 1,000-token conversation."""
        if not self._scripted or text.isascii() or not _scan.any_in(text, SCRIPTS):
            return hits
        added: set[str] = set()
        for written, literal in self._scripted:
            at = text.find(written)
            while at >= 0:
                hits.setdefault(literal, []).append(at)
                added.add(literal)
                at = text.find(written, at + 1)
        for literal in added:  # a folded literal's spellings were searched one after another
            hits[literal].sort()
        return hits

    def __add__(self, other: Anchors) -> Anchors:
        return Anchors(self.exact + other.exact, self.folded + other.folded)


def starts_of(hits: Hits, literals: frozenset[str], back: Iterable[int] = (0,)) -> list[int]:
    """Where the literals occur, less each of `back` (for matches that begin before their literal)."""
    present = literals.intersection(hits)
    if not present:  # most texts hold none of a detector's literals: asked of every text, per pattern
        return []
    return [at - b for literal in present for at in hits[literal] for b in back if at >= b]


def anchored(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> list[re.Match[str]]:
    """The non-overlapping matches of `pattern` that begin at one of `starts`, in order: the same
    as `pattern.finditer(text)` when every match begins at one of them. A list, not a generator:
    most calls have no start, and making a generator for them cost more than the rest."""
    if not starts:
        return []
    found = []
    end = 0
    for start in sorted(set(starts)):
        if start < end:
            continue
        m = pattern.match(text, start)
        if m is not None:
            found.append(m)
            end = max(m.end(), start + 1)
    return found
