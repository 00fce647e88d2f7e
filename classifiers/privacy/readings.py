"""Other ways of reading a text, for private data written so that the patterns would miss it.

- Folded: Unicode compatibility forms (full-width `＠` and digits), every script's decimal digits
  as ASCII ones (`٤١١١`, `४१११`), invisible characters removed (zero-width spaces and joiners,
  soft hyphens, bidirectional marks), and dots between groups of digits read as spaces
  (`4111.1111.1111.1111`).
- Broken: line breaks and tabs between a number's digits read as spaces (`4111\n1111\n...`).
- Spelled: `jane dot roe at example dot com`; digits written as words where four or more stand in a
  row (`four one one one ...`).
- Encoded: percent-encoded runs (`jane%40example.com`), HTML character references (`&#52;&#x31;`),
  base64 runs and hexadecimal runs of text (`34313131...`) decoded, within a size bound, and scanned
  as text.

Each finding is located in the original text (a folded or percent-decoded reading maps each of
its characters back; a base64 run is found whole), so that redaction masks it where it is. A
base64 run too long to decode is reported as UNSCANNED: what cannot be read is never taken for
clean.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple
from urllib.parse import unquote

from classifiers import _scan
from classifiers.privacy.anchors import Anchors, Hits
from classifiers.privacy.findings import STRUCTURED_TYPES, Finding

Scan = Callable[[str], list[Finding]]
MAX_DECODED = 64 * 1024  # characters of one encoded run decoded and scanned; longer ones are UNSCANNED
READ_AGAIN = frozenset(STRUCTURED_TYPES)

# What folding changes: invisible format characters, compatibility forms, odd dots and at signs.
# (first, last) code points, for `_scan.any_in`. Those that can hide or make up an identifier
# (invisible characters, full-width letters, digits, "@", ".", "+", "-" and "_", superscripts,
# circled and mathematical ones) are always read folded; full-width punctuation and the ideographic
# full stop only in a text that holds a digit or an "@" as well, which an identifier they could be
# in would: every Chinese and Japanese text holds "，" or "。", and folding it cost 2 us a character.
_HIDING = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFF0B, 0xFF0B), (0xFF0D, 0xFF0E),
    (0xFF10, 0xFF19), (0xFF20, 0xFF3A), (0xFF3F, 0xFF3F), (0xFF41, 0xFF5A), (0x2080, 0x2089),
    (0x2070, 0x2079), (0x2460, 0x24FF), (0x1D400, 0x1D7FF),
)  # fmt: skip
_PUNCTUATION = (
    (0xFF01, 0xFF0A), (0xFF0C, 0xFF0C), (0xFF0F, 0xFF0F), (0xFF1A, 0xFF1F), (0xFF3B, 0xFF3E),
    (0xFF40, 0xFF40), (0xFF5B, 0xFF5E), (0x2024, 0x2024), (0x2027, 0x2027), (0x3002, 0x3002),
    (0xFF61, 0xFF61),
)  # fmt: skip
_DIGITS_AND_AT = ((0x30, 0x39), (0x40, 0x40))
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
# The bits of `_scan.reading_cues(text)`: `_ESCAPE` matches; "%" is in the text; "&#" is; a number
# broken over lines (`_BROKEN_NUMBER`) with seven ASCII digits or more in the text.
_CUE_ESCAPE, _CUE_PERCENT, _CUE_ENTITY, _CUE_BROKEN = 1, 2, 4, 8
# What `fold` reads one character at a time: escapes, and every character but ASCII and the letters
# NFKC leaves as they are (Latin-1's, Cyrillic, Arabic, Thai, kana, CJK ideographs, Hangul), which
# it copies in runs. Character by character, a Chinese text cost 2 us a character to fold.
_TO_FOLD = re.compile(
    r"\\u([0-9A-Fa-f]{4})|[^\x00-\x7fÀ-ÖØ-öø-ÿЀ-ӿ\u0620-\u064a\u0e01-\u0e32\u0e34-\u0e5b"
    r"\u3041-\u3096\u30a1-\u30fa\u4e00-\u9fff\uac00-\ud7a3]"
)
_DOTTED_DIGITS = re.compile(r"(?<![\d.])\d{2,6}(?:\.\d{2,6}){2,}(?![\d.])")
# Separators need white space or brackets around their word, so that no letters can be read two
# ways (that ambiguity would make the pattern backtrack exponentially on a crafted text).
_DOT = r"(?:\s+dot\s+|\s*[\[(]\s*dot\s*[\])]\s*|\.)"
_AT_BRACKETED = re.compile(r"(?i)[\[(]\s*at\s*[\])]")
_SPELLED_DOMAIN = re.compile(rf"(?i)([a-z0-9-]+(?:{_DOT}[a-z0-9-]+)+)(?![\w@])")
_SPELLED_LOCAL = re.compile(rf"(?i)(?<![\w@.])([a-z0-9_+-]+(?:{_DOT}[a-z0-9_+-]+)*)$")
_SPELLED_DOT = re.compile(_DOT, re.IGNORECASE)
_PERCENT_RUN = re.compile(r"[^\s\"'<>]*%[0-9A-Fa-f]{2}[^\s\"'<>]*")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}")
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){10,}(?![0-9A-Fa-f])")


# Spaces other than U+0020 (every other Unicode space separator: the no-break space of text pasted
# from web pages, PDFs and French typography, thin and ideographic spaces), the zero-width space
# and the byte-order mark. The patterns and the C scan join a number's groups and a name's words
# over plain spaces: "4111\u00a01111\u00a01111\u00a01111" was no card, and "Amara\u00a0Mensah" two names.
_SPACES = (
    (0x00A0, 0x00A0), (0x1680, 0x1680), (0x2000, 0x200B), (0x202F, 0x202F), (0x205F, 0x205F),
    (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)  # fmt: skip
_AS_SPACE = {c: " " for first, last in _SPACES for c in range(first, last + 1)}


def spaced(text: str) -> str:
    """`text` with each of those read as a plain space: one character for one, so that every
    position stays where it is. A text without one is not copied."""
    return text.translate(_AS_SPACE) if not text.isascii() and _scan.any_in(text, _SPACES) else text


# Where a spelled-out "at" can be, found in the scan's one pass (`classifiers.privacy.anchors`),
# in any case and at the text's own positions: a lower-cased copy's can differ ("İ" lowers to two
# characters, and an address after one was found three characters off, its mailbox left out).
SPELLED_AT = " at "
BRACKETED_ATS = ("(at", "( at", "[at", "[ at")
AT_CUES = Anchors((), (SPELLED_AT, *BRACKETED_ATS))


class Windows(NamedTuple):
    """Where the C scan saw runs worth reading again."""

    numbers: list[tuple[int, int]]  # seven digits or more: the only places dotted digits matter
    encoded: list[tuple[int, int]]  # 20 base64 characters or more
    ats: list[int]  # where " at " is, in any case
    bracketed_at: bool  # whether "(at", "[ at" or the like is there
    worded: bool  # whether four digit words stand close enough to be a number read aloud


def windows_of(hits: Hits, numbers: list[tuple[int, int]], encoded: list[tuple[int, int]]) -> Windows:
    """The windows, taking `AT_CUES`' and `DIGIT_WORD_CUES`' literals out of `hits`: no other
    reading looks for them, and a text left with no hits skips every cue's detector (a "one" or
    " at " is in half of all texts)."""
    if not hits:
        return Windows(numbers, encoded, [], False, False)
    ats = hits.pop(SPELLED_AT, [])
    present = _READINGS_CUES.intersection(hits)  # walks the text's few hits, not the cues
    if not present:
        return Windows(numbers, encoded, ats, False, False)
    taken = {literal: hits.pop(literal) for literal in present}
    words = [at for literal, at in taken.items() if literal in _DIGIT_WORDS]
    return Windows(numbers, encoded, ats, len(words) < len(taken), _worded(words))


def _worded(found: list[list[int]]) -> bool:
    """Whether the `DIGIT_WORD_CUES` `found` occur four times within `WORDED_SPAN` characters:
    only then can `_NUMBER_WORDS` match (searching every text for it cost 0.13 us a character, as
    much as the rest of the scan)."""
    if sum(map(len, found)) < 4:
        return False
    at = sorted(i for places in found for i in places)
    return any(at[k + 3] - at[k] <= WORDED_SPAN for k in range(len(at) - 3))


def reread(text: str, scan: Scan, windows: Windows, scan_decoded: Scan | None = None) -> list[Finding]:
    """Findings in `text` that only another reading shows, located in `text`. What a base64 or
    hexadecimal run decodes to is read with `scan_decoded` (every reading again: a file sent as a
    base64 `data:` URL may hold a card in Arabic digits), bounded because each decoding shortens."""
    scan_decoded = scan_decoded or scan
    extra: list[Finding] = []
    cues = _scan.reading_cues(text)  # the tests below that read the whole text, in one pass in C
    if (
        (not text.isascii() and _foldable(text))
        or cues & _CUE_ESCAPE
        or (windows.numbers and any(_DOTTED_DIGITS.search(text, start, end) for start, end in windows.numbers))
    ):
        extra += _folded(text, scan)
    if windows.ats or windows.bracketed_at:
        extra += _spelled(text, windows.ats)
    if cues & _CUE_PERCENT:
        extra += _percent_decoded(text, scan)
    if windows.encoded:
        runs = [m for start, end in windows.encoded for m in _BASE64_RUN.finditer(text, start, end)]
        extra += _decoded(text, runs, _base64, scan_decoded)
        hexes = [m for start, end in windows.encoded for m in _HEX_RUN.finditer(text, start, end)]
        extra += _decoded(text, hexes, _hex, scan_decoded)
    if cues & _CUE_ENTITY:
        extra += _mapped(_html_decoded(text), text, scan, "+entities")
    if cues & _CUE_BROKEN:
        extra += _mapped(_unbroken(text), text, scan, "+joined")
    if windows.worded:
        extra += _mapped(_worded_digits(text), text, scan, "+words")
    return extra


def _mapped(reading: Reading | None, text: str, scan: Scan, how: str) -> list[Finding]:
    """The structured findings only `reading` shows, located in `text`."""
    if reading is None:
        return []
    return [
        reading.located(f, len(text))._replace(detector=f"{f.detector}{how}")
        for f in scan(reading.text)
        if f.type in READ_AGAIN and f.end > f.start
    ]


# A line break or a tab between two digits (with spaces around it): one number broken over lines.
# Whether a text holds one (with seven ASCII digits or more, as any identifier broken so has) is
# `_CUE_BROKEN` (this pattern, its digits matched).
_BROKEN_NUMBER = re.compile(r"(?<=\d)[ \t]*[\r\n\t]\s*(?=\d)")


def _unbroken(text: str) -> Reading | None:
    """`text` with each break between digits read as spaces, one character for one."""
    joined = _BROKEN_NUMBER.sub(lambda m: " " * len(m.group()), text)
    if joined == text:
        return None
    return Reading(joined, list(range(len(text))), list(range(1, len(text) + 1)))


_DIGIT_WORDS = {
    "zero": "0", "oh": "0", "nought": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9",
}  # fmt: skip
_DIGIT_WORD = r"(?:zero|oh|nought|one|two|three|four|five|six|seven|eight|nine)"
DIGIT_WORD_CUES = Anchors((), tuple(_DIGIT_WORDS))  # found by the scan's one pass, in any case
_READINGS_CUES = frozenset((*BRACKETED_ATS, *_DIGIT_WORDS))  # the hits `windows_of` takes, but " at "
WORDED_SPAN = 3 * (len("nought") + len(" hyphen ")) + 1  # from the first of four digit words to the last
_GAP = r"(?:[\s,]+(?:dash\s+|hyphen\s+)?|\s*-\s*)"
# Four digit words or more in a row, by spaces, commas or dashes (said or written): a number read
# aloud ("one two three dash four five ..."); "one or two" or "two-thirds" are not
_NUMBER_WORDS = re.compile(rf"(?i)\b{_DIGIT_WORD}(?:{_GAP}{_DIGIT_WORD}){{3,}}\b")
_RUN_PART = re.compile(rf"(?i)\b({_DIGIT_WORD})\b|\b(dash|hyphen)\b|(-)")


def _worded_digits(text: str) -> Reading | None:
    """`text` with each run of digit words written as its digits, the spaces between them left out
    and a said or written dash kept ("one two three dash four five" -> "123-45"), each digit
    located on its word."""
    return _rewritten(
        text,
        ((run.start(), run.end(), _run_digits(text, run)) for run in _NUMBER_WORDS.finditer(text)),
    )


def _run_digits(text: str, run: re.Match[str]) -> list[tuple[str, int, int]]:
    return [
        (_DIGIT_WORDS[part.group(1).lower()] if part.group(1) else "-", part.start(), part.end())
        for part in _RUN_PART.finditer(text, run.start(), run.end())
    ]


# HTML's character references: decimal, hexadecimal and the named ones Python knows
_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _html_decoded(text: str) -> Reading | None:
    """`text` with its character references read as the characters they stand for (an unknown
    name as written)."""
    decoded = ((m, html.unescape(m.group())) for m in _CHARACTER_REFERENCE.finditer(text))
    return _rewritten(text, ((m.start(), m.end(), [(ch, m.start(), m.end())]) for m, ch in decoded if ch != m.group()))


def _rewritten(text: str, spans: Iterable[tuple[int, int, list[tuple[str, int, int]]]]) -> Reading | None:
    """`text` with each of `spans` (start, end, and what it reads as: pieces of text, each with
    where in `text` it comes from) read as written there, the rest as it is; None for no span."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for start, end, pieces in spans:
        _as_written(text, at, start, out, starts, ends)
        for chars, first, last in pieces:
            out.append(chars)
            starts += [first] * len(chars)
            ends += [last] * len(chars)
        at = end
    if not out:
        return None
    _as_written(text, at, len(text), out, starts, ends)
    return Reading("".join(out), starts, ends)


