"""The canonical reading's generated tables (`classifiers/models/reading_tables.json`, made by
`python -m research.reading_tables` from the libraries that keep them, never typed):

- `NUMERALS`: the characters with a numeric value from 0 to 9 that are no decimal digit, from
  Unicode's numeric properties (ideographic numerals such as 四 and 〇, circled and parenthesized
  digits, superscripts, Roman numerals one to nine);
- `MARKS`: the combining marks, which words in many scripts hold;
- `DIGIT_WORDS`: the words for 0 to 9 in 76 languages, from `num2words` and Unicode CLDR, with
  their unaccented and spoken forms; `NUMBER_WORDS`: those for 10 to 99 that are one word;
  `MAGNITUDE_WORDS`: in 65 of those languages, the words a number below 10,000 is said with past those ("hundred",
  "тысячи", "y"), or in 14 (`JOINED_LANGUAGES`) the parts of a word it is written in ("tausend" in
  "viertausendfünfhundert");
- `CHECKED_IDENTIFIERS`: the names of the personal identifiers python-stdnum checks, and its
  formats that check each;
- `UNREAD_LETTERS`: the letters of each script the detectors of names, places and health do not
  read (every one but Latin), and `MODIFIERS`, the modifier letters a word of them may hold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

TABLES_PATH = Path(__file__).resolve().parents[1] / "models" / "reading_tables.json"
MOST_RANGES = 64  # what `_scan.any_in` takes in one call

_TABLES = json.loads(TABLES_PATH.read_text(encoding="utf-8"))

# character -> the digit it is worth
NUMERALS: dict[str, str] = {
    chr(code): value
    for value, ranges in _TABLES["numerals"].items()
    for first, last in ranges
    for code in range(first, last + 1)
}


# language -> word (lower case) -> the digit it says
DIGIT_WORDS: dict[str, dict[str, str]] = _TABLES["digit_words"]
# language -> word (lower case) -> the number from 10 to 99 it says, in one word ("forty-five")
NUMBER_WORDS: dict[str, dict[str, str]] = _TABLES["number_words"]
# language -> word past tens (lower case) -> what it does in a number said (`said`: "500", "x100", "&")
MAGNITUDE_WORDS: dict[str, dict[str, str]] = _TABLES["magnitude_words"]
# the languages of those whose numbers are written in words made of parts ("viertausendfünfhundert")
JOINED_LANGUAGES: list[str] = _TABLES["joined_languages"]
# a personal identifier's name ("CPF", "Henkilötunnus") -> the python-stdnum formats that check it
CHECKED_IDENTIFIERS: dict[str, list[str]] = _TABLES["checked_identifiers"]
# a script no detector of names, places or health reads ("cyrillic") -> its letters' ranges
UNREAD_LETTERS: dict[str, list[list[int]]] = _TABLES["unread_letters"]


def covering(codes: list[int], most: int) -> tuple[tuple[int, int], ...]:
    """At most `most` ranges that hold every one of `codes` (and, where that many cannot hold them
    exactly, the fewest code points besides): the closest neighbours are joined first."""
    ranges: list[list[int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    while len(ranges) > most:
        gap = min(range(len(ranges) - 1), key=lambda i: ranges[i + 1][0] - ranges[i][1])
        ranges[gap : gap + 2] = [[ranges[gap][0], ranges[gap + 1][1]]]
    return tuple((first, last) for first, last in ranges)


_CODES = sorted(ord(ch) for ch in NUMERALS)
# Where such numerals are, for `_scan.any_in`: the basic plane's and the others', a call each.
BASIC_NUMERALS = covering([c for c in _CODES if c < 0x10000], MOST_RANGES)
ASTRAL_NUMERALS = covering([c for c in _CODES if c >= 0x10000], MOST_RANGES)


def character_class(ranges: Iterable[tuple[int, int] | list[int]]) -> str:
    """Code point ranges (first, last) as a regular expression's character class body."""
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges)


# A numeral or decimal digit, as a regular expression's character class body.
DIGIT_LIKE = r"\d" + character_class(covering(_CODES, len(_CODES)))
# The combining marks, as one: part of a word ("నాలుగు").
MARKS = character_class(_TABLES["marks"])
# The modifier letters (a length mark, an iteration mark: "コーヒー"), as one.
MODIFIERS = character_class(_TABLES["modifiers"])
