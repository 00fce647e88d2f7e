"""The canonical reading of a text: the one spelling of a private value that every structured
detector reads, whatever way it was written.

A private value can be written in many ways a pattern would miss: a card in Thai or Adlam digits,
in French words, with slashes, pipes or non-breaking hyphens between its groups; an address with
`(ät)` and `(punkt)`; a number broken over lines. Instead of a detector for each spelling, a text
is read once into a normal form, and the detectors read that:

- every script's decimal digits, in every plane, as ASCII digits, and every other character
  Unicode gives a digit's value (四 〇 肆 ④ ² Ⅸ: `classifiers.privacy.tables`, generated) as
  that digit; a mark on a digit or enclosing it (a keycap, a circle) as nothing; compatibility
  forms (full-width letters and signs) as their plain forms; invisible characters (zero-width
  spaces and joiners, soft hyphens, bidirectional marks, private use characters) as nothing, and
  tag characters (U+E0020 to U+E007E, which spell ASCII unseen) as the ASCII they spell; JSON's
  `\\uXXXX` escapes as their characters;
- numbers said in words, in 76 languages, as their digits (`worded.read`): "четыре пять три девять",
  "four thousand five hundred and thirty-nine", "viertausendfünfhundertneununddreißig";
- a spelled-out `@` and `.` of an address (`AT_WORDS`, `DOT_WORDS`, bracketed, braced or spaced:
  `jane dot roe (ät) example (punkt) de`) as the characters;
- any run of `SEPARATORS` between groups of digits (`4771.3397.2301.6870`, `601/69/2640`,
  `4111 | 1111`, `4539:2373`, a line break) as one space, a sentence's closing punctuation left
  where it is; any other script's punctuation or symbol there (`4539、2373`, `4539→2373`) too.

Each step is a table or a character property: a new spelling is an entry, not a detector. Each
character of the reading knows where in the text it came from (`rewriting.Reading`), so that what
is found there is masked whole where it was written. Only what a text holds the cues of is read
(most texts are ASCII prose with none of them, and have no canonical reading to make).
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from classifiers import _scan
from classifiers.privacy import worded
from classifiers.privacy.anchors import Anchors, Hits
from classifiers.privacy.links import DEEP_TLDS, TLDS
from classifiers.privacy.luhn import CARD_GROUPINGS, SSN_GROUPING, luhn_ok
from classifiers.privacy.rewriting import Reading, as_written, rewritten
from classifiers.privacy.tables import (
    ASTRAL_NUMERALS,
    BASIC_NUMERALS,
    DIGIT_LIKE,
    NUMERALS,
    character_class,
    covering,
)
from classifiers.privacy.worded import DIGIT_WORD_CUES

# --- the tables ----------------------------------------------------------------------------------
# A spelled-out at sign and dot of an e-mail address, in those languages. Bracketed, braced or
# between spaces: a bare word ("at") is only one where an address stands around it.
AT_WORDS = ("at", "ät", "aet", "arobase", "arroba", "chiocciola", "klammeraffe", "apenstaart", "apenstaartje", "@")
DOT_WORDS = ("dot", "point", "punkt", "punto", "ponto", "punt", ".")
# What may stand between the groups of a number's digits: white space and every ASCII character
# that is no letter or digit. The ones that join a number's groups in print (dots, commas,
# slashes, underscores, pipes, every dash) are read as such; the others (LOOSE: "4539:2373",
# "4539*2373") join numbers in sums, ratios, prices and times far more often ("150 + 400 + 200",
# "1:9:35:82", "$25000 $20000"), and a run joined by them is read only where it has a printed
# card's grouping. Other scripts' punctuation and symbols between digits fold to one
# of them, "~" (`fold`): "4539、2373", "4539→2373", but "11 • 11 • 11" is no phone.
LOOSE = "".join(chr(c) for c in range(0x21, 0x7F) if not chr(c).isalnum() and chr(c) not in ".,/\\_|-")
SEPARATORS = (
    " \t\r\n\u00a0\u202f\u2009.,/\\_|-" + LOOSE + "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u00b7\u30fb\uff0d\u2027"
)
AS_LOOSE = "~"  # what another script's punctuation or symbol between a number's groups folds to
MOST_SEPARATORS = 3  # characters between two groups of one number
NUMBER_DIGITS = 7  # a number this long, or longer, is read with its separators as one space
# Where such numbers can be, found in the scan's one pass (a window spec, `classifiers.scan`): its
# separators are the ASCII ones; a text with another one (a dash, a middle dot) is folded first,
# which reads each as "-", and the folded text is read whole.
SEPARATED_WINDOWS = ("", "".join(c for c in SEPARATORS if c.isascii()), MOST_SEPARATORS, NUMBER_DIGITS, 1, 0)
_AS_HYPHEN = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u00b7\u30fb\u2027"

_AT = "|".join(re.escape(w) for w in AT_WORDS if w != "@")
_DOT = "|".join(re.escape(w) for w in DOT_WORDS if w != ".")
# An at sign spelled out: a word of AT_WORDS in brackets, braces or angle brackets, or between
# spaces; "@" itself with spaces around it.
_AT_SIGN = re.compile(rf"(?i)\s*[\[({{<]\s*(?:{_AT}|@)\s*[\])}}>]\s*|\s+(?:{_AT})\s+|\s+@\s*|\s*@\s+")
# A dot spelled out the same ways; "." itself with spaces on both sides (". " alone ends a sentence).
_DOT_SIGN = rf"(?:\s*[\[({{<]\s*(?:{_DOT}|\.)\s*[\])}}>]\s*|\s+(?:{_DOT})\s+|\s+\.\s+|\.)"
_DOMAIN = re.compile(rf"(?i)([a-z0-9-]+(?:{_DOT_SIGN}[a-z0-9-]+)+)(?![\w@])")
_LOCAL = re.compile(rf"(?i)(?<![\w@.])([a-z0-9_+-]+(?:{_DOT_SIGN}[a-z0-9_+-]+)*)$")
_DOT_SPLIT = re.compile(_DOT_SIGN, re.IGNORECASE)
_SPACED_LETTERS = re.compile(r"(?i)(?<![\w.])((?:[a-z0-9] ){2,}[a-z0-9])$")
# "@" is a cue with white space of any kind on either side of it ("jane @example.com").
AT_CUES = Anchors((), tuple(dict.fromkeys(
    [f"{s}@" for s in " \t\r\n"] + [f"@{s}" for s in " \t\r\n"] + [f" {w} " for w in AT_WORDS if w != "@"]
    + [f"{o}{w}" for w in AT_WORDS for o in "([{<"]
    + [f"{o} {w}" for w in AT_WORDS for o in "([{<"]
)))  # fmt: skip
_NOT_A_MAILBOX = frozenset({"look", "meet", "me", "us", "him", "her", "them", "it", "arrive", "stay", "be", "is"})

_SEPARATOR_CLASS = "[" + re.escape(SEPARATORS) + "]"
# Groups of digits joined by separator runs, NUMBER_DIGITS digits in all at the least (checked when
# read); a run of separators that are all one plain space, or one hyphen, needs no rewriting.
_SEPARATED = re.compile(rf"\d+(?:{_SEPARATOR_CLASS}{{1,{MOST_SEPARATORS}}}\d+)+")
_GAPS = re.compile(rf"{_SEPARATOR_CLASS}{{1,{MOST_SEPARATORS}}}")


# --- folded --------------------------------------------------------------------------------------
# What `fold` reads one character at a time: escapes, and every character but ASCII and the letters
# NFKC leaves as they are (Latin-1's, Cyrillic, Arabic, Thai, kana, CJK ideographs, Hangul), which
# it copies in runs. Character by character, a Chinese text cost 2 us a character to fold.
# JSON's escape of a character above U+FFFF: a surrogate pair ("\\ud83a\\udd54"), its two halves
# the groups; `astral` reads it as the one character it stands for.
ESCAPED_PAIR = r"\\u([dD][89abAB][0-9A-Fa-f]{2})\\u([dD][c-fC-F][0-9A-Fa-f]{2})"


def astral(high: str, low: str) -> str:
    """The character a surrogate pair's two halves (hexadecimal) stand for."""
    return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)


