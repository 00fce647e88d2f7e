"""Generate the canonical reading's tables (`classifiers/models/reading_tables.json`) from the
libraries that keep them, instead of typing them:

- `numerals`: every character with a numeric value from 0 to 9 that is no decimal digit, from
  Unicode's numeric properties (`unicodedata`): ideographic numerals (〇 四 壹 幺), circled,
  parenthesized, superscript and subscript digits, Roman numerals one to nine, other scripts'
  counting signs. (Decimal digits, every script's, are read by `unicodedata.decimal` itself.)

- `marks`: the combining marks, which words in many scripts hold.
- `digit_words`: the words for 0 to 9 in each language `num2words` writes numbers in, and, where
  it has none, Unicode CLDR's rule-based spell-out (`unicode-rbnf`: Greek, Hindi, Bulgarian,
  Croatian, Estonian, Malay, Tamil...; with its other genders' forms), 76 in all (not Japanese
  and Chinese, whose numerals are `numerals`, nor Thai, Lao, Khmer and Burmese, written without
  spaces between words, nor a language that says a digit in two words), each also without its
  accents, and the spoken forms they do not write (`SPOKEN`);
- `number_words`: the numbers 10 to 99 that they write as one word in those languages;
- `magnitude_words`: in the 65 of those languages whose numbers below 10,000 they write
  in words apart ("four thousand five hundred") or in words made of parts (`joined_languages`,
  14: "viertausendfünfhundert", "사천오백"), each word or part past those (hundreds, thousands,
  multipliers, joining words) and what it does in a number said (`classifiers.privacy.said`),
  inferred from their own numbers and kept only where every number from 0 to 9,999 reads
  back as itself;
- `checked_identifiers`: the names of the personal identifiers python-stdnum checks (its
  formats' own descriptions: "CPF (Cadastro de Pessoas Físicas, ...)") -> those formats.

    python -m research.reading_tables

`tests/test_reading_tables.py` checks that the committed file is what this writes.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import multiprocessing
import os
import pkgutil
import re
import sys
import unicodedata
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import stdnum
from num2words import CONVERTER_CLASSES, num2words
from unicode_rbnf import RbnfEngine

# Where the tables go: `classifiers.privacy.tables.TABLES_PATH` (a test checks the two agree). Not
# imported from there: importing the package reads the tables, which may lack what is being added.
TABLES_PATH = Path(__file__).resolve().parents[1] / "classifiers" / "models" / "reading_tables.json"
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


# Languages whose digits are read otherwise: Japanese's and Chinese's are numerals; Thai, Lao,
# Khmer and Burmese are written without spaces between words, so no run of theirs is one of words.
NOT_WORDED = ("ja", "th", "zh", "yue", "lo", "km", "my")
# Where num2words has no language, Unicode CLDR's rule-based spell-out (unicode-rbnf) may.
_SPELLED = frozenset(RbnfEngine.get_supported_languages()) - frozenset(CONVERTER_CLASSES)


def languages() -> list[str]:
    """The languages number words are generated in: num2words', then CLDR's it lacks (regional
    variants and those of `NOT_WORDED` left out)."""
    every = set(CONVERTER_CLASSES) | _SPELLED
    return sorted(language for language in every if "_" not in language and language not in NOT_WORDED)


# The forms a digit is said in that num2words does not write: another gender, a colloquial one,
# one spelled without its umlaut.
SPOKEN = {
    "en": {"oh": "0", "nought": "0"},
    "fr": {"une": "1"},
    "de": {"ein": "1", "zwo": "2", "fuenf": "5"},
    "es": {"una": "1"},
    "it": {"una": "1"},
    "pt": {"uma": "1", "duas": "2"},
    "nl": {"een": "1"},
    "ru": {"одна": "1", "две": "2"},
    "uk": {"одна": "1", "дві": "2"},
    "pl": {"jedna": "1", "dwie": "2"},
}


def digit_words() -> dict[str, dict[str, str]]:
    """For each language (`languages`) that says every digit in one word, word -> digit."""
    words: dict[str, dict[str, str]] = {}
    for language in languages():
        table: dict[str, str] = {}
        for value in range(10):
            for word in _forms_of(value, language):
                if " " in word:  # Irish "a haon": no word of its own
                    continue
                table.setdefault(word, str(value))
                table.setdefault(_unaccented(word), str(value))
        table.update(SPOKEN.get(language, {}))
        if set(table.values()) == set("0123456789"):
            words[language] = table
    return words


def number_words(digits: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """For each language of `digit_words` (`digits`), the words it writes 10 to 99 in as one word
    ("forty-five", "fünfundvierzig", "quarantacinque"), each also unaccented -> the number."""
    words: dict[str, dict[str, str]] = {}
    for language in sorted(digits):
        table: dict[str, str] = {}
        for value in range(10, 100):
            word = in_words(value, language)
            if " " not in word:  # "сорок пять" is two words: the tens, then the unit (`worded`)
                table[word] = str(value)
                table.setdefault(_unaccented(word), str(value))
        words[language] = table
    return words


def _composer() -> Any:
    """`classifiers.privacy.said`, loaded from its file: importing the package reads the tables."""
    path = TABLES_PATH.parents[1] / "privacy" / "said.py"
    spec = importlib.util.spec_from_file_location("_said_for_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


# A word of a number read aloud, as `classifiers.privacy.worded` finds words: letters and their marks, with hyphens
# and apostrophes within ("thirty-nine", "п'ятсот").
def _said_word() -> re.Pattern[str]:
    mark = "[" + "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in marks()) + "]"
    return re.compile(rf"(?:[^\W\d_]|{mark})+(?:['’-](?:[^\W\d_]|{mark})+)*")


SAID_UP_TO = 9999  # every number below this, read back: a card's or a phone's group of four


def magnitude_words(
    digits: dict[str, dict[str, str]], numbers: dict[str, dict[str, str]]
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """For each language whose numbers below 10,000 num2words writes in words apart ("four
    thousand five hundred") or in words made of them ("viertausendfünfhundert", "사천오백"), the
    words or parts past those of `digits` and `numbers` -> what each does (`said`): a hundreds or
    thousands word ("пятьсот" "500", "ciento" "100"), a multiplier ("hundred" "x100", "tausend"
    "x1000", Vietnamese "mươi" "x10"), a joining word ("and" "&"), a teen's ten (Indonesian
    "belas" "+10" in "dua belas"), another form of a unit ("lăm" "5" after a tens word, Romanian
    "o" "1" in "o sută"). Each is inferred from the first number
    whose words hold it as their one unknown word, or a word's one unknown part (the shortest
    such part): the first meaning (`_MEANINGS`) that reads that number back (a joining word only
    where no count reads back as many numbers: `_likeliest`); where no number is left with one
    unknown word, two unknown words together ("o sută"). A language is kept only if every number
    from 0 to `SAID_UP_TO` then reads back as itself, words made of parts cut as `said.Parts`
    cuts them. Also, the languages kept whose words are made of parts (`joined`)."""
    languages = sorted(digits)
    known = [{**digits[language], **numbers[language]} for language in languages]
    # each language on its own core (num2words writing 430,000 numbers is most of the time)
    with ProcessPoolExecutor(max_workers=os.cpu_count(), mp_context=multiprocessing.get_context("fork")) as pool:
        found = list(pool.map(_language_table, languages, known))
    out = {language: table for language, (table, _) in zip(languages, found, strict=True) if table is not None}
    joined = [language for language, (table, parts) in zip(languages, found, strict=True) if table and parts]
    return out, joined


def _language_table(language: str, known: dict[str, str]) -> tuple[dict[str, str] | None, bool]:
    """`magnitude_words`' table for one language whose digit and number words are `known`, and
    whether its words are read cut into parts; (None, False) where it is not kept."""
    said, said_word = _composer(), _said_word()
    forms = _Forms(language, said_word)
    for parts in (False, True):
        table = _inferred(forms, _Words(known, said, parts), parts)
        if table is not None:
            for word, meaning in list(table.items()):
                table.setdefault(_unaccented(word), meaning)
            return dict(sorted(table.items())), parts
    return None, False


class _Forms:
    """A language's numbers from 0 to `SAID_UP_TO` in words, each written once (num2words is
    slow), as far as they are asked for: a language most often fails at its first hundred."""

    def __init__(self, language: str, said_word: re.Pattern[str]) -> None:
        self.language, self.said_word = language, said_word
        self.written: list[list[str]] = []

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        for value in range(SAID_UP_TO + 1):
            if value == len(self.written):
                try:
                    self.written.append(self.said_word.findall(in_words(value, self.language)))
                except (TypeError, ValueError, IndexError, KeyError):  # num2words cannot write it (Amharic)
                    raise _Unwritten from None
            yield value, self.written[value]


class _Unwritten(Exception):
    """num2words cannot write a number in a language."""


def _inferred(forms: _Forms, words: _Words, parts: bool) -> dict[str, str] | None:
    """`magnitude_words`' table for one language whose numbers from 0 to `SAID_UP_TO` are said in
    `forms`, its words read whole or (`parts`) cut into parts; None where one does not read back."""
    try:
        return _inferred_from(forms, words, parts)
    except _Unwritten:
        return None


def _inferred_from(forms: _Forms, words: _Words, parts: bool) -> dict[str, str] | None:
    table: dict[str, str] = {}
    while True:
        learned = False
        pair: tuple[int, list[str], str, str] | None = None  # the first number said with two unknown words
        for value, form in forms:
            unread = [w for w in form if words.meanings(w) is None]
            if len(unread) == 2 and unread[0] != unread[1] and not parts and pair is None:
                pair = (value, form, unread[0], unread[1])
            if len(unread) != 1:
                continue
            word = _unknown_part(unread[0], words.known) if parts else unread[0]
            if word is None:
                continue
            fits = [w for m in _MEANINGS if (w := words.adding(word, m)).reads_back(value, form)]
            if not fits:  # no meaning reads this number back: nor will any later
                return None
            words = _likeliest(fits, forms, word) if fits[0].known[word] == "&" and len(fits) > 1 else fits[0]
            table[word] = words.known[word]
            learned = True
        if learned:
            continue  # a number passed over may have one unknown word now
        if pair is None:
            break
        # Only where no number has one unknown word: two, as in Romanian "o sută" (100), whose
        # "o" (one, feminine) and "sută" are said together only
        value, form, first, second = pair
        tried = [words.adding(first, a).adding(second, b) for a in _MEANINGS for b in _MEANINGS]
        fitting = [w for w in tried if w.reads_back(value, form)]
        if not fitting:
            return None
        words = _likeliest(fitting, forms, first, second)
        table[first], table[second] = words.known[first], words.known[second]
    if not table or not all(words.reads_back(value, form) for value, form in forms):
        return None
    return table


def _likeliest(fitting: list[_Words], forms: _Forms, *learned: str) -> _Words:
    """Of the meanings of the words `learned` that read a number back (`fitting`), those that
    read back the most numbers, and of those the ones that count over those that join: "o" in
    "o sută" (Romanian 100) or "jedna" in "jedna hiljada" may be a joining word or a one, and is
    a one ("zero o sută" is 0100, not 0 and 100)."""

    def likely(words: _Words) -> tuple[int, int]:
        return sum(words.reads_back(v, f) for v, f in forms), sum(words.known[w] != "&" for w in learned)

    return max(fitting, key=likely)


class _Words:
    """A language's number words known so far, and what each word of a number means by them (its
    parts', cut by `said.Parts`, where `parts`), kept: each is asked for again and again."""

    def __init__(self, known: dict[str, str], said: Any, parts: bool) -> None:
        self.known, self.said, self.parts = known, said, parts
        self._parts = said.Parts(known) if parts else None  # (made for each word learned: only where used)
        self._read: dict[str, list[str] | None] = {}

    def adding(self, word: str, meaning: str) -> _Words:
        return _Words({**self.known, word: meaning}, self.said, self.parts)

    def meanings(self, word: str) -> list[str] | None:
        if word in self.known:
            return [self.known[word]]
        if self._parts is None:
            return None
        if word not in self._read:
            self._read[word] = self._parts.cut(word)
        return self._read[word]

    def reads_back(self, value: int, form: list[str]) -> bool:
        found = [self.meanings(w) for w in form]
        if None in found:
            return False
        return bool(self.said.read([m for meanings in found if meanings for m in meanings]) == [str(value)])