def _digit_ranges() -> tuple[tuple[int, int], ...]:
    """Every other script's decimal digits below U+10000, as (first, last) ranges: each script's
    ten stand together, zero first. (Above it, the mathematical digits are in `_HIDING`.)"""
    zeros = [c for c in range(0x80, 0x10000) if unicodedata.decimal(chr(c), None) == 0]
    return tuple((zero, zero + 9) for zero in zeros)


_OTHER_DIGITS = _digit_ranges()  # found in C: a regex for them cost 0.05 us a character


def _foldable(text: str) -> bool:
    if _scan.any_in(text, _HIDING) or _scan.any_in(text, _OTHER_DIGITS):
        return True
    return _scan.any_in(text, _PUNCTUATION) and _scan.any_in(text, _DIGITS_AND_AT)


# --- composed and unescaped: other readings that every detector reads --------------------------
class Reading(NamedTuple):
    """A text read another way, and for each of its characters where the text it came from starts
    and ends."""

    text: str
    starts: list[int]
    ends: list[int]

    def located(self, found: Finding, length: int) -> Finding:
        """`found` in this reading, located in the text it came from (`length` long)."""
        start = self.starts[found.start] if found.start < len(self.text) else length
        return found._replace(start=start, end=self.ends[found.end - 1] if found.end > found.start else start)


