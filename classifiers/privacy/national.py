"""National identity numbers whose own check digits vouch for them, with no cue around them: a
Chinese resident ID (18 characters: a region, a birth date, a check character), a Brazilian CPF
as it is written ("123.456.789-09", two check digits), a Spanish DNI or NIE (a check letter).

A cue names any identifier (`identifiers`); these are found without one, as a card is by its
Luhn digit, because their shape and check are specific enough: a random run of 18 digits is a
Chinese ID once in 11 by its check character, and far less often with a real date in it.
Read only in the number windows the scan found (runs of seven digits or more).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

from classifiers.privacy.findings import Finding

DETECTOR = "national-id"
CONFIDENCE = 0.97  # a check digit and a shape: above a phone's, and a card's where the digits are both
# One pass for the three: a Chinese ID, a CPF as written, a DNI or NIE.
_NATIONAL = re.compile(
    r"(?<![0-9A-Za-z.])(?:(\d{17}[\dXx])|(\d{3}\.\d{3}\.\d{3}-\d{2})|([XYZxyz]-?\d{7}|\d{8})-?([A-Za-z]))"
    r"(?![0-9A-Za-z-])"
)
_CHINESE_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def national_ids(text: str, start: int, end: int) -> Iterator[Finding]:
    """ID_NUMBER findings in `text[start:end]` (a number window)."""
    for m in _NATIONAL.finditer(text, start, end):
        chinese, cpf, spanish, letter = m.groups()
        if chinese_ok(chinese) if chinese else cpf_ok(cpf) if cpf else spanish_ok(spanish, letter):
            yield Finding("ID_NUMBER", m.start(), m.end(), CONFIDENCE, DETECTOR)


def chinese_ok(number: str) -> bool:
    """The check character (ISO 7064 MOD 11-2) and a birth date that is a real day since 1900."""
    total = sum(int(d) * w for d, w in zip(number[:17], _CHINESE_WEIGHTS, strict=True))
    if "10X98765432"[total % 11] != number[17].upper():
        return False
    try:
        born = datetime.date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    return datetime.date(1900, 1, 1) <= born <= datetime.date.today()


def cpf_ok(written: str) -> bool:
    digits = [int(c) for c in written if c.isdigit()]
    if len(set(digits)) == 1:  # "111.111.111-11" passes the checks and is no one's
        return False
    for n in (9, 10):
        check = sum(d * w for d, w in zip(digits[:n], range(n + 1, 1, -1), strict=True)) * 10 % 11 % 10
        if check != digits[n]:
            return False
    return True


def spanish_ok(number: str, letter: str) -> bool:
    digits = number.replace("-", "")
    prefix = "XYZ".find(digits[0].upper())
    value = int((str(prefix) + digits[1:]) if prefix >= 0 else digits)
    return _DNI_LETTERS[value % 23] == letter.upper()
