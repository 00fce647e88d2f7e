"""Other ways of reading a text, for private data written so that the patterns would miss it.

- Canonical: one normal form of every spelling (`classifiers.privacy.canonical`: other scripts'
  digits and numerals, compatibility forms, invisible and tag characters, digit words, spelled-out
  at signs and dots, separators between a number's groups).
- Encoded: percent-encoded runs (`jane%40example.com`), quoted-printable escapes (`jane=40example.com`),
  HTML character references (`&#52;&#x31;`), base64 runs and hexadecimal runs of text
  (`34313131...`) decoded, within a size bound, and scanned as text.

Each finding is located in the original text (a canonical or percent-decoded reading maps each of
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
from collections.abc import Callable, Iterable
from typing import NamedTuple
from urllib.parse import unquote

from classifiers import _scan
from classifiers.privacy.anchors import Hits
from classifiers.privacy.canonical import (
    ESCAPED_PAIR,
    INVISIBLE,
    Cues,
    astral,
    canonical,
    foldable,
    invisible,
    taken_cues,
)
from classifiers.privacy.findings import STRUCTURED_TYPES, Finding
from classifiers.privacy.mailboxes import shaped
from classifiers.privacy.rewriting import Reading, as_written, rewritten

Scan = Callable[[str], list[Finding]]
MAX_DECODED = 64 * 1024  # characters of one encoded run decoded and scanned; longer ones are UNSCANNED
READ_AGAIN = frozenset(STRUCTURED_TYPES)

# The bits of `_scan.reading_cues(text)`: `_ESCAPE` matches; "%" is in the text; "&#" is.
_CUE_ESCAPE, _CUE_PERCENT, _CUE_ENTITY = 1, 2, 4
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
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


class Windows(NamedTuple):
    """Where the C scan saw runs worth reading again."""

    numbers: list[tuple[int, int]]  # seven digits or more with separators: where they matter
    encoded: list[tuple[int, int]]  # 20 base64 characters or more
    ats: list[int]  # where an at sign may be spelled out ("(ät)", " arobase ", " @ "): AT_CUES' hits
    worded: list[tuple[int, int]]  # where digit words stand close enough to be a number read aloud


def windows_of(text: str, hits: Hits, numbers: list[tuple[int, int]], encoded: list[tuple[int, int]]) -> Windows:
    """The windows, taking the canonical reading's cues out of `hits` (the scan's of `text`): no other reading looks for
    them, and a text left with no hits skips every cue's detector (an " at " or a " one" is in half
    of all texts)."""
    ats, worded = taken_cues(text, hits) if hits else ([], [])
    return Windows(numbers, encoded, ats, worded)


def reread(text: str, scan: Scan, windows: Windows, scan_decoded: Scan | None = None) -> list[Finding]:
    """Findings in `text` that only another reading shows, located in `text`. What a base64 or
    hexadecimal run decodes to is read with `scan_decoded` (every reading again: a file sent as a
    base64 `data:` URL may hold a card in Arabic digits), bounded because each decoding shortens."""
    scan_decoded = scan_decoded or scan
    extra: list[Finding] = []
    cues = _scan.reading_cues(text)  # the tests below that read the whole text, in one pass in C
    wanted = Cues(
        fold=foldable(text) or bool(cues & _CUE_ESCAPE),
        numbers=windows.numbers,
        ats=windows.ats,
        worded=windows.worded,
    )
    if any(wanted):
        extra += _mapped(canonical(text, wanted), text, scan, "+canonical")
    extra += _mapped(shaped(text), text, scan, "+shaped")
    if cues & _CUE_PERCENT:
        extra += _percent_decoded(text, scan)
    if "=" in text and _QUOTED_PRINTABLE.search(text):
        extra += _mapped(_quoted_printable(text), text, scan, "+quoted-printable")
    if windows.encoded:
        runs = [m for start, end in windows.encoded for m in _BASE64_RUN.finditer(text, start, end)]
        extra += _decoded(text, runs, _base64, scan_decoded)
        hexes = [m for start, end in windows.encoded for m in _HEX_RUN.finditer(text, start, end)]
        extra += _decoded(text, hexes, _hex, scan_decoded)
    if cues & _CUE_ENTITY:
        extra += _mapped(_html_decoded(text), text, scan, "+entities")
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


# Quoted-printable's escapes (`=40` for "@", `=2E` for "."), as a mail's source writes an address.
_QUOTED_PRINTABLE = re.compile(r"=(?:4[0-9A-Fa-f]|2[0-9A-Fa-f]|[35][0-9A-Fa-f]|[67][0-9A-Fa-f])")


def _quoted_printable(text: str) -> Reading | None:
    """`text` with each quoted-printable escape of a printable ASCII character read as it."""
    return rewritten(
        text,
        ((m.start(), m.end(), [(chr(int(m.group()[1:], 16)), m.start(), m.end())])
         for m in _QUOTED_PRINTABLE.finditer(text) if 0x21 <= int(m.group()[1:], 16) <= 0x7E),
    )  # fmt: skip


# HTML's character references: decimal, hexadecimal and the named ones Python knows
_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _html_decoded(text: str) -> Reading | None:
    """`text` with its character references read as the characters they stand for (an unknown
    name as written)."""
    decoded = ((m, html.unescape(m.group())) for m in _CHARACTER_REFERENCE.finditer(text))
    return rewritten(text, ((m.start(), m.end(), [(ch, m.start(), m.end())]) for m, ch in decoded if ch != m.group()))


# A JSON text inside a string (a tool call's arguments, a pasted API payload) writes its line
# breaks, quotes and non-ASCII letters as escapes: "\nJane Roe" reads as the word "nJane", and
# "Jos\u00e9" as "Jos". A "\n", "\t" or "\r" before a small letter is LaTeX's (\neq, \theta,
# \right), not one.
_JSON_ESCAPED = re.compile(r'\\(?:[ntr](?![a-z])|["/]|u[0-9A-Fa-f]{4})')
# A character above U+FFFF is escaped as a surrogate pair ("\\ud83a\\udd54"): read as one character.
_JSON_ESCAPE = re.compile(ESCAPED_PAIR + r'|\\(?:u([0-9A-Fa-f]{4})|(["\\/bfnrt]))')
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
        if m.group(1):
            out.append(astral(m.group(1), m.group(2)))
        else:
            out.append(chr(int(m.group(3), 16)) if m.group(3) else _UNESCAPED[m.group(4)])
        starts.append(m.start())
        ends.append(m.end())
        at = m.end()
    out.append(text[at:])
    starts += range(at, len(text))
    ends += range(at + 1, len(text) + 1)
    return Reading("".join(out), starts, ends)


def composed(text: str) -> Reading | None:
    """The composed reading of a text written with decomposed accents ("Jose\u0301", as macOS
    file names and some clients send it) or with invisible characters inside its words
    ("Jo\u200bhn"), or None for a text that has neither (nearly all: telling costs 2 ns a
    character). Decomposed, a combining accent ends a word for every pattern and for the span model:
    "José García" was found as "Jose" and "Garci", "josé@example.com" not at all; a zero-width
    space hid a name from all of them."""
    if text.isascii():
        return None
    hidden = _scan.any_in(text, INVISIBLE)
    if not hidden and unicodedata.is_normalized("NFC", text):
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    start = 0
    # each starter with the marks that follow it: any mark, not only those with a combining class
    # (Kannada's AI length mark has none, and composes with the vowel sign before it: "ೆ" + "ೖ" = "ೈ")
    for i in range(1, len(text) + 1):
        if i < len(text) and unicodedata.category(text[i])[0] == "M":
            continue
        piece = unicodedata.normalize("NFC", text[start:i])
        if hidden and len(piece) == 1 and invisible(piece):
            start = i
            continue  # read as if it were not there
        out.append(piece)
        starts += [start] * len(piece)
        ends += [i] * len(piece)
        start = i
    return Reading("".join(out), starts, ends)


def composed_text(text: str) -> str:
    """`text` as its composed reading reads it (itself where that is the text)."""
    reading = composed(text)
    return text if reading is None else reading.text


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
        as_written(run, at, m.start(), out, origin, ends)
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
    as_written(run, at, len(run), out, origin, ends)
    return "".join(out), origin, ends


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