def _unknown_part(word: str, words: dict[str, str]) -> str | None:
    """The shortest part of `word` such that what comes before and after it are made of `words`
    ("hundert" in "einhundert"), of two letters or more unless it is the word: Finnish "sataa"
    (200's "kaksisataa") is a part, not "sata" and an "a" to be found in every word."""
    word = word.replace("-", "")
    longest = max(map(len, words))
    size = len(word)
    before = [True] + [False] * size  # word[:i] is made of words
    for end in range(1, size + 1):
        before[end] = any(before[s] and word[s:end] in words for s in range(max(0, end - longest), end))
    after = [False] * size + [True]  # word[i:] is made of words
    for start in range(size - 1, -1, -1):
        reach = range(start + 1, min(size, start + longest) + 1)
        after[start] = any(after[e] and word[start:e] in words for e in reach)
    shortest = min(size, 2)  # a letter alone is a part only as a word ("백", 100): else it is an ending
    cuts = [(e - s, s) for s in range(size + 1) if before[s] for e in range(s + shortest, size + 1) if after[e]]
    if not cuts:
        return None
    length, start = min(cuts)
    return word[start : start + length]


# What an unknown word of a number may mean, in the order tried: a joining word, a multiplier, a
# unit, a teen or tens word, a hundreds or thousands word, a word that makes a unit a teen
# (Indonesian "belas"; last, so that no language's table changes where another reads back).
_MEANINGS = (
    "&", "x10", "x100", "x1000", *(str(v) for v in range(1, 20)), *(str(v) for v in range(20, 100, 10)),
    *(str(v) for v in range(100, 1000, 100)), *(str(v) for v in range(1000, 10000, 1000)), "+10",
)  # fmt: skip


