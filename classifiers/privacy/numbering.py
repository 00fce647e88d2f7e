"""Phone numbers by Google's numbering plans (the `phonenumbers` library), where the national
patterns (`structured.phones`) found none: any valid number written with its country code, and
mobile numbers of the countries in `MOBILE_REGIONS` written nationally (`13800138000`).
"""

from __future__ import annotations

import re

import phonenumbers

from classifiers.privacy.findings import Finding, Taken

MOBILE_REGIONS = ("CN", "IN", "BR", "JP", "GB", "DE", "FR", "RU", "ID", "MX", "NG", "US")
_DIGIT_RUN = re.compile(r"\+?\d[\d \t().-]{5,20}\d")
# An ISO date, then maybe a time: a timestamp in a log line, not a phone number ("1971-09-07 22").
_TIMESTAMP = re.compile(r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?![\d-])")


def international_phones(text: str, windows: list[tuple[int, int]], found: list[Finding]) -> list[Finding]:
    """Phone numbers the national patterns missed, in the windows where seven digits or more run
    (`windows`, from the C scan), skipping what is found there already."""
    taken = Taken(found)
    phones: list[Finding] = []
    for window_start, window_end in windows:
        for m in _DIGIT_RUN.finditer(text, window_start, window_end):
            start, end = m.start(), m.end()
            if taken.overlaps(start, end):
                continue
            digits = sum(ch.isdigit() for ch in m.group())
            if 7 <= digits <= 15 and not _TIMESTAMP.match(m.group()) and _is_phone(m.group(), digits):
                phones.append(Finding("PHONE", start, end, 0.8, "phonenumbers"))
    return phones


# Written nationally, a mobile number's digits stand in groups of two or more, but for a trunk
# digit ("8 (912) 345-67-89"). A run of lone digits (a matrix, a row of scores) is none, and is not
# asked of the twelve numbering plans: "1 1 1 ...", or random digits so spaced, cost 25-37 us a
# character that way, a hundred times what prose costs.
_LONE_DIGITS = re.compile(r"(?<!\d)\d(?!\d)")


def _is_phone(raw: str, digits: int) -> bool:
    if raw.startswith("+"):
        return _valid(raw, None, any_type=True)
    if digits < 10 or len(_LONE_DIGITS.findall(raw)) > 2:
        return False
    return any(_valid(raw, region, any_type=False) for region in MOBILE_REGIONS)


def _valid(raw: str, region: str | None, any_type: bool) -> bool:
    try:
        number = phonenumbers.parse(raw, region)
    except phonenumbers.NumberParseException:
        return False
    if not phonenumbers.is_valid_number(number):
        return False
    return any_type or phonenumbers.number_type(number) == phonenumbers.PhoneNumberType.MOBILE
