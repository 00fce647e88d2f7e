"""Identifiers with a checkable structure, found by shape and kept only when they validate, and
the secrets (`classifiers.privacy.secrets`).

Each detector is gated by a substring test that costs nanoseconds, so text without '@', digits or
key-like prefixes is never scanned by the heavier patterns.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from classifiers._scan import windows
from classifiers.privacy.anchors import Hits
from classifiers.privacy.findings import Finding
from classifiers.privacy.luhn import CARD_GROUPINGS, luhn_ok
from classifiers.privacy.national import national_ids
from classifiers.privacy.secrets import secrets

# --- email --------------------------------------------------------------------------------
# Letters and digits of an address: Latin with its accents, Greek and Cyrillic too, as
# internationalized addresses and domains write them ("josé@example.com", "user@bücher.de"). A
# letter of a script written without spaces may stand on either side: "请联系jane@example.com谢谢".
_LETTERS = "A-Za-zÀ-ÖØ-öø-ɏͰ-ϿЀ-ӿ"
_AL = _LETTERS + "0-9"
_EMAIL = re.compile(
    rf"(?<![{_AL}._%+-])[{_AL}][{_AL}._%+-]{{0,63}}@(?:[{_AL}](?:[{_AL}-]{{0,61}}[{_AL}])?\.)+"
    rf"[{_LETTERS}]{{2,24}}(?![{_AL}_])"
)


def emails(text: str) -> Iterator[Finding]:
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        token_start = max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
        if ".." not in m.group() and not _in_url_authority(text[token_start : m.start()]):
            yield Finding("EMAIL", m.start(), m.end(), 0.99, "email")


def _in_url_authority(before: str) -> bool:
    """user:password@host in a URL is a credential, not an address; an address in the URL's path or
    query (`?to=jane@example.com`) is one."""
    scheme = before.find("://")
    return scheme >= 0 and not any(c in before[scheme + 3 :] for c in "/?")


# --- payment cards (Luhn) -----------------------------------------------------------------
# Groups of digits stand one space, two, a tab or a hyphen apart: a number copied out of a table,
# a PDF or a justified line keeps the wider gaps, and one written so was not found at all.
_GAP = r"(?:[ \t] ?|-)"
_GAPS = re.compile(r"[ \t]+|[.-]")
# Patterns that begin with a lookbehind also say what their first character is, as a lookahead:
# the regex engine then skips other positions quickly (a pass over a page: 160 -> 60 us).
_CARD = re.compile(rf"(?=\d)(?<![\d-])(?:\d{_GAP}?){{11,18}}\d(?![\d-])")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|22)|35|62|8[1-8])")
# A Maestro card may have only 12 digits: one of those is a card only with a Maestro prefix (with
# the Luhn check, about one 12-digit number in 100,000 passes by chance).
_MAESTRO_12 = re.compile(r"^(?:5018|5020|5038|5893|6304|6759|676[1-3])")


def cards(text: str, start: int = 0, end: int | None = None) -> Iterator[Finding]:
    stop = len(text) if end is None else end
    at = start
    while m := _CARD.search(text, at, stop):
        at = m.end()
        digits = re.sub(r"\D", "", m.group())
        if _card(digits):
            yield Finding("CREDIT_CARD", m.start(), m.end(), 0.97 if _CARD_PREFIX.match(digits) else 0.85, "luhn")
        elif (grouped := _grouped_card(text, m.start(), m.end(), stop)) is not None:
            at = grouped.end
            yield grouped


def _card(digits: str) -> bool:
    lengthy = 13 <= len(digits) <= 19 or _MAESTRO_12.match(digits) is not None
    return lengthy and luhn_ok(digits) and len(set(digits)) > 1


# Where a number stands just before a card ("Room 2 4111 1111 1111 1111"), the run of groups
# fails the check, and the card is the run's last groups in a printed card's grouping.
_GROUP_RUN = re.compile(rf"\d+(?:{_GAP}\d+)*(?![\d-])")
_LONGEST_FIRST = sorted(CARD_GROUPINGS, key=len, reverse=True)  # 4-4-4-4-3 before the 4-4-4-4 in it
# how far past its first group a card can end: 19 digits, and two characters between each group
_CARD_REACH = 19 + 2 * 18
_FOUR = re.compile(r"(?<!\d)\d{4}(?!\d)")


def _grouped_card(text: str, start: int, before: int, stop: int) -> Finding | None:
    """The first card in a printed card's grouping (`CARD_GROUPINGS`) within the run of digit
    groups at `start`, where the run as a whole is none, whose first group begins `before` (a
    card that begins later is a later search's). The run is read only as far as such a card can
    reach: read whole, "12 12 12 ..." was read once for each of its cards' worth of digits."""
    bound = min(stop, before + _CARD_REACH)
    if _FOUR.search(text, start, bound) is None:  # every printed grouping has a group of four
        return None
    run = _GROUP_RUN.match(text, start, bound)
    if run is None:
        return None
    groups = list(re.finditer(r"\d+", run.group()))
    if bound < stop and start + groups[-1].end() == bound and text[bound].isdigit():
        groups.pop()  # cut at the bound: its length is not its own
    lengths = [len(g.group()) for g in groups]
    for first in range(1, len(groups)):
        if start + groups[first].start() >= before:
            break
        for shape in _LONGEST_FIRST:
            if tuple(lengths[first : first + len(shape)]) != shape:
                continue
            last = groups[first + len(shape) - 1]
            digits = "".join(g.group() for g in groups[first : first + len(shape)])
            if _card(digits):
                at, end = start + groups[first].start(), start + last.end()
                return Finding("CREDIT_CARD", at, end, 0.97 if _CARD_PREFIX.match(digits) else 0.85, "luhn")
    return None


# --- IBAN (mod 97) ------------------------------------------------------------------------
# Groups a space, two or a tab apart (tables, PDFs) or a hyphen apart ("DE89-3704-0044-...").
_IBAN = re.compile(r"(?<![A-Za-z0-9_])[A-Z]{2}\d{2}(?:(?:[ \t] ?|-)?[A-Z0-9]){11,30}(?![A-Za-z0-9_])", re.IGNORECASE)
_IBAN_LENGTH = {
    "AD": 24,
    "AE": 23,
    "AL": 28,
    "AT": 20,
    "AZ": 28,
    "BA": 20,
    "BE": 16,
    "BG": 22,
    "BH": 22,
    "BR": 29,
    "CH": 21,
    "CR": 22,
    "CY": 28,
    "CZ": 24,
    "DE": 22,
    "DK": 18,
    "DO": 28,
    "EE": 20,
    "EG": 29,
    "ES": 24,
    "FI": 18,
    "FO": 18,
    "FR": 27,
    "GB": 22,
    "GE": 22,
    "GI": 23,
    "GL": 18,
    "GR": 27,
    "GT": 28,
    "HR": 21,
    "HU": 28,
    "IE": 22,
    "IL": 23,
    "IQ": 23,
    "IS": 26,
    "IT": 27,
    "JO": 30,
    "KW": 30,
    "KZ": 20,
    "LB": 28,
    "LI": 21,
    "LT": 20,
    "LU": 20,
    "LV": 21,
    "MC": 27,
    "MD": 24,
    "ME": 22,
    "MK": 19,
    "MR": 27,
    "MT": 31,
    "MU": 30,
    "NL": 18,
    "NO": 15,
    "PK": 24,
    "PL": 28,
    "PS": 29,
    "PT": 25,
    "QA": 29,
    "RO": 24,
    "RS": 22,
    "SA": 24,
    "SC": 31,
    "SE": 24,
    "SI": 19,
    "SK": 24,
    "SM": 27,
    "TN": 24,
    "TR": 26,
    "UA": 29,
    "VA": 22,
    "VG": 24,
    "XK": 20,
}


def iban_ok(compact: str) -> bool:
    # IGNORECASE lets the pattern take "İ", "ı", "ſ" and the Kelvin sign for letters: no IBAN has them.
    if not compact.isascii() or _IBAN_LENGTH.get(compact[:2]) != len(compact):
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def ibans(text: str, start: int = 0, end: int | None = None) -> Iterator[Finding]:
    for m in _IBAN.finditer(text, start, len(text) if end is None else end):
        raw = m.group()
        compact = "".join(raw.replace("-", " ").split()).upper()
        # The pattern may run on into a following word; shorten to the country's length.
        length = _IBAN_LENGTH.get(compact[:2])
        if length and len(compact) > length:
            compact = compact[:length]
            end = m.start()
            seen = 0
            while seen < length:
                if not text[end].isspace() and text[end] != "-":
                    seen += 1
                end += 1
            if iban_ok(compact):
                yield Finding("IBAN", m.start(), end, 0.99, "mod97")
        elif iban_ok(compact):
            yield Finding("IBAN", m.start(), m.end(), 0.99, "mod97")


# --- US SSN -------------------------------------------------------------------------------
_SSN = re.compile(r"(?=\d)(?<![\d-])(\d{3})([- ]?)(\d{2})\2(\d{4})(?![\d-])")
_SSN_CUE = re.compile(r"(?i)\b(?:ssn|social security|soc\.? sec)")


def ssns(text: str, start: int = 0, end: int | None = None) -> Iterator[Finding]:
    for m in _SSN.finditer(text, start, len(text) if end is None else end):
        area, sep, group, serial = m.groups()
        if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
            continue
        cued = _SSN_CUE.search(text, max(0, m.start() - 40), m.start()) is not None
        if sep or cued:  # nine bare digits are an SSN only when the text says so
            yield Finding("US_SSN", m.start(), m.end(), 0.95 if cued or sep == "-" else 0.8, "ssn")


# --- phone numbers ------------------------------------------------------------------------
_PHONE_GAP = r"(?:[ \t] ?|[.-])"
# A trunk prefix may stand before the area code's brackets ("8 (912) 345-67-89", "1 (800) ...").
# A number may stand right against a word of a script other than Latin, Greek or Cyrillic: Korean
# particles and Chinese and Japanese words are written so ("전화번호는010-1234-5678입니다").
_PHONE = re.compile(
    rf"(?=[+(\d])(?<![{_AL}_+])(?:(?:\+|00)\d{{1,3}}{_PHONE_GAP}?|\d{{1,2}}[ \t-]?(?=\())?"
    rf"(?:\(0?\d{{1,4}}\){_PHONE_GAP}?|\(0\)[ \t]?)?\d{{1,15}}"
    rf"(?:{_PHONE_GAP}\d{{2,8}}){{0,4}}(?:[ \t]?(?:x|ext\.?)[ \t]?\d{{1,5}})?(?![{_AL}_:]|-\d)"
)
# The cues in the languages PUPA's and WildChat's users write most; a word of a script written
# without spaces (or with its particle attached: Arabic "رقمي", my number) has no boundary to test.
_PHONE_CUE = re.compile(
    r"(?i)\b(?:phone|tel|telephone|fax|call|mobile|cell|whatsapp|sms|text|number|registered|"
    r"contact|ring|dial|office|home|"
    r"tél|téléphone|portable|numéro|teléfono|telefone|telefon|telefono|móvil|celular|cellulare|"
    r"número|numero|nummer|handy|телефон|тел|номер|мобильный)\b"
    r"|电话|手机|號碼|号码|電話|携帯|번호|전화|핸드폰|رقم|هاتف|جوال|موبايل"
)
_DATE_LIKE = re.compile(r"^\d{1,4}[-./]\d{1,2}[-./]\d{1,4}$")


def phones(text: str, start: int = 0, end: int | None = None) -> Iterator[Finding]:
    for m in _PHONE.finditer(text, start, len(text) if end is None else end):
        raw = m.group()
        digits = sum(ch.isdigit() for ch in raw.split("x")[0].split("ext")[0])
        if not 7 <= digits <= 15 or _DATE_LIKE.match(raw) or _counted(raw):
            continue
        # "00" dials out only before a country code (never 0) and a whole national number after it:
        # "#0000123" or "order 0012345" is not a call abroad.
        international = raw.startswith("+") or (raw.startswith("00") and raw[2:3] != "0" and digits >= 10)
        grouped = "(" in raw or len(_GAPS.findall(raw)) >= 2
        cued = (
            _PHONE_CUE.search(text, max(0, m.start() - 40), m.start()) is not None
            or _PHONE_CUE.search(text, m.end(), m.end() + 15) is not None
        )
        # a trunk prefix is no digit of the number: "3 (2019) 45-67" is no more a phone than "(2019) 45-67"
        trunk = sum(ch.isdigit() for ch in raw[: raw.find("(")]) if raw[0].isdigit() and "(" in raw[:4] else 0
        if international or cued or (grouped and digits - trunk >= 9):
            yield Finding("PHONE", m.start(), m.end(), 0.9 if international or cued else 0.75, "phone")


def _counted(raw: str) -> bool:
    """Whether a run of short groups counts in steps ("6 7 8 9 10 11 12", "10 20 30 40 50"): a
    list of numbers, not a phone's groups (none of which is a count of four or more)."""
    groups = [int(g) for g in re.findall(r"\d+", raw)]
    if len(groups) < 4 or max(len(str(g)) for g in groups) > 3:
        return False
    step = groups[1] - groups[0]
    return step != 0 and all(b - a == step for a, b in zip(groups, groups[1:], strict=False))


# --- IP addresses -------------------------------------------------------------------------
_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\d.])")
# A dotted quad right after one of these is a version ("version 1.2.3.4", "v2.0.0.1"), not an address.
_VERSION = re.compile(r"(?i)(?:\bv|\bver|\bversion|\brelease|\bbuild)\.?[ \t]*$")
# One group before "::" is enough ("fe80::1ff:fe23:4567:890a"): `ipaddress` says what is an address.
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){1,7}:?[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{1,4}){0,6}(?![\w:])")
# Where the patterns can match (`_scan.windows`: digits, separators, longest gap, fewest digits,
# fewest separators, margin). IPv4: dotted runs of four digits or more. IPv6: two colons or more
# with at most four hex digits between them, seen from the colons (hex letters are everywhere in
# prose; colons are not). The margins reach a match's first characters and let the lookaheads
# read the text after it.
DOTTED_WINDOWS = ("", ".", 1, 4, 3, 2)
COLON_WINDOWS = (":", "0123456789abcdefABCDEF", 4, 2, 0, 6)