# Which of python-stdnum's formats are a person's: identity, birth, citizen, social security,
# health and personal tax numbers; not a company's, a bank's, a security's, a school's or a drug's.
_PERSONAL = re.compile(
    r"person|national|citizen|identity|identification|birth|social security|resident|insurance|tax file|"
    r"taxpayer|tax number|pessoas físicas|health",
    re.IGNORECASE,
)
_NOT_PERSONAL = re.compile(
    r"compan|business|VAT|econom|stock|legal entit|enterprise|organi[sz]ation|juríd|postal|bank|IBAN|account|"
    r"vehicle|trade|employer|securities|school|student|drug|energy|excise|entreprise",
    re.IGNORECASE,
)
# Formats a finding of their own type reads (`structured.ssns`: US_SSN), which a policy names.
_OWN_TYPE = frozenset({"stdnum.us.ssn"})
_NATIONALITY = re.compile(r"(?:ian|ese|ish)$")  # "(Lithuanian, personal numbers)": no name
_GENERIC = frozenset({"ID", "CC", "CI", "NI", "MF", "Identity", "Tax Registration", "Cedula"})


def checked_identifiers() -> dict[str, list[str]]:
    """The names a person's identifier goes by (its acronym, "CPF", "PESEL"; its name in its own
    language, "Henkilötunnus", "Burgerservicenummer") -> the python-stdnum formats that check a
    value so named, from each format's own description."""
    cues: dict[str, list[str]] = {}
    for found in pkgutil.walk_packages(stdnum.__path__, "stdnum."):
        if found.ispkg or found.name.count(".") != 2:
            continue
        module = importlib.import_module(found.name)
        if not hasattr(module, "is_valid") or not module.__doc__:
            continue
        described = module.__doc__.strip().splitlines()[0]
        if not _PERSONAL.search(described) or _NOT_PERSONAL.search(described) or found.name in _OWN_TYPE:
            continue
        head, _, rest = described.partition(" (")
        names = [n.strip() for n in head.split(",")]
        native = rest.split(",")[0].strip(" .)")
        if " " not in native and (not native.isascii() or native.istitle()) and not _NATIONALITY.search(native):
            names.append(native)
        for name in names:
            name = re.sub(r"\s+(?:No|number|Number)\.?$", "", name).strip(". ")
            if name.startswith("sometimes") or name in _GENERIC or not 2 <= len(name) <= 24 or " " in name:
                continue
            cues.setdefault(name, []).append(found.name.removeprefix("stdnum."))
    return dict(sorted(cues.items()))


