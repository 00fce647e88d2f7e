"""National identity numbers whose own check digits vouch for them, with no cue around them: a
Chinese resident ID (18 characters: a region, a birth date, a check character), a Brazilian CPF
as it is written ("123.456.789-09", two check digits), a Spanish DNI or NIE (a check letter), a
French social security number (NIR: 15 digits, a key of two), a Swedish personal identity number
as it is written ("850709-9805": a birth date, a Luhn digit).

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
from classifiers.privacy.luhn import luhn_ok

DETECTOR = "national-id"
CONFIDENCE = 0.97  # a check digit and a shape: above a phone's, and a card's where the digits are both
# One pass for them all: a Chinese ID, a CPF as written, a DNI or NIE, a NIR (its groups a space
# apart or not; Corsica's departments are 2A and 2B), a Swedish number with its hyphen.
_NATIONAL = re.compile(
    r"(?<![0-9A-Za-z.])(?:(\d{17}[\dXx])|(\d{3}\.\d{3}\.\d{3}-\d{2})|([XYZxyz]-?\d{7}|\d{8})-?([A-Za-z])"
    r"|([12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2})|((?:19|20)?\d{6}[-+]\d{4}))"
    r"(?![0-9A-Za-z-])"
)
_CHINESE_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def national_ids(text: str, start: int, end: int) -> Iterator[Finding]:
    """ID_NUMBER findings in `text[start:end]` (a number window)."""
    for m in _NATIONAL.finditer(text, start, end):
        if _valid(*m.groups()):
            yield Finding("ID_NUMBER", m.start(), m.end(), CONFIDENCE, DETECTOR)


def _valid(
    chinese: str | None, cpf: str | None, spanish: str | None, letter: str | None, nir: str | None, swedish: str | None
) -> bool:
    if chinese:
        return chinese_ok(chinese)
    if cpf:
        return cpf_ok(cpf)
    if spanish and letter:
        return spanish_ok(spanish, letter)
    return nir_ok(nir) if nir else swedish_ok(swedish) if swedish else False


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


def nir_ok(written: str) -> bool:
    """The key: 97 less the first thirteen digits modulo 97 (Corsica's 2A and 2B read as 19 and 18)."""
    compact = written.replace(" ", "").upper().replace("2A", "19", 1).replace("2B", "18", 1)
    return 97 - int(compact[:13]) % 97 == int(compact[13:])


def swedish_ok(written: str) -> bool:
    """A birth date and the Luhn digit over the ten digits from the year's last two."""
    digits = written.replace("-", "").replace("+", "")[-10:]
    try:
        datetime.datetime.strptime(digits[:6], "%y%m%d")
    except ValueError:
        return False
    return luhn_ok(digits)
