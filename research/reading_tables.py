"""Generate the canonical reading's tables (`classifiers/models/reading_tables.json`) from the
libraries that keep them, instead of typing them:

- `numerals`: every character with a numeric value from 0 to 9 that is no decimal digit, from
  Unicode's numeric properties (`unicodedata`): ideographic numerals (〇 四 壹 幺), circled,
  parenthesized, superscript and subscript digits, Roman numerals one to nine, other scripts'
  counting signs. (Decimal digits, every script's, are read by `unicodedata.decimal` itself.)

    python -m research.reading_tables

`tests/test_reading_tables.py` checks that the committed file is what this writes.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from classifiers.privacy.numerals import TABLES_PATH

LAST_CODE_POINT = 0x3134F  # the end of the CJK extension planes: nothing above holds a numeral


def numerals() -> dict[str, list[list[int]]]:
    """For each value 0 to 9, the ranges of code points that have it and are no decimal digit."""
    by_value: dict[str, list[list[int]]] = {str(v): [] for v in range(10)}
    for code in range(0x80, LAST_CODE_POINT + 1):
        ch = chr(code)
        if unicodedata.decimal(ch, None) is not None or unicodedata.category(ch) == "Cs":
            continue
        value = unicodedata.numeric(ch, None)
        if value is None or value != int(value) or not 0 <= value <= 9:
            continue
        ranges = by_value[str(int(value))]
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return by_value


def tables() -> dict[str, Any]:
    return {"unicode": unicodedata.unidata_version, "numerals": numerals()}


def written() -> str:
    return json.dumps(tables(), ensure_ascii=False, separators=(",", ":")) + "\n"


def main() -> None:
    Path(TABLES_PATH).write_text(written(), encoding="utf-8")
    print(f"wrote {TABLES_PATH}")


if __name__ == "__main__":
    main()