def in_words(value: int, language: str) -> str:
    """`value` in `language`'s words, in lower case and composed as texts are read (num2words
    writes some decomposed: Telugu's "ై" as its two parts): num2words', else CLDR's."""
    if language in _SPELLED:  # (one rule set: each language has a dozen, and all cost 8x one)
        said = _spelling(language).format_number(value, ruleset_names=["spellout-numbering"]).text
    else:
        said = num2words(value, lang=language)
    return unicodedata.normalize("NFC", said.lower())


def _forms_of(value: int, language: str) -> list[str]:
    """`value`'s words in `language` (`_said`), and in CLDR's, its other genders' ("μία",
    "ένας" beside "ένα")."""
    said = [in_words(value, language)]
    if language in _SPELLED:
        spelled = _spelling(language).format_number(value).text_by_ruleset
        said += [unicodedata.normalize("NFC", w.lower()) for name, w in spelled.items() if name.startswith("spellout-")]
    return list(dict.fromkeys(said))


@functools.cache
def _spelling(language: str) -> RbnfEngine:
    return RbnfEngine.for_language(language)


def _unaccented(word: str) -> str:
    """`word` without the marks Latin letters carry ("zéro" -> "zero"); other scripts as they are."""
    if not all(c.isascii() or unicodedata.name(c, "").startswith("LATIN") for c in word):
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def marks(categories: tuple[str, ...] = ("Mn", "Mc", "Me")) -> list[list[int]]:
    """The ranges of combining marks (categories Mn, Mc, Me): the vowel signs of Indic scripts,
    accents written apart, keycaps; a word holds them ("నాలుగు"). Or of other `categories`."""
    ranges: list[list[int]] = []
    for code in range(LAST_CODE_POINT + 1):
        if unicodedata.category(chr(code)) in categories:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return ranges


