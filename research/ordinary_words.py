"""Generate the ordinary words of the languages written in Latin letters
(`classifiers/models/ordinary/`) from the libraries that keep them, instead of typing
them: each language's commonest words by `wordfreq` (its word lists: Wikipedia, subtitles, news,
books, the web; CC BY-SA 4.0), less every given name and surname of Faker's 86 locales.

The span model learned English names from English text, where a capital inside a sentence means a
name. German writes every noun with one, and every language begins a sentence with one: "Der
Preis", "Regierung", "Abbiamo", "Yüzlerce" were names to it. A word of such a text that is one of
its language's commonest words, and no one's name in any locale Faker knows, is read as the word
it is (`classifiers.privacy.ordinary`). A name that is also a common word stays a name
("Anna", "Schmidt", "Weber": Faker's de_DE lists hold them).

- `cues.json`: each language's `CUES` commonest words of two letters or more, English's included
  (and in the others, none of English's), which tell the language of a text;
- `LANGUAGE.txt`: its `WORDS` commonest words (`WORDS_BY_LANGUAGE` where a language writes more of
  its words with a capital), less its own locales' names, and other locales' names outside
  its `NEVER_NAMES` commonest; English's `ENGLISH_WORDS`, names and all, the commonest first;
- `names.txt`: every name of Faker's locales in Latin letters, which a word that begins a
  sentence must be to be one.

A gateway reads a language's words the first time it reads a text of that language.

    python -m research.ordinary_words

`tests/test_ordinary_words.py` checks that the committed file is what this writes.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from importlib.metadata import version
from pathlib import Path

from classifiers.privacy.ordinary import NAMES_FILE
from classifiers.privacy.uncased import unaccented

# Where the table goes: `classifiers.privacy.ordinary.MODEL_DIR` (a test checks the two agree).
MODEL_DIR = Path(__file__).resolve().parents[1] / "classifiers" / "models" / "ordinary"
LAST_LATIN = 0x24F  # the end of Latin Extended-B
# wordfreq's languages written in Latin letters, with English: a text in another script has no
# capitals for the span model to read as names
LATIN = "ca cs da de en es fi fil fr hu id is it lt lv ms nb nl pl pt ro sh sk sl sv tr vi".split()
CUES = 200  # the commonest words, by which a text's language is told
# a language's commonest words are words, not names, where only other languages' locales name
# someone so ("der", "sie", "la": names somewhere); a name of its own locales ("Paulo", "Erdoğan")
# stays a name however common
NEVER_NAMES = 1_000
# Faker's locales of each language, by the language's code where it is not theirs
LOCALES = {"nb": ("no",), "sh": ("hr", "bs", "sr"), "fil": ("fil", "tl")}
WORDS = 20_000  # the commonest words read as words in a text of the language
WORDS_BY_LANGUAGE = {"de": 50_000}  # German writes every noun with a capital
# English's commonest words, names or not: a stretch of text whose words are these and Faker's
# names is English, and is not told again (`classifiers.privacy.languages`); of 30,000, 50,000
# and 100,000, the fewest that send under 2% of English stretches to be told
ENGLISH_WORDS = 50_000


def faker_names(languages: tuple[str, ...] | None = None) -> frozenset[str]:
    """Every given name and surname of Faker's locales (of `languages` only, where given), in
    lower case, with and without accents."""
    import faker.providers.person as providers

    names: set[str] = set()
    for locale in sorted(m.name for m in pkgutil.iter_modules(providers.__path__)):
        if languages is not None and locale.split("_")[0] not in languages:
            continue
        provider = importlib.import_module(f"{providers.__name__}.{locale}").Provider
        for attribute in ("first_names", "first_names_male", "first_names_female", "last_names"):
            listed = getattr(provider, attribute, ())
            if isinstance(listed, (tuple, list, dict)):
                for name in listed:
                    for word in str(name).replace("-", " ").split():
                        if word[0].isupper():  # not a particle: "van der Berg"
                            names |= {word.casefold(), unaccented(word.casefold())}
    return frozenset(names)


def files() -> dict[str, str]:
    """Each file of the table, by its name in `MODEL_DIR`: the cues of every language, each
    language's words, and the names (those written in Latin letters: the only ones read there)."""
    from wordfreq import top_n_list

    names = faker_names()
    english = set(top_n_list("en", CUES))
    cues = {}
    out = {}
    for language in LATIN:
        most = WORDS_BY_LANGUAGE.get(language, WORDS)
        listed = [w for w in top_n_list(language, most) if w.isalpha()]
        # a cue of one letter ("a", "c" of "c'est") or one English writes too ("the", "in") tells nothing
        cues[language] = " ".join(w for w in listed[:CUES] if len(w) > 1 and (language == "en" or w not in english))
        if language == "en":  # English's names are the span model's to find: all its words are kept
            english_words = dict.fromkeys(w for w in top_n_list(language, ENGLISH_WORDS) if w.isalpha())
            out["en.txt"] = "\n".join(english_words) + "\n"  # the commonest first
            continue
        own = faker_names(LOCALES.get(language, (language,)))
        words = sorted({w for i, w in enumerate(listed) if w not in own and (i < NEVER_NAMES or w not in names)})
        out[f"{language}.txt"] = "\n".join(words) + "\n"
    out[NAMES_FILE] = "\n".join(sorted(n for n in names if n.isalpha() and ord(max(n)) <= LAST_LATIN)) + "\n"
    made = {
        "sources": (
            f"wordfreq {version('wordfreq')} (Robyn Speer; its word lists CC BY-SA 4.0, and so these, "
            f"derived from them), less the names of Faker {version('faker')} (MIT)"
        ),
        "cues": cues,
    }
    out["cues.json"] = json.dumps(made, ensure_ascii=False, sort_keys=True, indent=1) + "\n"
    return out


def main() -> None:
    MODEL_DIR.mkdir(exist_ok=True)
    made = files()
    for stale in set(p.name for p in MODEL_DIR.iterdir()) - set(made):
        (MODEL_DIR / stale).unlink()
    for name, text in made.items():
        (MODEL_DIR / name).write_text(text, encoding="utf-8")
    size = sum(len(t.encode()) for t in made.values())
    print(f"wrote {len(made)} files in {MODEL_DIR} ({size:,} bytes)")


if __name__ == "__main__":
    main()
