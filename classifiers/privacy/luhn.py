"""The Luhn check digit: a card number's, and a Swedish personal identity number's."""

from __future__ import annotations


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# How cards are printed: 4-4-4-4 (and 4-4-4-4-3 for 19 digits), 4-6-5 and 4-6-4.
CARD_GROUPINGS = ((4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4))
SSN_GROUPING = (3, 2, 4)
