"""The compiled scan (`classifiers._scan`, sources in classifiers/scan/) against the regular expressions it stands for.

The privacy scan finds literals, number windows and street addresses in C; here each of those
rules is written the readable way, as Python's `re` would run it over the whole text, and random
texts made of the pieces that trip such rules (odd capitals, separators, line breaks, numbers)
must give the same answers.
"""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers import _scan
from classifiers.privacy import PrivacyScanner
from classifiers.privacy.anchors import Anchors, anchored
from classifiers.privacy.contextual import _UP, CUES, STREET_WORDS, SpanModel
from classifiers.privacy.secrets import ANCHORS
from classifiers.privacy.structured import WINDOW_SPECS, find_structured

ODD = ["İ", "ı", "ſ", "K", "é", "É", "ß", "’", "–", "\u00a0"]


def texts(pieces: list[str], size: int = 30) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces + ODD), max_size=size).map("".join)


# --- anchors: every occurrence of every literal, folded as IGNORECASE folds ---------------------
LITERAL_TEXT = [
    "pass",
    "PASS",
    "Pass",
    "word",
    "secret",
    "SeCrEt",
    "token",
    "toKen",
    "api",
    "sk-",
    "AKIA",
    "eyJ",
    "://",
    "born",
    "né",
    "née",
    "nato",
    "oma",
    "diagnosed with",
    "hiv",
    "x",
    " ",
    "a",
    "s",
    "k",
    "\u212a",  # the Kelvin sign, which IGNORECASE takes for "k"
    "\u017f",  # the long s, taken for "s"
    "İ",
]


@settings(max_examples=300, deadline=None)
@given(texts(LITERAL_TEXT))
def test_anchors_find_what_re_finds_in_any_case(text):
    _finds_what_re_finds(ANCHORS + CUES, text)


def _finds_what_re_finds(anchors: Anchors, text: str) -> None:
    hits = anchors.find(text)
    for literal in anchors.exact:
        expected = [m.start() for m in _lookahead(literal, folded=False).finditer(text)]
        assert hits.get(literal, []) == expected, literal
    for literal in anchors.folded:
        expected = [m.start() for m in _lookahead(literal, folded=True).finditer(text)]
        assert hits.get(literal, []) == expected, literal


@functools.cache
def _lookahead(literal: str, folded: bool) -> re.Pattern[str]:
    """Each place `literal` starts (overlaps included), compiled once: the scanner's thousands of
    literals would overflow `re`'s own cache and be compiled again for every example."""
    return re.compile(f"(?=(?i:{re.escape(literal)}))" if folded else f"(?={re.escape(literal)})")


# Literals that share their first four characters ("account number", "account no", "account_id")
# chain together in the C table, and ones of two or three characters sit beside them.
SHARED_HEADS = ["account", "Account", " ", "_", "-", "number", "no", "#", "id", "ID", "medical", "record", "member"]
SHARED_HEADS += ["ship", "SIN", "sin", "zip", "Tel", "né", "a/c", "ac", "me", "\u212a", "passport", "postal", "code"]


@settings(max_examples=100, deadline=None)
@given(texts(SHARED_HEADS))
def test_the_scanners_anchors_find_what_re_finds_in_any_case(text):
    _finds_what_re_finds(_scanner().anchors, text)


def test_assignments_are_found_in_any_case_the_pattern_allows():
    text = "Secret: hunter22pw, toKen = abcdef123 and paſſword: opensesame"
    spans = [(f.type, text[f.start : f.end]) for f in find_structured(text)]
    assert ("SECRET", "hunter22pw") in spans and ("SECRET", "abcdef123") in spans
    assert ("SECRET", "opensesame") in spans


