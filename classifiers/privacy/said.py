"""Numbers said in words, put together: "four thousand five hundred and thirty-nine" is 4539.

A number read aloud is a run of words each of which adds to it ("four", "thirty-nine", "пятьсот"),
multiplies what came before ("hundred", "тысячи") or joins two parts ("and", "y", "و"). `Number`
keeps one number being said: its value, and how much may still be added to it before another
number begins ("four five" is two numbers, "forty five" one, "five hundred three" one). The words
and what each does in each language are generated from num2words (`research.reading_tables`,
which checks that every number from 0 to 9,999 each language is kept for reads back as itself);
`worded` reads them in texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# A word longer than this is no number's: num2words' longest below 10,000 in the languages kept is
# 57 letters ("kahdeksansataakahdeksankymmentäkahdeksan"), and cutting a word costs its length
# times its parts' ("viertausend" a thousand times in one word is no number, read or not).
LONGEST_WORD = 96
JOINS = "&"  # a word that joins two parts of one number ("and", "y", "و")
TIMES = "x"  # before a multiplier: "x100" is "hundred"
TEEN = "+10"  # a word that makes the unit said before it a teen ("dua belas", "ثلاثة عشر": 12, 13)


def _room(value: int) -> int:
    """What may be added after a part of this value: 99 after 500, 9 after 40, none after 45."""
    if value == 0:
        return 0
    room = 1
    while value % (room * 10) == 0:
        room *= 10
    return room - 1


@dataclass
class Number:
    """One number being said."""

    value: int
    room: int  # how much may still be added to it
    last: int  # the last part added ("9" of 4509), which a tens word after a joiner goes before
    before_last: int  # the room before that part was added
    joined: bool = False  # a joining word came last

    @classmethod
    def said(cls, meaning: str) -> Number:
        """The number a word that means `meaning` begins (a multiplier alone multiplies one:
        "hundred" is 100)."""
        value = int(meaning.removeprefix(TIMES))
        return cls(value, _room(value), value, 0)

    def takes(self, meaning: str) -> bool:
        """Whether a word that means `meaning` is part of this number, not the next; if it is,
        the number now holds it."""
        if meaning == JOINS:
            self.joined = True
            return True
        joined, self.joined = self.joined, False
        if meaning == TEEN:
            if not (0 < self.last < 10 and (self.value == self.last or self.last + 10 <= self.before_last)):
                # (a unit alone, or one said where a teen fits: "seratus dua belas", 112)
                return False
            self.value += 10
            self.last += 10
            self.room = 0
            return True
        if meaning.startswith(TIMES):
            factor = int(meaning[1:])
            if factor < 1000 and 0 < self.last < 10 and self.value % factor == self.last:
                self.value += self.last * (factor - 1)  # "five hundred", "ba mươi": the 5 said was 500
                self.last *= factor
                self.room = factor - 1
                return True
            if factor >= 1000 and 0 < self.value < factor:
                self.value *= factor  # "сто двадцать тысяч": 120 thousand
                self.last = self.value
                self.room = factor - 1
                return True
            if factor <= self.room:  # "min yüz": a thousand, then a hundred
                self.before_last = self.room
                self.value += factor
                self.last = factor
                self.room = factor - 1
                return True
            return False
        part = int(meaning)
        if part == 0:
            return False
        if part <= self.room:
            self.before_last = self.room
            self.value += part
            self.last = part
            self.room = min(self.room, _room(part))
            return True
        # counted in twenties, a teen joins a score: "soixante et onze" is 60 and 11
        if joined and 10 <= part < 20 and 0 < self.last < 100 and self.last % 20 == 0 and self.room == 9:
            self.value += part
            self.last += part
            self.room = 0
            return True
        # after a joining word a tens word goes before the unit said first ("خمسة و أربعون", 5 and
        # 40; "واحد و عشرون", 21)
        fits = self.value == self.last or self.last + part <= self.before_last
        if joined and 0 < self.last < _room(part) + 1 and fits:
            self.value += part
            self.last += part
            self.room = 0
            return True
        return False

    @property
    def digits(self) -> str:
        return str(self.value)


def read(meanings: list[str]) -> list[str]:
    """The numbers a run of words that mean `meanings` says, as digits: ["4", "x1000", "500",
    "&", "30", "9"] -> ["4539"]. A multiplier with nothing before it multiplies one ("hundred":
    100); a joining word that ends the run is left off."""
    out: list[Number] = []
    for meaning in meanings:
        if out and out[-1].takes(meaning):
            continue
        if meaning == JOINS:
            continue
        out.append(Number.said(meaning))
    return [n.digits for n in out]


class Parts:
    """A language's number words, and the parts its words of a number are made of, with what each
    means ("vier" "4", "tausend" "x1000"): a number written as one word is cut into them."""

    def __init__(self, meanings: Mapping[str, str]) -> None:
        self.meanings = meanings
        self._lengths = sorted({len(word) for word in meanings})

    def cut(self, word: str) -> list[str] | None:
        """What a word made of these parts means, part by part, where its parts say one number:
        "viertausendfünfhundertneununddreißig" -> ["4", "x1000", "5", "x100", "39"], "사천오백"
        -> ["4", "x1000", "5", "x100"], "fortyfive" -> ["40", "5"]; else None."""
        parts = self._parts(word)
        return parts if parts is not None and len(read(parts)) == 1 else None

    def read(self, word: str) -> list[str] | None:
        """What a word made of these parts means, part by part: where they say one number (`cut`),
        or where they are numbers' words below 100 alone that say several, run together
        ("fourfivethreenine" -> ["4", "5", "3", "9"], "onefourseventynine" -> ["1", "4", "70",
        "9"]: 1, 4, 79); else None."""
        parts = self._parts(word)
        if parts is None:
            return None
        if len(read(parts)) == 1 or all(p.isdigit() and int(p) < 100 for p in parts):
            return parts
        return None

    def _parts(self, word: str) -> list[str] | None:
        """The meanings of the two or more parts `word` is made of, the first of them a count or a
        multiplier; None where no parts make it up. Of the ways to cut it, the one with fewest
        parts (hyphens within are left out: "négyezer-ötszáz"). Only the places a part ends are
        cut on from, so a word that begins with none costs one look per part length."""
        word = word.replace("-", "")
        size = len(word)
        if size > LONGEST_WORD:
            return None
        fewest: list[list[str] | None] = [[]] + [None] * size  # the cut of each beginning
        for start in range(size):
            before = fewest[start]
            if before is None:
                continue
            for length in self._lengths:
                end = start + length
                if end > size:
                    break
                meaning = self.meanings.get(word[start:end])
                if meaning is None:
                    continue
                so_far = fewest[end]
                if so_far is None or len(before) + 1 < len(so_far):
                    fewest[end] = [*before, meaning]
        parts = fewest[-1]
        # a number begins with a count or a multiplier, not a joining word or a teen's ten: "emil"
        # is no Portuguese "e mil", "edy" no Albanian "e dy"
        if parts is None or len(parts) < 2 or parts[0] in (JOINS, TEEN):
            return None
        return parts
