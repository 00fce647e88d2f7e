"""The canonical reading's generated tables (`classifiers/models/reading_tables.json`) are what
their generator writes from the libraries that keep them: `python -m research.reading_tables`."""

from __future__ import annotations

import json
import unicodedata

from classifiers.privacy.tables import NUMERALS, TABLES_PATH
from research import reading_tables
from research.reading_tables import written


def test_the_committed_tables_are_what_the_generator_writes():
    assert reading_tables.TABLES_PATH == TABLES_PATH
    committed = TABLES_PATH.read_text(encoding="utf-8")
    assert json.loads(committed)["unicode"] == unicodedata.unidata_version, "regenerate on this Python's Unicode"
    assert committed == written(), "run `python -m research.reading_tables` and commit its file"


def test_every_numeral_is_worth_the_digit_unicode_gives_it_and_none_is_a_decimal_digit():
    assert len(NUMERALS) > 500
    for ch, digit in NUMERALS.items():
        assert unicodedata.numeric(ch) == int(digit) and unicodedata.decimal(ch, None) is None, hex(ord(ch))
    assert {NUMERALS[ch] for ch in "〇一二三四五六七八九"} == set("0123456789")
    assert NUMERALS["④"] == "4" and NUMERALS["²"] == "2" and NUMERALS["Ⅸ"] == "9" and NUMERALS["肆"] == "4"