# The scripts the detectors of names, places and health read: the span model, the private-context
# gate and the cues were trained and written on Latin-script text (English, most of it).
READ_SCRIPTS = frozenset({"LATIN"})


def unread_letters() -> dict[str, list[list[int]]]:
    """The ranges of letters (categories Lu, Ll, Lt, Lo) of each script no detector here reads,
    by the script's name (the first word of its letters' Unicode names: CYRILLIC, CJK, HANGUL,
    ARABIC, DEVANAGARI, GREEK): a compatibility form is of the script it folds to (a mathematical
    bold "a" is Latin). Modifier letters (Lm: a length mark, an iteration mark) are `modifiers`."""
    scripts: dict[str, list[list[int]]] = {}
    for code in range(LAST_CODE_POINT + 1):
        ch = chr(code)
        if unicodedata.category(ch) not in ("Lu", "Ll", "Lt", "Lo") or ch.isascii():
            continue
        folded = unicodedata.normalize("NFKC", ch)
        script = unicodedata.name(folded[0], "").split(" ")[0] if folded else ""
        if not script or script in READ_SCRIPTS or folded.isascii():
            continue
        ranges = scripts.setdefault(script.lower(), [])
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return dict(sorted(scripts.items()))


def tables() -> dict[str, Any]:
    digits = digit_words()
    numbers = number_words(digits)
    magnitude, joined = magnitude_words(digits, numbers)
    return {
        "unicode": unicodedata.unidata_version,
        "numerals": numerals(),
        "marks": marks(),
        "digit_words": digits,
        "number_words": numbers,
        "magnitude_words": magnitude,
        "joined_languages": joined,
        "checked_identifiers": checked_identifiers(),
        "unread_letters": unread_letters(),
        "modifiers": marks(("Lm",)),
    }


def written() -> str:
    return json.dumps(tables(), ensure_ascii=False, separators=(",", ":")) + "\n"


def main() -> None:
    Path(TABLES_PATH).write_text(written(), encoding="utf-8")
    print(f"wrote {TABLES_PATH}")


if __name__ == "__main__":
    main()