def ips(
    text: str, dotted: list[tuple[int, int]] | None = None, colons: list[tuple[int, int]] | None = None
) -> list[Finding]:
    """`dotted`, `colons`: the text's windows, when the caller has them."""
    found = []
    for start, end in windows(text, DOTTED_WINDOWS) if dotted is None else dotted:
        for m in _IPV4.finditer(text, start, end):
            if m.start() and (text[m.start() - 1].isdigit() or text[m.start() - 1] == "."):
                continue
            if _VERSION.search(text, max(0, m.start() - 12), m.start()):
                continue
            try:
                ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            found.append(Finding("IP_ADDRESS", m.start(), m.end(), 0.95, "ip"))
    for start, end in windows(text, COLON_WINDOWS) if colons is None else colons:
        for m in _IPV6.finditer(text, start, end):
            try:
                ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            found.append(Finding("IP_ADDRESS", m.start(), m.end(), 0.95, "ip"))
    return found


# Cards, SSNs, phones and IBANs hold seven digits or more, at most three separators apart
# ("+44 (0)20 ..."). A card, an SSN or a phone lies within such a run but for a leading "+" or "("
# and a trailing extension ("x 1234"); an IBAN's letters can reach 70 characters from its digits.
NUMBER_WINDOWS = ("", " \t().+/-", 3, 7, 0, 16)
IBAN_WINDOWS = ("", " \t().+/-", 3, 7, 0, 70)
# Runs of 20 base64 characters or more, which `readings` decodes and scans (a regular expression
# looking for them cost as much as the rest of the scan).
ENCODED_WINDOWS = ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-=", "", 0, 20, 0, 0)
WINDOW_SPECS = (NUMBER_WINDOWS, IBAN_WINDOWS, DOTTED_WINDOWS, COLON_WINDOWS, ENCODED_WINDOWS)
Windows = tuple[list[tuple[int, int]], ...]  # one list of (start, end) per spec


