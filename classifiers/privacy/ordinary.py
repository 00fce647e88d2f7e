"""The words of a text in another language than English that are only words: "Der Preis",
"Regierung", "Können Sie", "Abbiamo", "Yüzlerce", "Bugün".

The span model learned names from English, where a capital inside a sentence means a name. German
writes every noun with one and every language begins a sentence with one, so in those texts it
took words for names, and a masking app sent "[PERSON_1] ist zu hoch". In a text whose language is
told (by its commonest words, `cues`) as one of the 26 written in Latin letters besides English,
a name the span model found where a capital says nothing (a sentence's first word; any noun in
German) is dropped when every word of it is among that language's commonest and no one's name in
its own Faker locales, or when it is one word no Faker locale names anyone; a place written with a
word of four letters or more in lower case is dropped too. Inside a sentence of the other
languages a capital means a name, as in English. The words are `classifiers/models/ordinary/`,
made by `python -m research.ordinary_words` from wordfreq's lists, less Faker's names: "Anna
Schmidt", "Jürgen Weber" and "John Smith" stay names in German; "Der Preis" does not.

English is read the same way at a sentence's start only, every word of the name one of its
ordinary words (`en.txt`, the language teller's 50,000) and no one's name in Faker's locales:
"Reply to jane.doe@..." begins with an imperative, not a person, while "Jack", "Grace" or "Will"
begin a sentence as names.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable
from itertools import chain
from pathlib import Path
from typing import TypeVar

from classifiers.language import ASCII_WORDS
from classifiers.privacy.findings import Finding

MODEL_DIR = Path(__file__).resolve().parents[1] / "models" / "ordinary"
ENGLISH = "en"
NAMES_FILE = "names.txt"  # every name of Faker's locales written in Latin letters, in lower case
_ENGLISH_ONLY = (ENGLISH,)
NAMES = frozenset(("PERSON", "ORGANIZATION"))  # what a word taken for a name is found as
CAPITALIZED_NOUNS = frozenset(("de",))  # languages that write every noun with a capital
LAST_LATIN = 0x24F  # the end of Latin Extended-B
# a text's first words tell its language (it rarely changes within a prompt): counted in words,
# so that the same words tell the same language however they are quoted or escaped around them
SAMPLE_WORDS = 40
SAMPLE_CHARS = 600  # where the first words are looked for
_WORD = re.compile(r"[^\W\d_]+")
W = TypeVar("W", str, bytes)
_OPENING = frozenset(" \t\r\"'¿¡«„“(")  # between a sentence's end and its first word
_ENDS = frozenset(".!?\n")


def _first(words: list[W], cut: bool) -> list[W]:
    """A sample's first `SAMPLE_WORDS` words; where it was cut short of them, without its last
    (which may be a piece of one)."""
    return words[:SAMPLE_WORDS] if len(words) > SAMPLE_WORDS or not cut else words[:-1]


def _first_words(sample: str, cut: bool) -> list[str]:
    return _first([folded(w) for w in _WORD.findall(sample)], cut)


def begins_sentence(text: str, start: int) -> bool:
    """Whether `start` is where a sentence begins: the text's start, or after a sentence's end
    (and any space, opening quote or mark)."""
    i = start
    while i > 0 and text[i - 1] in _OPENING:
        i -= 1
    return i == 0 or text[i - 1] in _ENDS


def folded(word: str) -> str:
    """As the word lists are written: case-folded ("Straße" -> "strasse"), without the dot a
    Turkish capital İ leaves when it is lowered."""
    return word.casefold().replace("\u0307", "")


def cue_words(folder: Path = MODEL_DIR) -> dict[str, str]:
    """Each language's commonest words (about 200), by language: what tells a text's language."""
    cues: dict[str, str] = json.loads((folder / "cues.json").read_text(encoding="utf-8"))["cues"]
    return cues


@functools.cache
def short_common_words() -> frozenset[str]:
    """The words of three letters or fewer among any language's commonest: "the", "la", "de",
    "und", "in" (`mailboxes`: no host name is one)."""
    return frozenset(w for said in cue_words().values() for w in said.split() if len(w) <= 3)


class OrdinaryWords:
    def __init__(self, folder: Path = MODEL_DIR) -> None:
        self.folder = folder
        cues = cue_words(folder)
        self._cues: dict[str, tuple[str, ...]] = {}
        for language, said in cues.items():
            for word in said.split():
                self._cues[word] = (*self._cues.get(word, ()), language)
        # a language's words, and the names, read the first time a text asks for them: most
        # gateways read few of the 26 languages, and their sets are a few megabytes each
        self._words: dict[str, frozenset[str]] = {}
        self._names: frozenset[str] | None = None
        self._ascii_cues = {w.encode("ascii"): langs for w, langs in self._cues.items() if w.isascii()}
        self._last: tuple[str | None, str | None] = (None, None)

    def language(self, text: str) -> str | None:
        """The language of `text` by its commonest words, if it is one whose ordinary words are
        known and not English; None for English, or a text that says too little."""
        last = self._last  # (read once: another thread may be scanning another text)
        if text is last[0]:  # the names and the places of one text ask in turn
            return last[1]
        found = self._language(text)
        self._last = (text, found)
        return found

    def _language(self, text: str) -> str | None:
        sample = text[:SAMPLE_CHARS]
        cut = len(text) > SAMPLE_CHARS  # (the sample's last word may be a piece of one)
        if sample.isascii():  # most texts: their words by one translate and a split, as bytes
            said: list[str] | None = None
            keys = _first(sample.encode("ascii").translate(ASCII_WORDS).split(), cut)
            hits = list(filter(None, map(self._ascii_cues.get, keys)))
        else:
            said = _first_words(sample, cut)
            latin = sum(ord(max(w)) <= LAST_LATIN for w in said)
            if latin * 3 < len(said) * 2:  # mostly another script's words ("Привет, ..."): not read here
                return None
            hits = list(filter(None, map(self._cues.get, said)))
        # most texts are English, looked at only to be let go: half their cues are English's alone
        # (no other language's cues hold English's), and no other language can lead
        if hits.count(_ENGLISH_ONLY) * 2 >= len(hits):
            return None
        votes = Counter(chain.from_iterable(hits))  # each cue's languages, counted in C
        best = max(votes.values())  # (some cue was said: English's alone would be all of them)
        if votes.get(ENGLISH, 0) == best:
            return None
        near = [language for language, count in votes.items() if count >= best - 1 and language != ENGLISH]
        if len(near) == 1 and best >= 2:
            return near[0]
        # close, or one cue: the language that holds the most of the text's words, if it holds half
        # of them ("na" is Polish, Czech and Slovak; a list of JSON fields holds Italian's "io")
        if said is None:
            said = _first_words(sample, cut)
        held = {language: sum(w in self.words(language) for w in said) for language in near}
        most = max(held.values())
        leaders = [language for language, count in held.items() if count == most]
        return leaders[0] if len(leaders) == 1 and most >= max(2, len(said) / 2) else None

    def words(self, language: str) -> frozenset[str]:
        found = self._words.get(language)
        if found is None:
            found = self._words[language] = self._read(f"{language}.txt")
        return found

    def named(self, word: str) -> bool:
        """Whether `word` (folded) is someone's name in one of Faker's locales."""
        if self._names is None:
            self._names = self._read(NAMES_FILE)
        return word in self._names

    def _read(self, name: str) -> frozenset[str]:
        return frozenset(self.read_list(name))

    def read_list(self, name: str) -> list[str]:
        """The words of one of the folder's lists (`LANGUAGE.txt`, `NAMES_FILE`)."""
        return (self.folder / name).read_text(encoding="utf-8").split()

    def names(self, text: str, found: Iterable[Finding], detector: str) -> list[Finding]:
        """`found` without the names `detector` found that are only words of the text's language:
        where a capital says nothing (a sentence's first word; any noun in German), every word of
        it one of the language's ordinary words, or one word that is no one's name in any of
        Faker's locales. In English (and a text too short to tell) only a sentence's first words
        are read so, every one of them an ordinary English word and no one's name: "Reply to
        jane.doe@..." is an imperative, not a person; "Jack has 3 apples" names Jack. Inside a
        sentence a capital means a name, as in
        English ("Safran", "Airbus": companies, and words too)."""
        found = list(found)
        if not any(f.detector == detector and f.type in NAMES for f in found):
            return found
        language = self.language(text)
        words = self.words(language or ENGLISH)

        def word(f: Finding) -> bool:
            said = _WORD.findall(text[f.start : f.end])
            begins = begins_sentence(text, f.start)
            if language is None:  # (English's words are the language teller's, names among them)
                return begins and all(folded(w) in words and not self.named(folded(w)) for w in said)
            if not begins and language not in CAPITALIZED_NOUNS:
                return False
            if all(folded(w) in words for w in said):
                return True
            return len(said) == 1 and not self.named(folded(said[0])) and begins

        return [f for f in found if f.detector != detector or f.type not in NAMES or not word(f)]

    def places(self, text: str, found: Iterable[Finding]) -> list[Finding]:
        """`found` (places) without those written with a word of four letters or more in lower
        case ("azul", "la réunion", "pôr do sol"), in a text of another language than English
        whose writer uses capitals: there a place's name has them ("Rio de Janeiro", "Frankfurt
        am Main")."""
        found = list(found)
        if not found or text.islower() or self.language(text) is None:
            return found
        return [f for f in found if not any(len(w) >= 4 and w.islower() for w in _WORD.findall(text[f.start : f.end]))]
