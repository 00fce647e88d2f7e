"""Numbers said in words, read as their digits: "four five three nine", "четыре пять три девять",
"four thousand five hundred and thirty-nine", "viertausendfünfhundertneununddreißig".

- a run of four digit words or more, all of one language of `DIGIT_WORDS` (76, generated from
  `num2words` and Unicode CLDR's spell-out rules), as its digits (a said or written dash kept as
  `-`): "четыре пять три девять", "dört bir bir bir", but not "from one to two to three", whose
  "to" is Norwegian;
- a number from 10 to 99 in one word (`NUMBER_WORDS`: "forty-five", "fünfundvierzig") or as its
  tens and a unit ("сорок пять") as its two digits;
- in 65 of those languages, any number below 10,000 said in words (`MAGNITUDE_WORDS`: "four
  thousand five hundred and thirty-nine", "cuatro mil quinientos treinta y nueve") as its digits,
  put together by `said`; in 14 of them (`JOINED_LANGUAGES`) written as one word of parts
  ("viertausendfünfhundertneununddreißig", "quattromilacinquecento", "사천오백"), cut into them.

Only where the scan's one pass found their cues close together (`windows`) is a text read for them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import replace

from classifiers.privacy.anchors import Anchors
from classifiers.privacy.rewriting import Reading, rewritten
from classifiers.privacy.said import JOINS, TIMES, Number, Parts
from classifiers.privacy.said import read as numbers_said
from classifiers.privacy.tables import DIGIT_WORDS, JOINED_LANGUAGES, MAGNITUDE_WORDS, MARKS, NUMBER_WORDS

# A dash said between a number's groups ("four five tiret six seven"), in those languages.
DASH_WORDS = ("dash", "hyphen", "tiret", "trait", "bindestrich", "strich", "guion", "guión", "trattino", "hífen",
              "hifen", "streepje")  # fmt: skip
# word -> the languages it is a number's word in, and what it does in each (`said`): a digit's or
# a number's from 10 to 99, or a word past tens, which goes on a number those began ("500",
# "x100", "&"); as a word of one part ("four": {"en": ["4"]}, `_said_as`)
_SAID: dict[str, dict[str, str]] = {}
for _tables in (DIGIT_WORDS, NUMBER_WORDS):
    for _language, _table in _tables.items():
        for _word, _said in _table.items():
            _SAID.setdefault(_word, {})[_language] = _said
for _language, _table in MAGNITUDE_WORDS.items():
    for _word, _said in _table.items():
        _SAID.setdefault(_word, {}).setdefault(_language, _said)
_SAID_AS = {word: {language: [meaning] for language, meaning in said.items()} for word, said in _SAID.items()}
# ... and in each language, those words as parts a word may be made of: a number written as one
# word ("viertausendfünfhundertneununddreißig", "fortyfive") or digits run together
# ("fourfivethreenine")
_PARTS: dict[str, Parts] = {
    language: Parts({**DIGIT_WORDS[language], **NUMBER_WORDS[language], **MAGNITUDE_WORDS.get(language, {})})
    for language in DIGIT_WORDS
}
_JOINED = frozenset(JOINED_LANGUAGES)  # where every number is written so (its hyphens within too)
# ... and, by how a part begins and ends (its first two letters, or its one; its last), the
# languages it is a part in: most words are no number's, and are told so by two looks
_BEGINS: dict[str, frozenset[str]] = {}
_ENDINGS: dict[str, frozenset[str]] = {}
for _language, _parts in _PARTS.items():
    for _part in _parts.meanings:
        _BEGINS[_part[:2]] = _BEGINS.get(_part[:2], frozenset()) | {_language}
        _ENDINGS[_part[-2:]] = _ENDINGS.get(_part[-2:], frozenset()) | {_language}
_NONE: frozenset[str] = frozenset()


def _begun(text: str) -> frozenset[str]:
    """The languages a part of which `text` may begin with."""
    return _BEGINS.get(text[:2], _NONE) | _BEGINS.get(text[:1], _NONE)


def _ended(word: str) -> frozenset[str]:
    """The languages a part of which `word` may end with."""
    return _ENDINGS.get(word[-2:], _NONE) | _ENDINGS.get(word[-1:], _NONE)


_DASH_WORDS = frozenset(DASH_WORDS)
# A word: letters and the marks on them ("నాలుగు"), hyphens and apostrophes within it ("п'ять";
# "one-two-three" is read word by word).
_LETTER = rf"(?:[^\W\d_]|[{MARKS}])"
_TOKEN = re.compile(rf"{_LETTER}+(?:['’-]{_LETTER}+)*")
# What may stand between two words of a number read aloud: spaces and commas, or a written dash.
_WORD_GAP = re.compile(r"[\s,]+|\s*-\s*")
LEAST_WORDS = 4  # a run this long is a number read aloud: "one or two", "two-thirds" are not
# The cues of a number read aloud: each word after a space (the first of a run may stand anywhere,
# the rest follow a space), three within a span of four words. An ASCII word of three letters or
# fewer with what may end it in a run, else " un" would be every " under"; a longer one, or one
# in another script (where most texts hold none, and each end made 240 Hangul and Devanagari
# words 1,700 literals, 2% of a 1,000-token conversation's scan), as a prefix,
# found once in C, and kept only where the word ends there (`_parts_at`): Danish "firs" (80) is in
# every " first", Norwegian "atten" (18) in " attention". (With each end, the 2,300 words' 16,000
# literals slowed the scan's one pass by 60%.)
_ENDS = (" ", ",", "-", "\n", ".", ";", ")")
# each cue -> the word it is of, and the languages that word is a number's in
# (every word that says a number: a digit's, 10 to 99, a hundred's or another form of a unit,
# "пятьсот", "două", not a multiplier or a joining word alone)
_SAYS: dict[str, frozenset[str]] = {
    word: frozenset(language for language, meaning in said.items() if meaning.isdigit())
    for word, said in _SAID.items()
    if any(meaning.isdigit() for meaning in said.values())
}
_CUE_WORD: dict[str, tuple[str, frozenset[str]]] = {
    cue: (w, languages)
    for w, languages in _SAYS.items()
    for cue in ([f" {w}"] if len(w) > 3 or not w.isascii() else [f" {w}{end}" for end in _ENDS])
}


_UNITS_AND_TENS = frozenset((*range(1, 10), *range(10, 100, 10)))


def _heads(parts: Parts) -> set[str]:
    """How a word made of a language's `parts` may begin, beyond a digit's word: a multiplier
    ("tausend..."), a unit and a multiplier ("einhundert...", "duemila...", "사천..."), a short
    multiplier and a unit or tens ("yüzelli...", "백육..."). Each is a cue found as a prefix, kept
    where the whole word is made of parts (`_parts_at`)."""
    multipliers = [p for p, meaning in parts.meanings.items() if meaning.startswith(TIMES)]
    units = [p for p, meaning in parts.meanings.items() if meaning.isdigit() and int(meaning) < 10]
    # (a head is found as a prefix: "백육" begins "백육십삼" too, so a unit or a tens word will do)
    numbers = [p for p, meaning in parts.meanings.items() if meaning.isdigit() and int(meaning) in _UNITS_AND_TENS]
    return (
        {m for m in multipliers if len(m) > 3}
        | {u + m for u in units for m in multipliers}
        | {m + n for m in multipliers if len(m) <= 3 for n in numbers}
    )


for _language in JOINED_LANGUAGES:
    for _head in _heads(_PARTS[_language]):
        _word, _languages = _CUE_WORD.get(f" {_head}", (_head, frozenset()))
        _CUE_WORD[f" {_head}"] = (_word, _languages | {_language})
DIGIT_WORD_CUES = Anchors((), tuple(_CUE_WORD))
WORDED_SPAN = 3 * (max(map(len, _SAYS)) + len(" bindestrich ")) + 1
WORD_REACH = max(map(len, _SAYS)) + len(" bindestrich ")  # from a cue to where its run may begin or end


def _going_on(number: Number, meanings: list[str]) -> Number | None:
    """`number` with a word that means `meanings` added, where the word goes on it (all of a
    word's parts, or none), else None."""
    if len(meanings) == 1:
        return number if number.takes(meanings[0]) else None
    going = replace(number)
    return going if all(going.takes(meaning) for meaning in meanings) else None


def read(text: str, windows: list[tuple[int, int]] | None = None) -> Reading | None:
    """Each run of `LEAST_WORDS` digit words or more of one language as its digits, the spaces
    between them left out and a said or written dash kept ("un deux trois tiret quatre" ->
    "123-4"), each digit located on its word; within `windows` (where the scan saw their cues),
    else in the whole text."""
    spans: list[tuple[int, int, list[tuple[str, int, int]]]] = []
    for start, end in [(0, len(text))] if windows is None else windows:
        if spans and start < spans[-1][1]:
            start = spans[-1][1]
        spans += _runs(text, start, end)
    return rewritten(text, spans)


def _words(text: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    """The words in text[start:end], (start, end, lower case); one hyphenated that is no number's
    word as its parts, the hyphens between them as "-" words."""
    for m in _TOKEN.finditer(text, start, end):
        word = m.group().lower()
        if "-" not in word or word in _SAID or _JOINED.intersection(_said_as(word)):
            yield m.start(), m.end(), word
            continue
        at = m.start()
        for k, part in enumerate(word.split("-")):
            if k:
                yield at, at + 1, "-"
                at += 1
            yield at, at + len(part), part
            at += len(part)


def _said_as(word: str) -> dict[str, list[str]]:
    """What `word` does in a number said, in each language it is a number's word in (`said`: one
    meaning) or is made of such words' parts (its parts' meanings: "viertausend" ["4", "x1000"],
    "fourfive" ["4", "5"])."""
    said = _SAID_AS.get(word)
    if said is not None:
        return said
    begins = _begun(word)
    if not begins:
        return {}
    word = word.replace("-", "")
    languages = begins & _ended(word)
    return {language: cut for language in languages if (cut := _PARTS[language].read(word)) is not None}


def _runs(text: str, start: int, end: int) -> list[tuple[int, int, list[tuple[str, int, int]]]]:
    """The runs of number words that begin in text[start:end] (each read to its end, past `end`
    too), each as (start, end, its digits located). Each number said is put together (`said`):
    "forty five" and "four thousand five hundred and thirty-nine" are each one; "four five" two. A
    joining word between two numbers ("one and two") ends the run: a list, not a number read."""
    runs: list[tuple[int, int, list[tuple[str, int, int]]]] = []
    pieces: list[tuple[str, int, int]] = []  # the current run's numbers and dashes
    number: Number | None = None  # the number the last piece is, while it is being said
    languages: set[str] = set()
    last = -1  # where the current run's last word ends

    def close() -> None:
        nonlocal number
        while pieces and pieces[-1][0] == "-":
            pieces.pop()  # a run ends on a digit
        if sum(p[0] != "-" for p in pieces) >= LEAST_WORDS:
            runs.append((pieces[0][1], pieces[-1][2], list(pieces)))
        pieces.clear()
        languages.clear()
        number = None

    for first, stop, word in _words(text, start, len(text)):
        joined = last >= 0 and (first == last or _WORD_GAP.fullmatch(text, last, first) is not None)
        if not joined:
            close()
            if first >= end:
                break  # past the window, and no run goes on into it
        if word == "-" or word in _DASH_WORDS:
            if pieces and pieces[-1][0] != "-":
                pieces.append(("-", first, stop))
                number = None
                last = stop
            else:
                close()
                last = -1
            continue
        said = _said_as(word)
        common = languages.intersection(said) if said and languages else set(said)
        if not common:
            close()
            if not said:
                last = -1
                continue
            common = set(said)
        meanings = said[min(common)]  # (the same in each, but for a word two languages read apart)
        if meanings == [JOINS] and number is None:
            close()
            last = -1
            continue
        if pieces and pieces[-1][0] != "-" and "-" in text[last:first]:
            pieces.append(("-", last, first))  # a written dash between two words
            number = None
        languages.clear()
        languages.update(common)
        after_join = number is not None and number.joined
        if len(meanings) > 1 and len(several := numbers_said(meanings)) > 1:  # run together: "fourfive"
            if after_join:
                close()
                languages.update(common)
            pieces += [(digits, first, stop) for digits in several]
            number = None
        elif number is not None and (going := _going_on(number, meanings)) is not None:
            number = going
            pieces[-1] = (number.digits, pieces[-1][1], stop)
        else:
            if after_join:
                close()
                languages.update(common)
            number = Number.said(meanings[0])
            for meaning in meanings[1:]:
                number.takes(meaning)  # (`Parts.cut` cut it so that its parts say one number)
            pieces.append((number.digits, first, stop))
        last = stop
    close()
    return runs


_PREFIXES = frozenset(cue for cue in _CUE_WORD if cue[-1] not in _ENDS)  # a longer word's: its end checked


def _parts_at(text: str, end: int, cue: tuple[str, frozenset[str]]) -> int:
    """How many of a number's words a word found as a prefix (`cue`: the word and its languages)
    stands for where it begins at `end` minus its length: 1 where it ends at `end` (no letter,
    digit or mark after it), its parts where the word it begins is made of a number's words
    ("viertausendfünfhundert", "fourfivethreenine"), else 0."""
    if end >= len(text) or not (text[end].isalnum() or unicodedata.category(text[end])[0] == "M"):
        return 1
    # what follows must begin as a part does ("fourfive"), not "first" or "fourth" (of every
    # number word the longest is a cue too: " seventy" is found in "seventyfive" beside " seven")
    languages = cue[1] & _begun(text[end : end + 3].lower().lstrip("-"))  # (Hungarian "négyezer-ötszáz")
    if not languages:
        return 0
    whole = _TOKEN.match(text, end - len(cue[0]))
    if whole is None:
        return 0
    word = whole.group().lower().replace("-", "")
    languages &= _ended(word)
    return max((len(cut) for language in languages if (cut := _PARTS[language].read(word)) is not None), default=0)


def windows(text: str, taken: dict[str, list[int]]) -> list[tuple[int, int]]:
    """Where in `text` a number may be said in words, from where the scan found `DIGIT_WORD_CUES`
    (`taken`: each literal found -> its places). A word made of several counts as that many
    ("fourfivethreenine" is four)."""
    by_language: dict[str, list[tuple[int, str]]] = {}  # each language's cues: where, and the word
    for literal, places in taken.items():
        cue = _CUE_WORD[literal]
        word, languages = cue
        if literal in _PREFIXES:
            counted = [(at, parts) for at in places if (parts := _parts_at(text, at + len(literal), cue))]
            cues = [(at, f"{word} {k}" if k else word) for at, parts in counted for k in range(parts)]
        else:
            cues = [(at, word) for at in places]
        for language in languages:
            by_language.setdefault(language, []).extend(cues)
    # (three cues at least; and languages that found the same ones, as Danish and both
    # Norwegians find " to ", are looked at once)
    alike = {tuple(found) for found in by_language.values() if len(found) >= 3}
    return _merged(w for found in alike for w in worded_windows(list(found)))


def _merged(windows: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """`windows` in order, those that overlap or touch as one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def worded_windows(found: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """Where one language's digit words (`found`: where each cue is, and its word) follow a space
    three times within `WORDED_SPAN` characters, two of them different words or one word four
    times (the first of a run need not follow one): only there can four stand in a row (searching
    every text for a run cost 0.13 us a character, as much as the rest of the scan), and "to ... to
    ... to" in English is no Norwegian number. Each window reaches a word's length before its
    first cue and after its last; a run read in it is read on past its end (`_runs`)."""
    found = sorted(found)
    windows = []
    for k in range(len(found) - 2):
        first, _ = found[k]
        if found[k + 2][0] - first > WORDED_SPAN:
            continue
        if len({word for _, word in found[k : k + 3]}) == 1:
            # one word three times ("to ... to ... to" in English) is no number, four times close is
            # ("één één één één", its first word at the text's start, where no space is its cue)
            if k + 3 >= len(found) or found[k + 3][0] - first > WORDED_SPAN or found[k + 3][1] != found[k][1]:
                continue
        windows.append((max(0, first - WORD_REACH), found[k + 2][0] + WORD_REACH))
    return _merged(windows)
