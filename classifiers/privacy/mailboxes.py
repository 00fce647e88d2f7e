"""Mailboxes whose at sign and dots are written as words of any language: "zq.hollander77 chez
proton point me", "anna.k88 собака gmail точка com", "juan_p23 arroba hotmail punto es".

`canonical.spelled` reads the at-sign and dot words it knows (`AT_WORDS`, `DOT_WORDS`) wherever
they stand. Languages have more such words than a table holds ("chez", "собака", "małpa",
"kropka"), so an address is also read by its shape alone, whatever its words: a mailbox name as
people choose them (a letter first, then a dot or an underscore inside, or letters ending in two
digits or more), a word, a host name, and the same word before each further label and before a
top-level domain (a country's code, or a generic one `links` knows), the at sign's word another
than the dot's, and no host or label one of the short commonest words of a language ("np.array
with the list in" is no address at "the.in"). Prose run together is no name: "market.The",
"tough.8", "P_2". The shape is narrow so that prose does not take it: of the 13,773 public
prompts in ../shared/data (MMLU, GSM8K, AlpacaEval, the Presidio sentences) it reads an address
in none, and in two of PUPA's 438 private ones ("Key.media_play_pause Recording by user"); with
any word that holds a digit for a mailbox name and any host it read one in 51 public prompts
("9-year-old boy was walking to").
`python -m research.mailbox_shapes` prints them.

What the shape finds is read as the address it spells ("zq.hollander77@proton.me"), and what is
found in that reading is found on the words that spell it (`readings.reread`).
"""

from __future__ import annotations

import functools
import re
from itertools import chain

from classifiers.privacy.canonical import joined_labels
from classifiers.privacy.links import DEEP_TLDS, TLDS
from classifiers.privacy.ordinary import short_common_words
from classifiers.privacy.rewriting import Reading, rewritten

# Where a mailbox name may be: a dot or an underscore between two letters or digits, or a letter
# and then two digits. Two searches Python runs fast (13 and 34 us on 5,000 characters of prose);
# the whole shape is matched only from where they point.
_INNER_MARK = re.compile(r"[._](?=[A-Za-z0-9])")
_TWO_DIGITS = re.compile(r"\d\d")
# a letter first: "50.00" is a price, "3.When" a list's number without its space
_MAILBOX = r"(?:[A-Za-z][A-Za-z0-9]*[._][A-Za-z0-9._]*[A-Za-z0-9]|[A-Za-z][A-Za-z0-9]*[A-Za-z][0-9]{2,})"
# Names that are prose or a formula: a sentence's end and the next one's first word without the
# space between ("market.The"), a footnote's number after a full stop ("tough.8"), a subscript
# ("P_2"); "juan_23" stays a name.
_RUN_TOGETHER = re.compile(r"[a-z]+\.[A-Z][a-z]*|.*\.[0-9]+|[A-Za-z]_[0-9]+")
MOST_NAME = 64  # characters of a mailbox name
_THROUGH_SPACE = re.compile(r"(?s).*\s")  # up to the last white space
_WORD = r"[^\W\d_]{1,15}"  # the at sign's or a dot's word, in any script
_HOST = r"[A-Za-z0-9-]{2,63}"
_LABEL = r"[A-Za-z0-9-]{2,63}"


@functools.cache
def top_level_domains() -> frozenset[str]:
    """Every country's code (ISO 3166, the regions Google's numbering plans know: "me", "es", "nl")
    and the generic domains `links` knows."""
    import phonenumbers

    return frozenset((*TLDS, *DEEP_TLDS, *(region.lower() for region in phonenumbers.SUPPORTED_REGIONS)))


@functools.cache
def _shape() -> re.Pattern[str]:
    """A name, the at sign's word, a host, the dot's word, then labels each followed by that same
    word, and a top-level domain (where the domain ends is where one is: "point me about")."""
    tops = "|".join(sorted(top_level_domains(), key=len, reverse=True))
    return re.compile(
        rf"(?<![\w@.-])(?P<name>{_MAILBOX})\s+(?P<at>{_WORD})\s+(?P<host>{_HOST})\s+(?P<dot>{_WORD})\s+"
        rf"(?P<labels>(?:{_LABEL}\s+(?P=dot)\s+)*)(?P<top>{tops})(?![\w@.-])",
        re.IGNORECASE,
    )


def shaped(text: str) -> Reading | None:
    """Each mailbox in `text` written with its at sign and dots as words, read as written plainly."""
    marks = chain(_INNER_MARK.finditer(text), _TWO_DIGITS.finditer(text))
    starts = {start for mark in marks if (start := _name_start(text, mark.start())) is not None}
    spans: list[tuple[int, int, list[tuple[str, int, int]]]] = []
    end = 0
    for start in sorted(starts):
        if start < end or (found := _shape().match(text, start)) is None:
            continue
        if found["at"].casefold() == found["dot"].casefold() or _RUN_TOGETHER.fullmatch(found["name"]):
            continue
        labels = [found.span("host"), *_labels(found), found.span("top")]
        if any(text[a:b].lower() in short_common_words() for a, b in labels[:-1]):
            continue  # "np.array with the list in": no host is called "the"
        at = ("@", found.end("name"), found.start("host"))
        spans.append(
            (found.start(), found.end(), [*joined_labels(text, [found.span("name")]), at, *joined_labels(text, labels)])
        )
        end = found.end()
    return rewritten(text, spans)


def _labels(found: re.Match[str]) -> list[tuple[int, int]]:
    """Where each label between the host's dot and the top-level domain's is: every other word."""
    start, words = found.start("labels"), list(re.finditer(r"\S+", found["labels"]))
    return [(start + m.start(), start + m.end()) for m in words[::2]]


def _name_start(text: str, at: int) -> int | None:
    """Where the mailbox name around `at` starts: after the white space before it (of any kind: a
    no-break space too), no more than `MOST_NAME` characters back (a longer run is no name, and a
    text of dots is not walked back over once for each)."""
    floor = max(0, at - MOST_NAME)
    space = _THROUGH_SPACE.match(text, floor, at)
    if space is not None:
        return space.end()
    return 0 if floor == 0 else None
