"""Text in a language whose private data the detectors cannot read.

Identifiers, secrets and numbers are read in any language, and names in any written in Latin
letters (the span model, `ordinary`); but birth dates and health conditions are found by their
words (`lexicon`), which exist for seven languages. "Mam cukrzycę i biorę metforminę" (Polish: I
have diabetes and take metformin) and "Doğum tarihim 14 Mart 1987" (Turkish: my date of birth)
held nothing any detector reads, and a local-only app sent them to the cloud. Text in any other
language fails closed as a script no detector reads does (`scripts`): an `UNSCANNED` finding over
its stretch, whose detector names the language (`language:pl`).

Each stretch of a text is told by fastText's language identifier (`classifiers.identifier`): a
text's lines, short ones joined until they hold `JOINED_WORDS` words, long ones cut every `CUT`
characters. A stretch is in an unread language when the languages the lexicon lacks hold
`UNREAD_SHARE` or more of its five likeliest (summed: Malay and Indonesian, or Croatian, Serbian
and Bosnian, share what one would hold), or, where most of its words are unknown to English, when
the read languages hold less than `READ_AT_MOST`; read again without its links, mailboxes and
capitalized words that are someone's name in a Faker locale (what language a text is in is not
what its people are called: "Please call Wojciech Kowalczyk" is English). Chosen on development
folds, `python -m research.unread_languages`.

Most text is English, and telling costs about 25 us a stretch: a text none of whose words or
only one or two (a term, a name Faker lacks) are outside English's 50,000 commonest and the
names is not told (counted in C, `classifiers/scan/words.c`), nor a stretch of which fewer than a
fifth are: 1.2% of AlpacaEval's instructions, 2.4% of MMLU's questions and none of GSM8K's have a
stretch told.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from classifiers import _scan
from classifiers.identifier import MIN_WORDS, LanguageIdentifier, words
from classifiers.privacy.findings import Finding
from classifiers.privacy.lexicon import LANGUAGES
from classifiers.privacy.ordinary import folded
from classifiers.privacy.scripts import SCRIPT, UNSCANNED, unread

LANGUAGE = "language:"  # the detector of such a finding, before its language's code
UNREAD_WORDS = (SCRIPT, LANGUAGE)  # the detectors of UNSCANNED findings over words no detector reads
JOINED_WORDS = 12  # a stretch of short lines holds this many words: fewer say too little
CUT = 300  # characters: a long line is told in pieces, so a paragraph in another language stands out
UNREAD_SHARE = 0.8
LIKELIEST = 5
OTHER_WORDS = 0.2  # of a stretch's words, not English's nor names, for it to be told
OTHER_IN_TEXT = 3  # ... or of a text's, any share, for its stretches to be looked at
MOSTLY_OTHER = 0.6  # of a stretch's words unknown to English, for it to be unread unless told read
READ_AT_MOST = 0.2  # ... which it is where the read languages hold less of its five likeliest
UNDETERMINED = "und"  # ISO 639's code for a language not told
_LINKS = re.compile(r"\S*(?:@|://|www\.)\S*")
_CAPITALIZED = re.compile(r"(?<![\w'’-])[^\W\d_][^\W_]*")


class Told(NamedTuple):
    """What fastText tells of a stretch: its likeliest unread language, and how much of its five
    likeliest the unread and the read languages hold."""

    language: str
    other: float
    read: float

    def unread(self, unsure: bool) -> bool:
        """In a language the cues do not read: surely, or, for a stretch of words unknown to
        English (`unsure`), unless it surely reads as a read one."""
        return self.other >= UNREAD_SHARE or (unsure and self.read < READ_AT_MOST)


class UnreadLanguages:
    """The stretches of a text written in a language the lexicon has no words for.

    `named(word)`: whether a folded word is someone's name (`OrdinaryWords.named`); `known`: the
    words of a text that needs no telling (English's commonest and the names, in lower case, the
    commonest first)."""

    def __init__(self, named: Callable[[str], bool], known: list[str], identifier: LanguageIdentifier) -> None:
        self.named = named
        self.known = _scan.Vocabulary(known)
        self.identifier = identifier

    def find(self, text: str) -> list[Finding]:
        found = []
        for start, end, said, other in self.known.others(text, JOINED_WORDS, CUT, OTHER_WORDS, OTHER_IN_TEXT):
            # a stretch most of whose words are no English word and no one's name is unread unless
            # it reads as a language the cues read: fastText tells Swahili or a salad of Swedish
            # words poorly, and what is told poorly is not taken for read
            language = self._unread(text[start:end], unsure=other >= MOSTLY_OTHER * said)
            if language is not None:
                found.append(Finding(UNSCANNED, start, end, 1.0, LANGUAGE + language))
        return found

    def _unread(self, stretch: str, unsure: bool) -> str | None:
        """The likeliest unread language of `stretch` (`UNDETERMINED` where none is likely), if it
        is in one; None if it is read."""
        # most stretches are English: told once, as they are; one that reads as another
        # language is told again without the names in it
        told = self._told(stretch)
        if told is None or not told.unread(unsure):
            return None
        told = self._told(self._without_names(stretch))
        return told.language if told is not None and told.unread(unsure) else None

    def _told(self, stretch: str) -> Told | None:
        """What fastText tells of `stretch`'s words; None where there are too few of them, or
        where most are in a script no detector reads (that script's to report, `scripts`)."""
        said = words(stretch)
        if len(said) < MIN_WORDS or len(unread(stretch)) * 2 >= len(said):
            return None
        likeliest = self.identifier.likeliest(said, LIKELIEST)
        others = [(language, share) for language, share in likeliest if language not in LANGUAGES]
        other = sum(share for _, share in others)
        read = sum(share for _, share in likeliest) - other
        return Told(others[0][0] if other >= UNREAD_SHARE else UNDETERMINED, other, read)

    def _without_names(self, stretch: str) -> str:
        stretch = _LINKS.sub(" ", stretch)
        return _CAPITALIZED.sub(lambda m: " " if m[0][0].isupper() and self.named(folded(m[0])) else m[0], stretch)