def find_structured(text: str, hits: Hits | None = None, found_windows: Windows | None = None) -> list[Finding]:
    """`hits` (`ANCHORS.find(text)`, or more) and `found_windows` (per `WINDOW_SPECS`): when the
    caller has them."""
    numbers, iban_windows, dotted, colons, encoded = found_windows or tuple(
        windows(text, spec) for spec in WINDOW_SPECS
    )
    found = list(emails(text)) if "@" in text else []
    if hits is None or hits or encoded:
        found += secrets(text, hits, bool(encoded))
    for start, end in numbers:
        for detect in (cards, ssns, phones, national_ids):
            found.extend(detect(text, start, end))
    for start, end in iban_windows:
        found.extend(ibans(text, start, end))
    if dotted or colons:
        found += ips(text, dotted, colons)
    return found


def checked_numbers(text: str) -> list[Finding]:
    """The identifiers a check proves in `text` (cards, SSNs, national IDs, IBANs), without the
    phones, addresses and keys `find_structured` also reads: what a value split over a record's
    fields is read for (`classifiers.signals`), in a reading of thousands of fields side by side."""
    found = [
        f
        for start, end in windows(text, NUMBER_WINDOWS)
        for detect in (cards, ssns, national_ids)
        for f in detect(text, start, end)
    ]
    return found + [f for start, end in windows(text, IBAN_WINDOWS) for f in ibans(text, start, end)]