# The scripts whose letters the fold copies as they are, unread (a text in them folds as fast as
# ASCII): Latin-1, Cyrillic, Arabic, Thai, kana, CJK ideographs, Hangul. Their punctuation,
# symbols and marks (฿, ҂, a Thai tone mark) are read like any other script's.
_COPIED_SCRIPTS = (
    (0xC0, 0xFF), (0x400, 0x4FF), (0x620, 0x64A), (0xE01, 0xE5B), (0x3041, 0x3096), (0x30A1, 0x30FA),
    (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
)  # fmt: skip


def _letters(scripts: tuple[tuple[int, int], ...]) -> str:
    """The letters in `scripts`, as a character class's ranges."""
    codes = [c for first, last in scripts for c in range(first, last + 1) if unicodedata.category(chr(c))[0] == "L"]
    return character_class(covering(codes, len(codes)))


_COPIED = "\x00-\x7f" + _letters(_COPIED_SCRIPTS)
_COPIED_NUMERALS = "".join(ch for ch in NUMERALS if re.fullmatch(f"[{_COPIED}]", ch))  # 一 四 伍 in the CJK run
_TO_FOLD = re.compile(ESCAPED_PAIR + r"|\\u([0-9A-Fa-f]{4})" + f"|[^{_COPIED}]|[{_COPIED_NUMERALS}]")
# Tag characters (U+E0020 to U+E007E) spell ASCII invisibly, one for one, and a model reads them.
TAGS = (0xE0020, 0xE007E)
_AS_DOT = "\u2024\u3002\uff61"


def fold(text: str) -> Reading:
    """The text with its compatibility forms, other scripts' digits and escapes read as plain
    characters, and its invisible characters read as nothing."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for m in _TO_FOLD.finditer(text):
        if m.start() > at:  # a run that folds to itself: copied whole
            as_written(text, at, m.start(), out, starts, ends)
        at = m.end()
        if m.group(1):  # a character above U+FFFF, escaped as JSON writes it: a surrogate pair
            ch = astral(m.group(1), m.group(2))
        else:
            ch = chr(int(m.group(3), 16)) if m.group(3) else m.group()
        if ch.isascii():
            folded = ch
        elif TAGS[0] <= ord(ch) <= TAGS[1]:
            folded = chr(ord(ch) - 0xE0000)  # what the tag spells, as a model reads it
        elif invisible(ch):
            continue  # invisible: read as if it were not there
        elif (digit := unicodedata.decimal(ch, None)) is not None:
            folded = str(digit)  # any script's decimal digit, in any plane (NFKC leaves most as they are)
        elif (numeral := NUMERALS.get(ch)) is not None:
            folded = numeral  # a numeral worth a digit: 四, 〇, ①, ², Ⅳ
        elif _mark_on_digit(ch, out):
            continue  # an enclosing mark (a keycap, a circle), or any mark on a digit: the digit is what it says
        elif ch in _AS_HYPHEN:
            folded = "-"  # a dash, a minus, a middle dot: what may join a number's groups
        else:
            folded = "." if ch in _AS_DOT else unicodedata.normalize("NFKC", ch)
            if not folded.isascii() and _between_digits(text, m.start(), at):
                folded = AS_LOOSE  # any other script's punctuation or symbol between a number's groups
        out.append(folded)
        starts += [m.start()] * len(folded)
        ends += [at] * len(folded)
    if at < len(text):
        as_written(text, at, len(text), out, starts, ends)
    return Reading("".join(out), starts, ends)


# --- the steps -----------------------------------------------------------------------------------
def spelled(text: str, ats: list[int] | None = None) -> Reading | None:
    """Each address whose at sign and dots are spelled out, as it is written plainly; its at sign
    where the scan found an `AT_CUES` literal (`ats`), else anywhere in the text."""
    spans: list[tuple[int, int, list[tuple[str, int, int]]]] = []
    end = 0
    signs = (
        _AT_SIGN.finditer(text)
        if ats is None
        else (m for at in _spaced_back(text, ats) if (m := _AT_SIGN.match(text, at)))
    )
    for sign in signs:
        if sign.start() < end:
            continue
        domain = _DOMAIN.match(text, sign.end())
        if domain is None:
            continue
        labels = _labels(text, domain.start(), domain.end())
        if _bare_at(sign.group()) and not _english_dots(text, labels):
            continue  # "the river at one point in": "at" in prose pairs with "dot" alone
        top = text[labels[-1][0] : labels[-1][1]]
        if len(labels) < 2 or not top.isalpha() or not 2 <= len(top) <= 24:
            continue
        if _one_sided(sign.group()) and top.lower() not in _HOSTS:
            continue  # "thanks @jane.doe", "\n    @app.route": a handle, a decorator
        local = _LOCAL.search(text, max(0, sign.start() - 128), sign.start())
        spaced_out = _SPACED_LETTERS.search(text, max(0, sign.start() - 128), sign.start())
        if spaced_out is not None and (local is None or spaced_out.start() < local.start()):
            mailbox = [(text[i], i, i + 1) for i in range(spaced_out.start(), spaced_out.end()) if text[i] != " "]
            start = spaced_out.start()
        elif local is not None and local.group(1).lower() not in _NOT_A_MAILBOX:
            mailbox = joined_labels(text, _labels(text, local.start(), local.end()))
            start = local.start()
        else:
            continue
        pieces = [*mailbox, ("@", sign.start(), sign.end()), *joined_labels(text, labels)]
        spans.append((start, domain.end(), pieces))
        end = domain.end()
    return rewritten(text, spans)


_BARE_AT = re.compile(r"(?i)\s+at\s+")
_ENGLISH_DOT = re.compile(r"(?i)\s+dot\s+|\.|\s*[\[({<].*[\])}>]\s*|\s+\.\s+")


def _bare_at(sign: str) -> bool:
    """Whether a spelled-out at sign is the English word between spaces (prose's "at")."""
    return _BARE_AT.fullmatch(sign) is not None


_HOSTS = frozenset((*TLDS, *DEEP_TLDS))


def _one_sided(sign: str) -> bool:
    """Whether an at sign is "@" with white space on one side only ("jane @example.com")."""
    return sign.strip() == "@" and not (sign[0].isspace() and sign[-1].isspace())


def _english_dots(text: str, labels: list[tuple[int, int]]) -> bool:
    """Whether every dot between `labels` is "dot", ".", or bracketed: what may follow a bare "at"."""
    return all(_ENGLISH_DOT.fullmatch(text[labels[i - 1][1] : labels[i][0]]) for i in range(1, len(labels)))


def _spaced_back(text: str, places: list[int]) -> list[int]:
    """Each place moved back over the white space before it (an at sign's match takes it in)."""
    moved = set()
    for at in places:
        while at > 0 and text[at - 1].isspace():
            at -= 1
        moved.add(at)
    return sorted(moved)


def _labels(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The labels of a mailbox or domain between `start` and `end`: what lies between its dots,
    spelled out or not."""
    labels, at = [], start
    for dot in _DOT_SPLIT.finditer(text, start, end):
        labels.append((at, dot.start()))
        at = dot.end()
    labels.append((at, end))
    return labels


def joined_labels(text: str, labels: list[tuple[int, int]]) -> list[tuple[str, int, int]]:
    """The labels as pieces, with a dot, located on what stood between them, between each two."""
    pieces: list[tuple[str, int, int]] = []
    for i, (start, end) in enumerate(labels):
        if i:
            pieces.append((".", labels[i - 1][1], start))
        pieces += [(text[j], j, j + 1) for j in range(start, end)]
    return pieces


def separated(text: str, windows: list[tuple[int, int]] | None = None) -> Reading | None:
    """Each number of `NUMBER_DIGITS` digits or more whose groups are joined by separators other
    than one space or one hyphen, with each run of them read as one space; within `windows` (where
    the scan found such numbers), else in the whole text."""
    spans: dict[int, tuple[int, int, list[tuple[str, int, int]]]] = {}  # by where each gap starts
    found = (
        _SEPARATED.finditer(text)
        if windows is None
        else (m for start, end in windows for m in _SEPARATED.finditer(text, start, end))
    )
    for m in found:
        gaps = list(_GAPS.finditer(text, m.start(), m.end()))
        for first, last in _numbers_in(text, m.start(), m.end(), gaps):
            spans.update((g.start(), (g.start(), g.end(), [(" ", g.start(), g.end())])) for g in gaps[first:last])
    return rewritten(text, [spans[at] for at in sorted(spans)])


def _numbers_in(text: str, start: int, end: int, gaps: list[re.Match[str]]) -> list[tuple[int, int]]:
    """The numbers in a run of digit groups (text[start:end], its `gaps` between them), each as the
    range of its gaps. A run is cut where a clause ends ("What is 2+2? 4111\n1111\n1111\n1111");
    a piece joined by one kind of separator is one number where `_one_kind` reads it so; in a piece
    of mixed ones, each stretch that is a card's or an SSN's shape is one."""
    ends = [k for k, gap in enumerate(gaps) if _CLAUSE_END.fullmatch(gap.group())]
    if ends:
        found: list[tuple[int, int]] = []
        for first, last in zip([-1, *ends], [*ends, len(gaps)], strict=True):
            piece = (gaps[first].end() if first >= 0 else start, gaps[last].start() if last < len(gaps) else end)
            found += [(first + 1 + a, first + 1 + b) for a, b in _numbers_in(text, *piece, gaps[first + 1 : last])]
        return found
    run = text[start:end]
    if len(run) - sum(g.end() - g.start() for g in gaps) < NUMBER_DIGITS or all(g.group() in (" ", "-") for g in gaps):
        return []  # too short to be an identifier, or as the patterns read it already
    if len({_kind(g.group()) for g in gaps}) == 1 and not _loose(gaps[0].group()):
        return [] if not _one_kind(run, [g.group() for g in gaps]) or _read_as_written(run) else [(0, len(gaps))]
    return _shaped(text, start, end, gaps)


def _loose(gap: str) -> bool:
    return any(c in LOOSE for c in gap)


# Sentence punctuation then white space ("2+2? 4111 1111 1111 1111"): where a sentence or a
# clause ends, so no number of mixed separators goes across it.
_CLAUSE_END = re.compile(r"[.?!;:,]\s+")


def _kind(gap: str) -> str:
    """A gap's kind of separator: its marks, with white space as one space ("? " is not "?")."""
    return re.sub(r"\s+", " ", gap)


def _shaped(text: str, start: int, end: int, gaps: list[re.Match[str]]) -> list[tuple[int, int]]:
    """Stretches of a run of digit groups joined by mixed separators (text[start:end], its `gaps`)
    that are a card's or an SSN's shape, as ranges of gaps. Where such stretches share a group, the
    one of fewer kinds of separator wins, then the longer ("2+2 4111\n1111\n1111\n1111": the card
    joined by line breaks, not a chance Luhn pass from the first 2)."""
    bounds = [start] + [g.end() for g in gaps]
    lengths = [stop - begin for begin, stop in zip(bounds, [g.start() for g in gaps] + [end], strict=True)]
    loose = [_loose(g.group()) for g in gaps]
    kinds = [_kind(g.group()) for g in gaps]
    shapes: list[tuple[int, int, int]] = []  # kinds of separator, first group, last group
    for a in range(len(gaps)):
        digits, joined_loosely = lengths[a], False
        for b in range(a + 1, len(gaps) + 1):
            digits += lengths[b]
            joined_loosely |= loose[b - 1]
            if digits > MOST_CARD_DIGITS:
                break
            if digits < LEAST_CARD_DIGITS and digits != sum(SSN_GROUPING):
                continue
            shape = tuple(lengths[a : b + 1])
            if joined_loosely and shape not in CARD_GROUPINGS:
                continue  # joined by what joins sums and ratios too: only a printed card's grouping
            if shape == SSN_GROUPING or (digits >= LEAST_CARD_DIGITS and luhn_ok(_digits(text, bounds, shape, a))):
                shapes.append((len(set(kinds[a:b])), a, b))
    found: list[tuple[int, int]] = []
    for _, a, b in sorted(shapes, key=lambda shape: (shape[0], shape[1] - shape[2])):
        if all(b < first or last < a for first, last in found):
            found.append((a, b))
    return sorted(found)


# What the patterns read as written, and read better so: an IPv4 address, and a date with its
# year in four digits ("10.118.77.22", "1/21/1998", "21.01.1998", "1998/01/21").
_IPV4 = re.compile(r"(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}")
_DATE = re.compile(r"(\d{1,2})([./-])(\d{1,2})\2(?:19|20)\d\d|(?:19|20)\d\d([./-])(\d{1,2})\4(\d{1,2})")


def _read_as_written(run: str) -> bool:
    if _IPV4.fullmatch(run):
        return True
    date = _DATE.fullmatch(run)
    if date is None:
        return False
    first, second = (date[1], date[3]) if date[1] else (date[5], date[6])
    return all(1 <= int(part) <= 31 for part in (first, second)) and min(int(first), int(second)) <= 12


LEAST_CARD_DIGITS, MOST_CARD_DIGITS = 13, 19


def _digits(text: str, bounds: list[int], lengths: tuple[int, ...], first: int) -> str:
    """The digits of the groups of `lengths` from group `first` on, each starting at its bound."""
    return "".join(text[bounds[first + i] : bounds[first + i] + n] for i, n in enumerate(lengths))


_THOUSANDS = re.compile(r"\d{1,3}(?:([,.' ])\d{3})+")


def _one_kind(run: str, gaps: list[str]) -> bool:
    """Whether a run of digit groups joined by one kind of separator is one identifier: no gap a
    list's comma (", "), groups between commas of three digits or more, and the groups no number's
    thousands ("200,000,000"; "89, 71, 92" and "11,13,15" are lists). Mixed separators
    ("4111,1111/1111|1111", "123_45|6789") hide a value as well as one kind does, but they also
    join what is many numbers (ranges, coordinates, a date and a time): `_shaped` reads those."""
    if any(", " in gap or ",\n" in gap for gap in gaps):
        return False
    groups = re.findall(r"\d+", run)
    if {gap.strip() for gap in gaps} == {","} and min(map(len, groups)) < 3:
        return False  # "11,13,15,17": a list written tight
    return _THOUSANDS.fullmatch(run) is None


# --- the reading ---------------------------------------------------------------------------------
# The characters that show nothing (zero-width spaces and joiners, the soft hyphen, direction
# marks, variation selectors, Hangul fillers): a value or a name with one inside reads as without.
INVISIBLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0),
)  # fmt: skip
_HIDING = INVISIBLE + (
    (0xFF0B, 0xFF0B), (0xFF0D, 0xFF0E), (0xFF10, 0xFF19), (0xFF20, 0xFF3A), (0xFF3F, 0xFF3F),
    (0xFF41, 0xFF5A), (0x2080, 0x2089), (0x2070, 0x2079), (0x2460, 0x24FF), (0x1D400, 0x1D7FF),
    (0xE000, 0xF8FF), (0xE0000, 0xE007F), (0xF0000, 0x10FFFF),  # private use, tags
    (0x0488, 0x0489), (0x20DD, 0x20E4), (0xA670, 0xA672),  # enclosing marks: a keycap, a circle
)  # fmt: skip
# A digit, then at most two spaces or ASCII marks, then a character that is no ASCII, no letter or
# digit and no space: a mark on the digit, or another script's punctuation or symbol, perhaps
# between a number's groups.
_SYMBOL_BY_DIGIT = re.compile(r"\d[\s!-/:-@\[-`{-~]{0,2}([^\x00-\x7f\w\s])")


def invisible(ch: str) -> bool:
    """Whether a character shows nothing a reader can read: a format character, one of
    `INVISIBLE`, or a private use one (no font but its own says what it is)."""
    return unicodedata.category(ch) in ("Cf", "Co") or any(first <= ord(ch) <= last for first, last in INVISIBLE)


def _mark_on_digit(ch: str, out: list[str]) -> bool:
    """Whether `ch` is an enclosing mark, or a mark on the digit read just before it."""
    category = unicodedata.category(ch)
    return category == "Me" or (category in ("Mn", "Mc") and bool(out) and out[-1][-1:].isdigit())


def _digit_like(ch: str) -> bool:
    return ch.isdigit() or ch in NUMERALS


def _between_digits(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] stands between two digits with nothing but separators, marks and
    symbols, a few (`_REACH`), on each side: "4111 → 1111", or a symbol NFC spells with its marks."""
    return _digit_beside(text, start - 1, -1) and _digit_beside(text, end, 1)


_REACH = MOST_SEPARATORS + 2


def _digit_beside(text: str, at: int, step: int) -> bool:
    """Whether the first letter or digit from `at` on, `step` by `step` and within `_REACH`, is a digit."""
    for i in range(at, at + step * _REACH, step):
        if not 0 <= i < len(text):
            return False
        if _digit_like(text[i]):
            return True
        if text[i].isalnum():
            return False
    return False


_PUNCTUATION = (
    (0xFF01, 0xFF0A), (0xFF0C, 0xFF0C), (0xFF0F, 0xFF0F), (0xFF1A, 0xFF1F), (0xFF3B, 0xFF3E),
    (0xFF40, 0xFF40), (0xFF5B, 0xFF5E), (0x2024, 0x2024), (0x2027, 0x2027), (0x3002, 0x3002),
    (0xFF61, 0xFF61),
)  # fmt: skip
_DIGITS_AND_AT = ((0x30, 0x39), (0x40, 0x40))


def _digit_ranges(first: int, last: int) -> tuple[tuple[int, int], ...]:
    """Every other script's decimal digits between two code points, as (first, last) ranges: each
    script's ten stand together, zero first."""
    zeros = [c for c in range(first, last) if unicodedata.decimal(chr(c), None) == 0]
    return tuple((zero, zero + 9) for zero in zeros)


# Found in C (a regex for them cost 0.05 us a character), in two calls of at most 64 ranges each:
# those of the basic plane, and those above it (Adlam's, Osmanya's, the mathematical ones). Every
# astral script's digits stand in the supplementary multilingual plane; the planes above it hold
# ideographs and private use, and reading them all cost 80 ms at import.
OTHER_DIGITS = _digit_ranges(0x80, 0x10000)
ASTRAL_DIGITS = _digit_ranges(0x10000, 0x20000)


def foldable(text: str) -> bool:
    """Whether folding changes anything of `text` that a value could be written with."""
    if text.isascii():
        return False
    # (`any_in` answers at once for astral ranges where the text's storage holds none)
    if _scan.any_in(text, _HIDING) or _scan.any_in(text, OTHER_DIGITS) or _scan.any_in(text, ASTRAL_DIGITS):
        return True
    if (_scan.any_in(text, BASIC_NUMERALS) or _scan.any_in(text, ASTRAL_NUMERALS)) and any(
        any(c in NUMERALS for c in run.group()) for run in _NUMERAL_RUN.finditer(text)
    ):
        return True
    if not _scan.any_in(text, _DIGITS_AND_AT):
        return False
    if _scan.any_in(text, _PUNCTUATION):
        return True
    # a mark on a digit, or a symbol between a number's groups
    return any(_between_digits(text, m.start(1), m.end(1)) for m in _SYMBOL_BY_DIGIT.finditer(text))


# Numerals matter where they write a number an identifier could be (`NUMBER_DIGITS` digits or
# numerals, a few separators apart at most): 一 and 二 are in most Chinese sentences,
# "一三八〇〇一三八〇〇〇" in few.
_NUMERAL_RUN = re.compile(rf"[{DIGIT_LIKE}](?:\W{{0,{MOST_SEPARATORS}}}[{DIGIT_LIKE}]){{{NUMBER_DIGITS - 1},}}")


class Cues(NamedTuple):
    """What a text holds of the canonical reading's cues (from the scan's one pass)."""

    fold: bool  # other scripts' digits, invisible characters, compatibility forms, `\\uXXXX`
    numbers: list[tuple[int, int]]  # where numbers of seven digits or more have separators (SEPARATED_WINDOWS)
    ats: list[int]  # where an at sign may be spelled out, or "@" stand with spaces (AT_CUES' hits)
    worded: list[tuple[int, int]]  # where digit words stand close enough to be a number read aloud


_CUES = AT_CUES + DIGIT_WORD_CUES
_TAKEN = frozenset(_CUES.folded)
_DIGIT_WORD = frozenset(DIGIT_WORD_CUES.folded)


def taken_cues(text: str, hits: Hits) -> tuple[list[int], list[tuple[int, int]]]:
    """The spelled at signs' places and the worded numbers' windows, taking their cues' literals
    out of `hits` (a scan's of `text`, which found `AT_CUES` and `DIGIT_WORD_CUES` among the rest)."""
    present = _TAKEN.intersection(hits)  # walks the text's few hits, not the cues
    if not present:
        return [], []
    taken = {literal: hits.pop(literal) for literal in present}
    ats = sorted(at for literal, places in taken.items() if literal not in _DIGIT_WORD for at in places)
    said = {literal: places for literal, places in taken.items() if literal in _DIGIT_WORD}
    return ats, worded.windows(text, said) if said else []


def cues_of(text: str) -> Cues:
    """The cues of a text the reading rewrote, found again in it (in C: reading a rewritten text
    whole cost 0.15 ms a conversation's turn). Folding is done by then."""
    ats, worded = taken_cues(text, _CUES.find(text))
    return Cues(False, _scan.windows(text, SEPARATED_WINDOWS), ats, worded)


def canonical(text: str, cues: Cues) -> Reading | None:
    """The canonical reading of `text`, or None where it is the text itself: folded, then its
    digit words, spelled at signs and separated numbers read, each step where its cues are (found
    again in a text a step rewrote)."""
    reading: Reading | None = None
    if cues.fold:
        folded = fold(text)
        if folded.text != text:
            reading = folded
            cues = cues_of(folded.text)
    current = reading.text if reading is not None else text
    if cues.worded and (made := worded.read(current, cues.worded)) is not None:
        reading, current = _then(reading, made), made.text
        cues = cues_of(current)
    if cues.ats and (made := spelled(current, cues.ats)) is not None:
        reading, current = _then(reading, made), made.text
        cues = cues_of(current)
    if cues.numbers and (made := separated(current, cues.numbers)) is not None:
        reading = _then(reading, made)
    return reading


def _then(reading: Reading | None, made: Reading) -> Reading:
    return made if reading is None else reading.then(made)
