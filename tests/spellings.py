"""Private values written with every entry of the canonical reading's tables, combined.

`classifiers.privacy.canonical` reads the digits of every script, the digit words of every
language in its generated tables, every separator between digit groups, and spelled-out at
signs and dots as one normal form. This
module writes values with those entries: spelling `i` of `count()` takes the next entries of each
table in turn, so that the spellings together use every entry once at least, and one request holds
several entries at once (a card whose groups are in four scripts, joined by three separators). A
new table entry is drawn here, and sent by the tests that use this module, without a new test.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from classifiers.privacy.canonical import (
    ASTRAL_DIGITS,
    AT_WORDS,
    DOT_WORDS,
    LOOSE,
    OTHER_DIGITS,
    SEPARATORS,
)
from classifiers.privacy.tables import DIGIT_WORDS
from classifiers.privacy.worded import DASH_WORDS

SCRIPTS = tuple(zero for zero, _nine in (*OTHER_DIGITS, *ASTRAL_DIGITS))  # each script's zero
# Digit words by language, every word of a digit in turn ("um" and "uma" for 1 in Portuguese).
WORDS = {
    language: {digit: [word for word, d in table.items() if d == digit] for digit in "0123456789"}
    for language, table in DIGIT_WORDS.items()
}
SPOKEN_SEPARATORS = tuple(s for s in SEPARATORS if s not in "\r\n\t")  # in a line of prose
# An SSN joined by a LOOSE separator is read as a sum ("125*12=1500"): only a card's printed
# grouping is read through those.
SSN_SEPARATORS = tuple(s for s in SPOKEN_SEPARATORS if s not in LOOSE)
# Made-up words: whatever of them reaches a provider came from the value, not the prose around it.
MAILBOX_WORDS = ("zorvath", "quillomer", "brantuvo", "pexalind", "morquesta", "vindaloor", "teskarun")
HOST_WORDS = ("mailvyre", "postkarro", "zentumail", "huxabox", "ovrelink", "quantomel", "dravipost")


@dataclass(frozen=True)
class Spelled:
    """One value as written, and the fragments of it that must not reach anyone it is kept from."""

    kind: str  # what the value is: "card", "SSN", "email"
    text: str  # as written in the request
    tells: tuple[str, ...]  # the whole value, its plain form, and each part long enough to matter
    entries: frozenset[tuple[str, object]]  # the table entries it is written with: ("separator", "/")


def count() -> int:
    """How many spellings it takes to use every entry of every table (the cards in digit words,
    one a language and a turn of its words, are shared out among them: `worded_turns`)."""
    return max(
        -(-len(SCRIPTS) // 7),  # a card's 4 groups and an SSN's 3 each take a script
        -(-len(SPOKEN_SEPARATORS) // 3),  # and 3 separators
        -(-len(SSN_SEPARATORS) // 2),  # and 2
        len(DASH_WORDS),
        len(AT_WORDS),
        len(DOT_WORDS),
    )


def worded_turns() -> list[tuple[str, int]]:
    """(language, turn): a card in that language's digit words, the turn-th word of each digit
    (for digits with more than one); every word of every language is in one of them."""
    return [
        (language, turn)
        for language in sorted(WORDS)
        for turn in range(max(len(words) for words in WORDS[language].values()))
    ]


def spellings(i: int) -> tuple[Spelled, ...]:
    """Spelling `i`: a card in other scripts' digits, an SSN, cards in digit words (a few
    languages'), an e-mail address spelled out."""
    rng = random.Random(i)
    scripts = [SCRIPTS[(7 * i + k) % len(SCRIPTS)] for k in range(7)]
    separators = [SPOKEN_SEPARATORS[(3 * i + k) % len(SPOKEN_SEPARATORS)] for k in range(3)]
    separators += [SSN_SEPARATORS[(2 * i + k) % len(SSN_SEPARATORS)] for k in range(2)]
    card = _card(rng)
    ssn = _ssn(rng)
    return (
        _digits("card", [card[:4], card[4:8], card[8:12], card[12:]], scripts[:4], separators[:3]),
        _digits("SSN", [ssn[:3], ssn[3:5], ssn[5:]], scripts[4:], separators[3:]),
        *(_worded(_card(rng, every_digit=True), language, turn, i) for language, turn in worded_turns()[i :: count()]),
        _mailbox(i),
    )


def used() -> set[tuple[str, object]]:
    return {entry for i in range(count()) for spelled in spellings(i) for entry in spelled.entries}


def every_entry() -> set[tuple[str, object]]:
    words = {("word", (language, word)) for language, table in DIGIT_WORDS.items() for word in table}
    return {
        *(("script", zero) for zero in SCRIPTS),
        *(("separator", s) for s in SPOKEN_SEPARATORS),
        *words,
        *(("dash", d) for d in DASH_WORDS),
        *(("at", a) for a in AT_WORDS),
        *(("dot", d) for d in DOT_WORDS),
    }


def _digits(kind: str, groups: list[str], scripts: list[int], separators: list[str]) -> Spelled:
    written = ["".join(chr(zero + int(d)) for d in group) for group, zero in zip(groups, scripts, strict=True)]
    text = written[0] + "".join(s + g for s, g in zip(separators, written[1:], strict=True))
    long_groups = tuple(w for w, g in zip(written, groups, strict=True) if len(g) >= 4)
    entries = {("script", zero) for zero in scripts} | {("separator", s) for s in separators}
    return Spelled(kind, text, (text, "".join(groups), *long_groups), frozenset(entries))


def _worded(card: str, language: str, turn: int, i: int) -> Spelled:
    dash = DASH_WORDS[i % len(DASH_WORDS)]
    words = [WORDS[language][d][turn % len(WORDS[language][d])] for d in card]
    groups = [" ".join(words[k : k + 4]) for k in range(0, 16, 4)]
    text = f"{groups[0]} {dash} {groups[1]}, {groups[2]} {dash} {groups[3]}"
    entries = {("word", (language, w)) for w in words} | {("dash", dash)}
    return Spelled("card", text, (text, card, *groups), frozenset(entries))


def _mailbox(i: int) -> Spelled:
    at = AT_WORDS[i % len(AT_WORDS)]
    dot = DOT_WORDS[i % len(DOT_WORDS)]
    local = (MAILBOX_WORDS[i % len(MAILBOX_WORDS)], MAILBOX_WORDS[(i + 3) % len(MAILBOX_WORDS)])
    host = HOST_WORDS[i % len(HOST_WORDS)]
    opening, closing = (("(", ")"), ("[", "]"), ("{", "}"), (" ", " "))[i % 4]
    text = f"{local[0]}{opening}{dot}{closing}{local[1]}{opening}{at}{closing}{host}{opening}{dot}{closing}com"
    plain = f"{local[0]}.{local[1]}@{host}.com"
    return Spelled("email", text, (text, plain, *local, host), frozenset({("at", at), ("dot", dot)}))


def _card(rng: random.Random, every_digit: bool = False) -> str:
    """A number a card's checksum accepts, and no one's; with `every_digit`, one that has all ten."""
    while True:
        body = "4" + "".join(str(rng.randrange(10)) for _ in range(14))
        total = 0
        for k, d in enumerate(reversed(body)):
            n = int(d) * (2 if k % 2 == 0 else 1)
            total += n - 9 if n > 9 else n
        card = body + str(-total % 10)
        if not every_digit or len(set(card)) == 10:
            return card


def _ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}{rng.randrange(1, 100):02d}{rng.randrange(1, 10000):04d}"