# --- windows: the number patterns see every match they would see in the whole text ------------
NUMBER_TEXT = [
    "1",
    "2",
    "5",
    "0",
    "9",
    "4111",
    " ",
    "-",
    ".",
    "(",
    ")",
    "+",
    "/",
    "\t",
    "x",
    "ext.",
    "00",
    "+44",
    "(0)",
    "call ",
    "SSN ",
    "DE89",
    "GB82",
    "WEST",
    "a",
    "Z",
    ":",
    "\n",
    "555",
    "1234",
    "078-05-1120",
    "4111 1111 1111 1111",
    "+1 (555) 123-4567 x89",
    "192.168.",
    "fe80",
    "::",
    "ff",
]


@settings(max_examples=400, deadline=None)
@given(texts(NUMBER_TEXT, size=40))
def test_number_patterns_in_windows_find_what_they_find_in_the_whole_text(text):
    whole = tuple([(0, len(text))] for _ in WINDOW_SPECS)
    assert sorted(find_structured(text)) == sorted(find_structured(text, found_windows=whole))  # order: by window


@settings(max_examples=200, deadline=None)
@given(
    texts(
        LITERAL_TEXT
        + NUMBER_TEXT
        + ["=", ":", "'", "\n", "with asthma", "my ", "12/03/1985", "密码", "生日", "：", "是"],
        size=40,
    )
)
def test_anchored_patterns_match_what_finditer_matches(text):
    from classifiers.privacy import contextual, secrets

    hits = (ANCHORS + CUES).find(text)
    pairs = [(pattern, literals) for literals, pattern in secrets._KEYS]
    pairs += [
        (secrets._ASSIGNED, secrets._ASSIGNED_STARTS),
        (contextual._BIRTH, contextual._BIRTH_CUES),
        (contextual._HEALTH, contextual._HEALTH_CUES),
    ]
    for pattern, literals in pairs:
        starts = [at for literal in literals for at in hits.get(literal, ())]
        assert [m.span() for m in anchored(pattern, text, starts)] == [m.span() for m in pattern.finditer(text)]
    starts = contextual._condition_starts(text, hits)
    assert [m.span() for m in anchored(contextual._CONDITION, text, starts)] == [
        m.span() for m in contextual._CONDITION.finditer(text)
    ]


def _windowed(text: str, spec: tuple[str, str, int, int, int, int]) -> list[tuple[int, int]]:
    """What `_scan.windows` finds, as a regular expression finds it: clusters of the digits joined by
    gaps of at most `max_gap` separators, then filtered, widened and merged."""
    digits, separators, max_gap, min_digits, min_separators, margin = spec
    digit = r"\d" if not digits else f"[{re.escape(digits)}]"
    gap = f"[{re.escape(separators)}]{{0,{max_gap}}}" if separators and max_gap else ""
    merged: list[list[int]] = []
    for m in re.finditer(f"{digit}(?:{gap}{digit})*", text):
        seps = sum(1 for c in m.group() if c in separators) if separators else 0
        if len(m.group()) - seps < min_digits or seps < min_separators:
            continue
        start, end = max(0, m.start() - margin), min(len(text), m.end() + margin)
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


@settings(max_examples=400, deadline=None)
@given(texts(NUMBER_TEXT + ["AB", "&", "-", "Ab", ":", "ff", "==", "+/", "x" * 12], size=40))
def test_each_window_is_a_cluster_a_regular_expression_finds(text):
    from classifiers.privacy.capitals import CAPITAL_WINDOWS

    for spec in (*WINDOW_SPECS, CAPITAL_WINDOWS):
        assert _scan.windows(text, spec) == _windowed(text, spec), spec
    # the scanner finds the clusters of specs whose digits are no letters from one pass over the
    # text's digits, and the others character by character: the same windows either way
    specs = (*WINDOW_SPECS, CAPITAL_WINDOWS)
    scanned = _scan.Scanner(ANCHORS.native, SpanModel.untrained(()).native, specs).scan(text)[1]
    assert scanned == tuple(_windowed(text, spec) for spec in specs)


