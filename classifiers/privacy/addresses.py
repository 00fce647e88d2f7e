"""Street addresses as Japan, China, Russia, Germany and the Romance countries write them, found
whole.

The span model reads an address by its capitals and an English house number first: "東京都渋谷区
渋谷2丁目21-1" has neither, "ул. Тверская, д. 7, кв. 15" gives it Cyrillic capitals it reads as
names, and "Lindenweg 5a, 80331 München" puts the number after the street. Each country's own
order is a pattern here, tried only where its markers stand:

- Japan and China: a locality (市, 区, 町, 村, 郡) followed within twelve characters by a number
  with its unit (丁目, 番地, 番, 号) or in three hyphenated blocks ("2-21-1"; "3-4个" is a count);
  the prefecture, province or city before it and a Japanese postcode ("〒150-0002") taken in.
- Russia: a house (д., дом) with its number, after a street (ул., проспект, переулок, ...) and an
  optional city and postcode; the building, block and flat after it (корп., стр., кв.).
- Germany (and Austria, Switzerland): a street ending in -straße, -str., -weg, -gasse, -platz or
  -allee, or named by such a word ("Berliner Straße"), its house number, and the postcode and town
  after it.
- France, Italy, Spain and Portugal: a house number before a street word ("12 rue de la Paix") or
  after the street's name ("via Roma 12"), and the postcode and town after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from classifiers.privacy.anchors import Anchors, Hits, starts_of
from classifiers.privacy.findings import Finding

DETECTOR = "written-address"
CONFIDENCE = 0.9

# --- Japan and China --------------------------------------------------------------------------
_LOCALITIES = ("市", "区", "町", "村", "郡")
_NUMBER = r"[0-9０-９]{1,4}"
_DASH = r"[-－ー‐−]"
_EAST = re.compile(
    rf"[市区町村郡][\u3005\u30a0-\u30ff\u4e00-\u9fff]{{0,12}}?"
    rf"(?:{_NUMBER}(?:丁目|番地|番|号)(?:{_NUMBER}(?:番地|番|号)|{_DASH}?{_NUMBER})*(?:{_DASH}{_NUMBER})*号?|"
    rf"{_NUMBER}{_DASH}{_NUMBER}{_DASH}{_NUMBER}号?|{_NUMBER}{_DASH}{_NUMBER}号)(?![个個人年月日万元])"
)
# What an address's first characters may be, read back from its locality: kanji and katakana
# (hiragana are Japanese particles: "住所は東京都..." begins after は), and not the Chinese words
# that introduce one ("我住在北京市...": "live at").
_EAST_BACK = 12
_NOT_PLACE = frozenset("在是于到住址的往寄送我你他她这那个有")
_POSTCODE_BEFORE = re.compile(r"〒?\s?[0-9０-９]{3}[-－][0-9０-９]{4}\s*$")


def _place_start(text: str, at: int) -> int:
    start = at
    while at - start < _EAST_BACK and start > 0:
        ch = text[start - 1]
        if not ("\u4e00" <= ch <= "\u9fff" or "\u30a0" <= ch <= "\u30ff" or ch == "\u3005") or ch in _NOT_PLACE:
            break
        start -= 1
    postcode = _POSTCODE_BEFORE.search(text, max(0, start - 12), start)
    return postcode.start() if postcode else start


def _east(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    end = 0
    for at in sorted(starts_of(hits, _EAST_SET)):
        if at < end:
            continue
        m = _EAST.match(text, at)
        if m is not None:
            end = m.end()
            yield _place_start(text, at), end


# --- Russia -----------------------------------------------------------------------------------
_STREET_TYPES_RU = (
    r"ул\.|улица|пр-т|просп\.|пр\.|проспект|пер\.|переулок|ш\.|шоссе|наб\.|набережная|б-р|бульвар|пл\.|"
    r"площадь|проезд|аллея|тупик"
)
_NAME_RU = r"[А-ЯЁ0-9][\w.-]*(?:\s[А-ЯЁ][\w.-]*){0,2}"
_STREET_RU = re.compile(
    rf"(?:(?:\d{{6}},?\s*)?(?:(?:г\.|город)\s*[А-ЯЁ][\w-]*,?\s*)?)?"
    rf"(?:(?:{_STREET_TYPES_RU})\s*{_NAME_RU}|[А-ЯЁ][\w.-]*(?:\s[А-ЯЁ][\w.-]*)?\s(?:{_STREET_TYPES_RU}))\s*,?\s*$"
)
_HOUSE_RU = re.compile(
    r"(?:д\.|дом)\s*\d{1,4}[а-яА-Я]?(?:/\d{1,4})?"
    r"(?:,?\s*(?:корп\.|корпус|к\.|стр\.|строение)\s*\d{1,4}[а-я]?)*(?:,?\s*(?:кв\.|квартира|оф\.|офис)\s*\d{1,4})?"
)
_RU_BACK = 96  # characters from a house's marker back to where its street may begin


def _russian(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    for at in sorted(starts_of(hits, _HOUSE_SET)):
        if at > 0 and text[at - 1].isalpha():
            continue  # "д." inside a word
        house = _HOUSE_RU.match(text, at)
        if house is None:
            continue
        street = _STREET_RU.search(text, max(0, at - _RU_BACK), at)
        if street is not None:
            yield street.start(), house.end()


# --- Germany ----------------------------------------------------------------------------------
_SUFFIXES_DE = ("straße", "strasse", "str.", "weg", "gasse", "platz", "allee")
_STREET_DE = re.compile(
    r"(?:[A-ZÄÖÜ][\wäöüß-]*\s)?(?:[A-ZÄÖÜ][\wäöüß-]*?)?(?i:straße|strasse|str\.|weg|gasse|platz|allee)"
    r"\s?\d{1,4}\s?[a-zA-Z]?(?![\w])(?:\s?[-/]\s?\d{1,4}[a-z]?)?"
    r"(?:,?\s+\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+(?:\s(?:am|an der|im|in der|bei|ob der)\s[A-ZÄÖÜ][\wäöüß-]+)?)?"
)


def _word_start(text: str, at: int) -> int:
    while at > 0 and (text[at - 1].isalpha() or text[at - 1] == "-"):
        at -= 1
    return at


def _german(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    end = 0
    for at in sorted(starts_of(hits, _SUFFIX_SET)):
        word = _word_start(text, at)
        before = _word_start(text, word - 1) if word > 1 and text[word - 1] == " " else word
        for start in dict.fromkeys((before, word)):  # "Berliner Straße 5", else "Lindenweg 5a"
            if start < end:
                continue
            m = _STREET_DE.match(text, start)
            if m is not None and m.end() > at:
                end = m.end()
                yield start, end
                break


# --- France, Italy, Spain, Portugal ---------------------------------------------------------
# France writes the house number before the street ("12 rue de la Paix", "8 bis avenue Foch"),
# Italy, Spain and Portugal after it ("via Roma 12", "calle de Alcalá 45", "Rua Augusta 100");
# the street's name is capitalized words and the particles between them. A postcode and its town
# after ("75002 Paris", "10121 Torino", "1100-053 Lisboa") are the address's too. A street word
# that is only one ("rue", "calle", "rua") makes an address alone; one that is another word as well
# ("via": by way of; "avenue", "place", "plaza", "largo", "route", a square) only with the postcode
# and town.
_STREETS_ONLY = ("rue", "boulevard", "impasse", "allée", "chemin", "quai", "calle", "paseo", "carrer", "rambla",
                 "rua", "travessa", "viale", "vicolo", "avenida")  # fmt: skip
# (a square is often a landmark: "piazza Navona 3" is where to meet)
_STREETS_ALSO = ("via", "avenue", "place", "plaza", "largo", "route", "piazza", "piazzale", "praça", "corso")
# (a particle is a whole word, or elided before the next: one reading of "della" or "de la", and
# at most three before a name's word, so that no text makes the pattern backtrack without end)
_PARTICLES = r"(?:(?:de|du|des|la|le|les|del|della|delle|dei|degli|di|da|do|dos|das|y|e|el)\s+|[ld]['’]\s*){0,3}"
_CAPWORD = r"[A-ZÀ-ÖØ-Þ][\w'’.-]*"
_NAME = rf"{_PARTICLES}{_CAPWORD}(?:\s+{_PARTICLES}{_CAPWORD}){{0,3}}"
_TOWN = r"(?P<town>,?\s+(?:\d{5}|\d{4}-\d{3})\s+[A-ZÀ-ÖØ-Þ][\w'’-]+(?:\s+[A-ZÀ-ÖØ-Þ][\w'’-]+)?)?"
_STREET_WORD = rf"(?P<street>(?i:{'|'.join(sorted((*_STREETS_ONLY, *_STREETS_ALSO), key=len, reverse=True))}))"
_NUMBER_FIRST = re.compile(rf"(?<![\w,.])\d{{1,4}}(?:\s?(?:bis|ter|[a-cA-C]))?,?\s+{_STREET_WORD}\s+{_NAME}{_TOWN}")
_NUMBER_AFTER = re.compile(rf"{_STREET_WORD}\s+{_NAME},?\s+\d{{1,4}}[a-zA-Z]?(?![\w-]){_TOWN}")
_ROMANCE_BACK = 16  # characters from a street word back to where its house number may begin


def _romance(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    end = 0
    for at in sorted(starts_of(hits, _STREET_SET)):
        if at < end or (at > 0 and text[at - 1].isalpha()):
            continue
        before = _NUMBER_FIRST.finditer(text, max(0, at - _ROMANCE_BACK), at + 64)
        found = [m for m in before if m.start("street") == at]
        found = found or [m for m in [_NUMBER_AFTER.match(text, at)] if m is not None]
        for m in found:
            if m["town"] or m["street"].lower() in _STREETS_ONLY_SET:
                end = m.end()
                yield m.start(), end


CUES = Anchors((), (*_LOCALITIES, "д.", "дом", *_SUFFIXES_DE, *_STREETS_ONLY, *_STREETS_ALSO))
_EAST_SET, _HOUSE_SET, _SUFFIX_SET = frozenset(_LOCALITIES), frozenset(("д.", "дом")), frozenset(_SUFFIXES_DE)
_STREETS_ONLY_SET = frozenset(_STREETS_ONLY)
_STREET_SET = frozenset((*_STREETS_ONLY, *_STREETS_ALSO))
_CUE_SET = frozenset(CUES.folded)


def written_addresses(text: str, hits: Hits) -> list[Finding]:
    """STREET_ADDRESS findings written in these countries' orders. `hits`: `CUES.find(text)`, or more."""
    if _CUE_SET.isdisjoint(hits):
        return []
    spans = [*_east(text, hits), *_russian(text, hits), *_german(text, hits), *_romance(text, hits)]
    return [Finding("STREET_ADDRESS", start, end, CONFIDENCE, DETECTOR) for start, end in spans]
