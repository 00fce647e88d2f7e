"""The language of a prompt: by its script where one names a language (Japanese, Korean,
Chinese, Hebrew, Arabic, Hindi, Thai, Greek, Russian); else by fastText's language identifier
(`classifiers.identifier`, 176 languages: Polish is "pl", Turkish "tr") where it is sure of one;
else by the commonest words of English, Spanish, French, German, Italian, Portuguese and Dutch.

Returns an ISO 639-1 code (639-2 or 639-3's for a language without one), or "und" when the text
has too little to go on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

from classifiers.identifier import MIN_WORDS, LanguageIdentifier, words

W = TypeVar("W", str, bytes)

_SCRIPTS = [  # (first, last code point, language) for scripts that name one language
    (0x3040, 0x30FF, "ja"),
    (0xAC00, 0xD7AF, "ko"),
    (0x4E00, 0x9FFF, "zh"),
    (0x0590, 0x05FF, "he"),
    (0x0600, 0x06FF, "ar"),
    (0x0900, 0x097F, "hi"),
    (0x0E00, 0x0E7F, "th"),
    (0x0370, 0x03FF, "el"),
    (0x0400, 0x04FF, "ru"),
]
_STOPWORDS = {
    "en": "the and is are of to in that it for you with this what how on be can".split(),
    "es": "el la los las de que y en es por para una con del se como".split(),
    "fr": "le la les des est et en que une pour dans qui pas sur du avec".split(),
    "de": "der die das und ist nicht ein eine zu den mit von ich sie auf".split(),
    "it": "il la di che e è per un una non sono del della gli come".split(),
    "pt": "o a os as de que e é do da em um uma para não com".split(),
    "nl": "de het een en van is dat niet op te zijn voor met ik".split(),
}
_WORD_LANGS: dict[str, list[str]] = {}
for _lang, _words in _STOPWORDS.items():
    for _w in _words:
        _WORD_LANGS.setdefault(_w, []).append(_lang)
_WORD = re.compile(r"[^\W\d_]+")
# For ASCII text the words are its runs of letters, read as bytes: one table lower-cases the
# letters and makes everything else a space, and bytes.split does the rest (a str's translate
# looks each character up in a dict: three times as long, and the regex three times that).
ASCII_WORDS = bytes(c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 else 32 for c in range(256))
_ASCII_WORD_LANGS = {w.encode("ascii"): langs for w, langs in _WORD_LANGS.items() if w.isascii()}
_SCRIPT_CHARS = re.compile("[\u0370-\U0010ffff]")  # what the scripts above can hold
SAMPLE = 600  # characters looked at: the language rarely changes within a prompt
TOLD = 0.5  # its likeliest language's probability, for it to be the language
PLAIN_ENGLISH = 4  # English's stopwords, thrice any other language's, that make a text English


def detect_language(text: str, identifier: LanguageIdentifier | None = None) -> str:
    sample = text[:SAMPLE]
    counts: dict[str, int] = {}
    for ch in () if sample.isascii() else _SCRIPT_CHARS.findall(sample):
        code = ord(ch)
        for first, last, lang in _SCRIPTS:
            if first <= code <= last:
                counts[lang] = counts.get(lang, 0) + 1
                break
    if counts:
        lang, hits = max(counts.items(), key=lambda item: item[1])
        if hits * 4 >= len(sample.strip()) or hits >= 20:
            # Kanji alone reads as Chinese; kana anywhere means Japanese.
            return "ja" if lang == "zh" and counts.get("ja") else lang
    if sample.isascii():
        votes = _votes(sample.encode("ascii").translate(ASCII_WORDS).split(), _ASCII_WORD_LANGS)
    else:  # its lower case may be ASCII ("K", the Kelvin sign, lowers to "k"): the regex reads both
        votes = _votes(_WORD.findall(sample.lower()), _WORD_LANGS)
    # plainly English (most prompts): no need to ask the identifier
    english = votes.get("en", 0)
    if english >= PLAIN_ENGLISH and all(english >= 3 * n for lang, n in votes.items() if lang != "en"):
        return "en"
    if identifier is not None:
        said = words(sample)
        if len(said) >= MIN_WORDS:
            language, share = identifier.likeliest(said, 1)[0]
            if share >= TOLD:
                return language
    if not votes:
        return "und"
    lang, best = max(votes.items(), key=lambda item: item[1])
    return lang if best >= 2 or len(votes) == 1 else "und"


def _votes(words: Iterable[W], languages: Mapping[W, list[str]]) -> dict[str, int]:
    """How many of `words` are each language's stopwords."""
    votes: dict[str, int] = {}
    for word in filter(languages.__contains__, words):
        for lang in languages[word]:
            votes[lang] = votes.get(lang, 0) + 1
    return votes