def test_a_code_point_is_in_a_range_where_the_character_class_says():
    from classifiers.privacy.canonical import _HIDING, _PUNCTUATION

    ranges = _HIDING + _PUNCTUATION + ((0x4E00, 0x9FFF), (0x41, 0x41))
    cls = re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]")
    every = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert [c for c in every if _scan.any_in("ab" + c, ranges) != bool(cls.search(c))] == []
    assert not _scan.any_in("", ranges) and _scan.any_in("xA", ranges) and not _scan.any_in("é", ((0x4E00, 0x9FFF),))


CUE_TEXT = ["1", "٣", "５", "1234567", " ", "\t", "\n", "\r", "\x0b", "\u2028", "\u3000", "-", "a", "%", "&", "#"]
CUE_TEXT += ["\\", "u", "\\u", "00e9", "0A", "g", "é"]


@settings(max_examples=800, deadline=None)
@given(texts(CUE_TEXT, size=16))
def test_the_reading_cues_are_the_tests_they_stand_for(text):
    """`reading_cues`: each bit is what a Python test of the whole text says, in every width of str."""
    from classifiers.privacy.readings import _CUE_ENTITY, _CUE_ESCAPE, _CUE_PERCENT, _ESCAPE

    expected = (
        (_CUE_ESCAPE if _ESCAPE.search(text) else 0)
        | (_CUE_PERCENT if "%" in text else 0)
        | (_CUE_ENTITY if "&#" in text else 0)
    )
    assert _scan.reading_cues(text) == expected, repr(text)
    assert _scan.reading_cues(text + "🎉") == expected


LINK_TEXT = ["https://", "http:", "//", "www.", "WWW.", "acme", "co", ".com", ".co", ".uk", ".de", "/path", "?q=1"]
LINK_TEXT += ["#top"]
LINK_TEXT += [".", "-", "_", "@", " ", ",", ")", "'", "x", "1", "é", "中", "py", ".py"]


CAPITAL_TEXT = ["AB", "C", "9", "&", "-", "--", "a", " ", "Ab", "\n", "_", "é", "中", "İ"]


@settings(max_examples=300, deadline=None)
@given(texts(CAPITAL_TEXT, size=30))
def test_words_in_capitals_in_their_windows_are_those_in_the_whole_text(text):
    from classifiers.privacy.capitals import CAPITAL_WINDOWS, capitals

    windows = _scan.Scanner(ANCHORS.native, SpanModel.untrained(()).native, (CAPITAL_WINDOWS,)).scan(text)[1][0]
    assert capitals(text, set(), set(), windows) == capitals(text, set(), set())


@settings(max_examples=300, deadline=None)
@given(texts(LINK_TEXT, size=30))
def test_links_are_the_matches_of_their_patterns_over_the_whole_text(text):
    from classifiers.privacy import links as linking

    spans = sorted(
        (m.span() for pattern in (linking._SCHEMED, linking._WWW, linking._HOST) for m in pattern.finditer(text)),
        key=lambda s: (s[0], -s[1]),
    )
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    assert [(f.start, f.end) for f in linking.find_links(text, linking.CUES.find(text))] == kept


def test_an_iban_shaped_run_with_odd_capitals_is_no_iban_and_no_error():
    text = "pay DE89 3704 0044 0532 0130 0İ and GB82 WEST 1234 5698 7654 3ı today"
    assert [f.type for f in PrivacyScanner().scan(text)].count("IBAN") == 0