# A JSON text inside a string (a tool call's arguments, a pasted API payload) writes its line
# breaks, quotes and non-ASCII letters as escapes: "\nJane Roe" reads as the word "nJane", and
# "Jos\u00e9" as "Jos". A "\n", "\t" or "\r" before a small letter is LaTeX's (\neq, \theta,
# \right), not one.
_JSON_ESCAPED = re.compile(r'\\(?:[ntr](?![a-z])|["/]|u[0-9A-Fa-f]{4})')
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9A-Fa-f]{4})|(["\\/bfnrt]))')
_UNESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}


def unescaped(text: str) -> Reading | None:
    """The text with JSON's escapes read as what they stand for, or None for one that has none."""
    if "\\" not in text or _JSON_ESCAPED.search(text) is None:
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for m in _JSON_ESCAPE.finditer(text):
        out.append(text[at : m.start()])
        starts += range(at, m.start())
        ends += range(at + 1, m.start() + 1)
        out.append(chr(int(m.group(1), 16)) if m.group(1) else _UNESCAPED[m.group(2)])
        starts.append(m.start())
        ends.append(m.end())
        at = m.end()
    out.append(text[at:])
    starts += range(at, len(text))
    ends += range(at + 1, len(text) + 1)
    return Reading("".join(out), starts, ends)


def composed(text: str) -> Reading | None:
    """The composed reading of a text written with decomposed accents ("Jose\u0301", as macOS
    file names and some clients send it), or None for a text that is composed already (nearly all:
    telling costs 2 ns a character). Decomposed, a combining accent ends a word for every pattern
    and for the span model: "José García" was found as "Jose" and "Garci", "josé@example.com" not
    at all."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    start = 0
    for i in range(1, len(text) + 1):  # each starter with the marks that follow it
        if i < len(text) and unicodedata.combining(text[i]):
            continue
        piece = unicodedata.normalize("NFC", text[start:i])
        out.append(piece)
        starts += [start] * len(piece)
        ends += [i] * len(piece)
        start = i
    return Reading("".join(out), starts, ends)


# --- folded --------------------------------------------------------------------------------
def fold(text: str) -> tuple[str, list[int], list[int]]:
    """The folded text, and for each of its characters where the text it came from starts and ends.

    JSON's `\\uXXXX` escapes are read as the characters they stand for (tool call arguments are JSON
    text inside a JSON string, and a zero-width space there is six ASCII characters)."""
    out: list[str] = []
    origin: list[int] = []
    ends: list[int] = []
    at = 0
    for m in _TO_FOLD.finditer(text):
        if m.start() > at:  # a run that folds to itself: copied whole
            out.append(text[at : m.start()])
            origin += range(at, m.start())
            ends += range(at + 1, m.start() + 1)
        at = m.end()
        ch = chr(int(m.group(1), 16)) if m.group(1) else m.group()
        if ch.isascii():
            folded = ch
        elif unicodedata.category(ch) == "Cf" or ch in "\u00ad\u034f\u115f\u1160\u3164\uffa0":
            continue  # invisible: read as if it were not there
        elif (digit := unicodedata.decimal(ch, None)) is not None:
            folded = str(digit)  # any script's decimal digit (NFKC leaves Arabic-Indic ones as they are)
        else:
            folded = "." if ch in "\u2024\u2027\u3002\uff61" else unicodedata.normalize("NFKC", ch)
        out.append(folded)
        origin += [m.start()] * len(folded)
        ends += [at] * len(folded)
    if at < len(text):
        out.append(text[at:])
        origin += range(at, len(text))
        ends += range(at + 1, len(text) + 1)
    folded_text = "".join(out)
    for m in _DOTTED_DIGITS.finditer(folded_text):  # same length: offsets stay as they are
        folded_text = folded_text[: m.start()] + m.group().replace(".", " ") + folded_text[m.end() :]
    return folded_text, origin, ends


def _folded(text: str, scan: Scan) -> list[Finding]:
    folded, origin, ends = fold(text)
    if folded == text:
        return []
    return [
        f._replace(start=origin[f.start], end=ends[f.end - 1], detector=f"{f.detector}+folded")
        for f in scan(folded)
        if f.type in READ_AGAIN and f.end > f.start
    ]


# --- spelled -------------------------------------------------------------------------------
def _ats(text: str, ats: list[int]) -> Iterator[tuple[int, int]]:
    """Where each spelled-out "at" starts and ends: " at " where the scan found it (a regular
    expression over every text that holds the word cost 0.5 us a character); bracketed ones by the
    pattern."""
    for i in ats:
        yield i + 1, i + 3
    if "(" in text or "[" in text:
        for m in _AT_BRACKETED.finditer(text):
            yield m.start(), m.end()


def _spelled(text: str, ats: list[int]) -> Iterator[Finding]:
    """From each spelled-out "at": a domain after it, then a mailbox before it."""
    for before, after in _ats(text, ats):
        while after < len(text) and text[after].isspace():
            after += 1
        while before > 0 and text[before - 1].isspace():
            before -= 1
        domain = _SPELLED_DOMAIN.match(text, after)
        if domain is None:
            continue
        labels = _SPELLED_DOT.split(domain.group(1))
        if len(labels) < 2 or not labels[-1].isalpha() or not 2 <= len(labels[-1]) <= 24:
            continue
        local = _SPELLED_LOCAL.search(text, max(0, before - 128), before)
        if local is None or local.group(1).lower() in _NOT_A_MAILBOX:
            continue
        yield Finding("EMAIL", local.start(), domain.end(), 0.8, "email-spelled")


_NOT_A_MAILBOX = frozenset({"look", "meet", "me", "us", "him", "her", "them", "it", "arrive", "stay", "be", "is"})


# --- encoded -------------------------------------------------------------------------------
_ESCAPED_BYTES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def unquoted(run: str) -> tuple[str, list[int], list[int]]:
    """`urllib.parse.unquote(run, errors="replace")`, and for each of its characters where in
    `run` the text it came from starts and ends (a character of several UTF-8 bytes comes from
    all their escapes)."""
    out: list[str] = []
    origin: list[int] = []
    ends: list[int] = []
    at = 0
    for m in _ESCAPED_BYTES.finditer(run):
        _as_written(run, at, m.start(), out, origin, ends)
        at = m.end()
        raw = bytes.fromhex(m.group().replace("%", ""))
        decoder, start = codecs.getincrementaldecoder("utf-8")("replace"), m.start()
        for escape, byte in zip(range(m.start(), m.end(), 3), raw, strict=True):
            chars = decoder.decode(bytes((byte,)))
            out += chars
            origin += [start] * len(chars)
            ends += [escape + 3] * len(chars)
            start = escape + 3 - 3 * len(decoder.getstate()[0])  # where the bytes still held began
        chars = decoder.decode(b"", final=True)  # a sequence cut short
        out += chars
        origin += [start] * len(chars)
        ends += [m.end()] * len(chars)
    _as_written(run, at, len(run), out, origin, ends)
    return "".join(out), origin, ends


def _as_written(run: str, start: int, end: int, out: list[str], origin: list[int], ends: list[int]) -> None:
    out.append(run[start:end])
    origin += range(start, end)
    ends += range(start + 1, end + 1)


def _percent_decoded(text: str, scan: Scan) -> list[Finding]:
    """What the percent-encoded runs hold, each finding where its escapes are ("jane%40example.com"
    in a URL's query is that much of it)."""
    found: list[Finding] = []
    for m in _PERCENT_RUN.finditer(text):
        if m.end() - m.start() > MAX_DECODED:
            found.append(Finding("UNSCANNED", m.start(), m.end(), 1.0, "too-long-to-decode"))
            continue
        decoded = unquote(m.group(), errors="replace")
        inner = [f for f in scan(decoded) if f.end > f.start] if decoded != m.group() else []
        if inner:  # the map back costs ten times the decoding: made only for what holds a finding
            _, origin, ends = unquoted(m.group())
            at = m.start()
            found += [
                f._replace(start=at + origin[f.start], end=at + ends[f.end - 1], detector=f"{f.detector}+decoded")
                for f in inner
            ]
    return found


def _base64(run: str) -> str | None:
    padded = run + "=" * (-len(run) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decode(padded)
        except (binascii.Error, ValueError):
            continue
        text = raw.decode("utf-8", "replace")
        if "\ufffd" not in text and _is_text(text):
            return text
    return None


def _is_text(text: str) -> bool:
    """Whether decoded bytes read as text: nearly all printable, spaces of any kind and invisible
    format characters counted (a card written with no-break or zero-width spaces is text)."""
    readable = sum(ch.isprintable() or ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)
    return bool(text) and readable >= 0.9 * len(text)


def _hex(run: str) -> str | None:
    """A hexadecimal run as the text its bytes spell, if they spell text."""
    try:
        text = bytes.fromhex(run).decode("utf-8")
    except ValueError:
        return None
    return text if _is_text(text) else None


def _decoded(
    text: str, runs: Iterable[re.Match[str]], decode: Callable[[str], str | None], scan: Scan
) -> list[Finding]:
    """What the base64 runs hold: each run that holds anything is one finding (a decoded byte is
    no character of the text)."""
    found: list[Finding] = []
    for m in runs:
        if m.end() - m.start() > MAX_DECODED:
            found.append(Finding("UNSCANNED", m.start(), m.end(), 1.0, "too-long-to-decode"))
            continue
        decoded = decode(m.group())
        if decoded is None:
            continue
        inner = scan(decoded)
        if inner:  # the run is masked whole: one finding, of the most confident type inside
            best = max(inner, key=lambda f: f.confidence)
            found.append(Finding(best.type, m.start(), m.end(), best.confidence, f"{best.detector}+decoded"))
    return found
