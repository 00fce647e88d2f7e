"""Text the detectors cannot read: words in a script no model or cue here was made for.

The identifiers, secrets and numbers are read in any script (the canonical reading folds other
scripts' digits and number words); names, places, birth dates and health conditions are found by
a span model, a private-context gate and cues trained and written on Latin-script text. A word of
three characters or more in another script (Cyrillic, Arabic, Devanagari, Greek...; two of Han,
Hangul or kana, where one is a syllable) is reported as `UNSCANNED`, like an image: what was not
read is never taken for nothing, so a local-only rule (`pii: any`) keeps it on the premises and a
masking rule refuses to send it unread. The finding's detector names the script
(`script:cyrillic`), which `POST /v1/route` shows. The scripts are generated from Unicode's names
(`python -m research.reading_tables`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from classifiers.privacy.findings import Finding
from classifiers.privacy.tables import MARKS, MODIFIERS, UNREAD_LETTERS, character_class

UNSCANNED = "UNSCANNED"
SCRIPT = "script:"  # the detector of such a finding, before its script's name
UNREAD = "UNREAD"  # such words' type where a copy kept at rest masks them
_STARTS = sorted((first, last, script) for script, ranges in UNREAD_LETTERS.items() for first, last in ranges)
_FIRSTS = [first for first, _, _ in _STARTS]
# Beyond the basic plane a first pass matches three ranges that hold every such letter but
# mathematical Greek (historic scripts, Adlam and its neighbours, the CJK extensions), and a run
# with such a character is matched again letter by letter: matching each of the 245 ranges in the
# first pass made it 100 times slower on ordinary English (1.8 ms against 17 us for 2 KB).
_ASTRAL = "\\U00010000-\\U0001bfff\\U0001e000-\\U0001eeff\\U00020000-\\U0003134f"
_BASIC = character_class((first, last) for first, last, _ in _STARTS if last < 0x10000)
_WITHIN = "[" + MARKS + MODIFIERS + "]*"  # a word's marks and length or iteration marks


def _words(letter: str) -> re.Pattern[str]:
    """Two letters at least, with what a word holds between them ("コーヒー", "नमस्ते")."""
    return re.compile(f"{letter}{_WITHIN}(?:{letter}{_WITHIN})+")


_WORDS = _words(f"[{_BASIC}{_ASTRAL}]")
_EXACT = _words("[" + character_class((first, last) for first, last, _ in _STARTS) + "]")

# Scripts whose one character is a syllable or a word: two make a name ("王伟"). Of the others a
# word is three characters or more: two Greek letters side by side are a formula ("πη", "δβ").
SYLLABIC = frozenset({"cjk", "hangul", "hiragana", "katakana", "yi", "bopomofo"})


def unread(text: str) -> list[Finding]:
    """Each run of `text`'s words in a script the detectors do not read, named by its script."""
    if text.isascii():
        return []
    found = []
    for start, run in _runs(text):
        script = script_of(run[0])
        if len(run) >= 3 or script in SYLLABIC:
            found.append(Finding(UNSCANNED, start, start + len(run), 1.0, SCRIPT + script))
    return found


def _runs(text: str) -> Iterator[tuple[int, str]]:
    for m in _WORDS.finditer(text):
        if max(m[0]) <= "\uffff":
            yield m.start(), m[0]
        else:  # an astral character: of an unread script's letters, or a digit, a symbol
            yield from ((m.start() + e.start(), e[0]) for e in _EXACT.finditer(m[0]))


def script_of(letter: str) -> str:
    """The script of a letter of a run `_runs` gave."""
    first, last, script = _STARTS[bisect.bisect_right(_FIRSTS, ord(letter)) - 1]
    assert first <= ord(letter) <= last  # `_runs` gives only runs that begin with such a letter
    return script