# --- street addresses: the rules as they were written as regular expressions --------------------
ADDRESS_GAP = re.compile(r"[\s,>?–-]*(?:[\w.'’()]+[\s,>?–-]*){0,4}")
ADDRESS_PIECE = re.compile(
    rf"[ \t]*(?:,[ \t]*\n{{0,2}}|\n{{1,2}})[ \t>]*(?:,[ \t]*)?"
    rf"[{_UP}\d][\w'’.()-]*(?:[ \t]+(?:[{_UP}\d][\w'’.()-]*|(?:d[eiu]|la|del|am|an|upon)\b))*"
)
POSTCODE = re.compile(r"\b\d{4,6}\b")
HOUSE_NUMBER = re.compile(r"(?:[ \t]+(?:u|ul|st|str)\.)?[ \t]+\d{1,5}[A-Za-z]?\b(?![.,:/-]?\d)", re.IGNORECASE)
TRAILING_POSTCODE = re.compile(r"[ \t,]*\n?[ \t]*(?:[\w'’.()]+[ \t]+){0,3}\d{4,6}\b")
WORD = re.compile(r"[\w'’&]+")


def address_end(text: str, end: int) -> int:
    number = HOUSE_NUMBER.match(text, end)
    if number:
        end = number.end()
    tail = TRAILING_POSTCODE.match(text, end)
    best = tail.end() if tail else end
    position = end
    for _ in range(5):
        piece = ADDRESS_PIECE.match(text, position)
        if piece is None or len(re.findall(r"\d+", piece.group())) > 2:
            break
        position = piece.end()
        if POSTCODE.search(piece.group()) or "\n" not in text[end:position]:
            best = max(best, position)
    return best


def street_like(span: str) -> bool:
    if any(ch.isdigit() for ch in span):
        return True
    words = WORD.findall(span.lower())
    return bool(words) and words[-1] in STREET_WORDS


ADDRESS_TEXT = [
    "12 Main Street",
    "Via Tasso",
    " 129",
    " 12345",
    " 12345a",
    " 123456",
    "1.5",
    " ul. 5",
    " Str. 12a",
    " ST. 3",
    "\n",
    "\n\n",
    ", ",
    ",\n",
    "> ",
    " ",
    "\t",
    "Berlin",
    "10115",
    "Germany",
    "Rue de la Paix",
    " de ",
    " upon ",
    " am ",
    "Apt. 4",
    "Suite 501",
    "NY 10001",
    "53650",
    "+44 20 7946 0958",
    "12 34 56",
    "Straße",
    "Gata",
    "1234567",
    "12-34",
    "12.5",
    "3/4",
    "(",
    ")",
    "'",
    "-",
    "?",
    "x",
    "7",
    "Hauptstraße 5",
    "İSTANBUL",
    "ıst",
]


@settings(max_examples=400, deadline=None)
@given(texts(ADDRESS_TEXT), st.data())
def test_addresses_end_where_the_regular_expressions_say(text, data):
    model = _shared_spans().native
    word_ends = [i for i in range(1, len(text) + 1) if text[i - 1].isalnum()]  # where a candidate ends
    end = data.draw(st.sampled_from(word_ends) if word_ends else st.integers(0, len(text)))
    assert model.address_end(text, end) == address_end(text, end)
    start = data.draw(st.integers(0, end))
    assert model.street_like(text, start, end) == street_like(text[start:end])
    assert model.address_gap(text, start, end) == bool(ADDRESS_GAP.fullmatch(text, start, end))


@pytest.mark.parametrize(
    "text",
    [
        "Via Tasso 12345a, Napoli",
        "Hauptstraße 5\n10115 Berlin\nGermany",
        "ul. Długa 44/50, 00-241 Warszawa",
        "Piotrkowska str. 12a, Łódź",
        "12 High St.\n> Stratford upon Avon\n> CV37 6AB",
        "5 Rue de la Paix, 75002 Paris",
        "Flat 2, 7 King St 12345\n+44 20 7946 0958\n",
        "Av. da Liberdade 110, 1250-096 Lisboa, Portugal",
        "9554 62 Rue Gafsa Apt. 981\nToronto\n, ON\n 82269",
        "Calle Mayor 1,\n\n28013 Madrid",
        "Gata 3 am Main ST. 7",
        "Box 12 1234567 555 12 34",
        "Grove 4 12.5 3/4 İSTANBUL ıst",
        "Lane 9\tWalk 10 ? – road",
        "12 High St, Stratford upon Avon now",
        "Via Roma 5, 555 12 34 Milano",
        "Via Roma 5, 55 12 Milano",
    ],
)
def test_each_address_rule_at_every_position_of_a_written_address(text):
    model = _shared_spans().native
    for end in range(len(text) + 1):
        assert model.address_end(text, end) == address_end(text, end), end
        for start in range(max(0, end - 40), end + 1):
            assert model.street_like(text, start, end) == street_like(text[start:end]), (start, end)
            assert model.address_gap(text, start, end) == bool(ADDRESS_GAP.fullmatch(text, start, end)), (start, end)


_SPANS: list[SpanModel] = []


# --- phrases: the place names, as a walk over `[^\W\d_][\w'’-]*` words would find them -------
PLACE_TEXT = ["new", "york", "New", "York", "NEW", "lake", "city", "rio", "de", "janeiro", " ", "  ", "\t", "\n",
              ", ", ".", "-", "'", "’", "9", "_", "x", "İ", "Straße"]  # fmt: skip
PHRASES = ["new york", "new york city", "york", "lake city", "rio de janeiro", "de", "straße", "x-york"]


def _walked(text: str, phrases: set[str], longest: int) -> list[tuple[int, int]]:
    words = [m.span() for m in re.finditer(r"[^\W\d_][\w'’-]*", text)]
    found, i = [], 0
    while i < len(words):
        for n in range(min(longest, len(words) - i), 0, -1):
            phrase = text[words[i][0] : words[i + n - 1][1]]
            if "\n" not in phrase and " ".join(phrase.split()).lower() in phrases:
                found.append((words[i][0], words[i + n - 1][1]))
                i += n
                break
        else:
            i += 1
    return found


@settings(max_examples=400, deadline=None)
@given(texts(PLACE_TEXT, size=24))
def test_phrases_are_found_where_a_walk_over_the_words_finds_them(text):
    # "İ" lower-cases to two characters in Python and to one in C: no phrase here holds it
    assert _scan.Phrases(PHRASES, 3).find(text) == _walked(text, set(PHRASES), 3)


def _scanner() -> PrivacyScanner:
    if not _SCANNER:
        _SCANNER.append(PrivacyScanner())
    return _SCANNER[0]


_SCANNER: list[PrivacyScanner] = []


def _shared_spans() -> SpanModel:
    if not _SPANS:
        _SPANS.append(SpanModel.load())
    return _SPANS[0]


def test_the_compiled_scan_rejects_what_it_cannot_read():
    model = _shared_spans().native
    with pytest.raises(TypeError):
        model.find(b"bytes")
    with pytest.raises(ValueError):
        model.address_end("short", 10)
    with pytest.raises(ValueError):
        _scan.Anchors(["x"], [])  # a literal of one character cannot be filtered
    with pytest.raises(ValueError):
        _scan.windows("12", ("é", "", 1, 1, 0, 0))
    with pytest.raises(ValueError):
        _scan.windows("12", ("", "-1", 1, 1, 0, 0))  # a digit cannot also be a separator


def test_every_cue_looked_for_as_a_substring_begins_in_a_script_that_sends_a_text_to_the_search():
    """`Anchors.scripted` answers a text with no letter of `SCRIPTS` at once: a cue beginning
    elsewhere would never be found, so none is accepted; each one that is, is found."""
    from classifiers.privacy import PrivacyScanner

    anchors = PrivacyScanner().anchors
    cues = [c for c in (*anchors.exact, *anchors.folded) if not c[0].isascii()]
    assert len(cues) > 20
    assert all(anchors.find(f"x {c} y").get(c) == [2] for c in cues)
    with pytest.raises(ValueError):
        Anchors(("ελληνικά",), ())
