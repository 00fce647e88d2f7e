r"""Personal data that no pattern validates: names, employers, street addresses, birth dates and
health conditions, found from the words themselves and the words around them.

Candidate spans come from cheap scans; a linear model learned by `research.train` labels each
one PERSON, ORGANIZATION, STREET_ADDRESS or nothing. The scan, the features and the labeler run
in C (classifiers/scan/spans.c, 40 us for a 1,000-token conversation where Python took 1 ms); what they compute:

Candidates, the first shape that matches at each position (as regular expressions; UP is a capital):
  unit        \b(?:Suite|Apt\.?|Apartment|Unit|P\.?O\.? Box|Box|Flat|Floor|PSC)[ \t]*#?\d+[A-Za-z]?\b
  num-street  (?<!:)\b\d{1,6}[A-Za-z]?(?:[ \t]+[\w'’.-]+){0,3}[ \t]+CAPWORD(?:[ \t]+\d{1,5}[A-Za-z]?\b)?
              (no word in it ends a sentence: a full stop ends only initials and "St."; CAPWORD not "I";
              not after a colon: "10:22:31 ERROR" is a time; not a day before a month's name:
              "born on 14 March 1879 in Ulm" is a date)
  postal      \b(?:[A-Z]{2}[ \t]+\d{5}(?:-\d{4})?|\d{4,5}[ \t]+UP[\w'’-]+)\b
  cap         (?<![\w@/])CAPWORD(?:[ \t]+(?:CAPWORD|&|PARTICLE(?=[ \t]+UP))){0,4}
  where CAPWORD is UP[\w'’&]*(?:[.-][\w'’]+)*\.? and PARTICLE one of van von de da del ... y dos das,
              and a CAPWORD whose full stop ends a sentence ends the run, without it ("Neil
              Stephenson.", "French. Read"; not an initial, "U.S.", "St.", "Inc." or "Prof.");
  \w here leaves out the scripts written without spaces (CJK, Thai): "告诉Tim，" holds "Tim".
A capitalized run loses a first word that is only capitalized because a sentence starts with it
("Call Diego Sato" -> "Diego Sato"), and one common word alone ("Answer", "I") is no candidate.

A street address is then joined with its other pieces (a unit, a town) when commas, line breaks
and at most four words lie between them, runs on past a house number after the street ("Via
Tasso 129") and down the lines of a written address to its postcode (never over a line of
numbers), and is kept only if it has a number or ends in a street word (`STREET_WORDS`): "Paris"
is a place, not an address. classifiers/scan/addresses.c has each rule as the regular expression it
stands for.

Features of a candidate: its shape kind, word count, word shapes (Xx, XX, d), first and last word,
last word's ending, sentence start or not, each word with its prefix and suffix, how many are
common words, the two words before it ("my colleague") and the word after ("at"), a digit in it.
Birth dates and health conditions are found by their cues ("born", "diagnosed with").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from classifiers import _scan
from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding
from classifiers.privacy.lexicon import (
    BIRTH_AFTER,
    BIRTH_BEFORE,
    CONDITIONS,
    FIRST_PERSON,
    MONTHS,
    alternation,
    literal,
    words,
)

MODEL_PATH = Path(__file__).resolve().parent.parent / "models" / "pii_spans.json"
SPAN_TYPES = ("O", "PERSON", "ORGANIZATION", "STREET_ADDRESS")
DETECTOR = "span-model"
# The span model is sure of a candidate from here: a street address is then a finding in any text,
# however public it reads (of 8,931 MMLU questions no gate trained on, 6 hold one, "479 Elm
# Street, Muncie, Indiana", of AlpacaEval's and GSM8K's none; Presidio's "41086 Kiannonkatu 98,
# Suite 464, OULU" reads public to the gate), and so is a name in a text that carries personal
# data another detector found ("Patient Leonie, born 1989-06-24"). A name elsewhere is sure from
# `confident` only where the text does not read plainly public (`sure_context`): a word problem's
# "Mrs. Cruz" is a name, for sure, and no one's.
ADDRESS, SURE = SPAN_TYPES[3], 0.9

_UP = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽА-ЯΑ-Ω"
_UP_TABLE = bytes(1 if re.fullmatch(f"[{_UP}]", chr(c)) else 0 for c in range(0x500))  # the C scan's capitals


class SpanModel:
    """The learned labeler; its weights are `classifiers/models/pii_spans.json`.

    A candidate's confidence is the chance that it is personal data of some type at all. It is a
    finding when that is at least `confident` in a text that reads private from `sure_context`
    (or at least `sure`: an address anywhere, a name in a text that carries personal data),
    or at least `threshold` in one that reads as a private document (`PrivateContext` at or above
    `context`): "Larry Page" in "Who is Larry Page?" is a famous name in a public question;
    "Juraj Holaza" in a team announcement is not, and "Mrs. Cruz" in a word problem, a name for
    sure, is in a text that reads public. A place (`classifiers.privacy.places`) is one in a text
    that reads private from `place_context`. The five thresholds are chosen by
    `research.crossval_privacy` on validation folds."""

    def __init__(
        self,
        weights: dict[str, list[float]],
        bias: list[float],
        common: Iterable[str],
        threshold: float = 0.5,
        confident: float | None = None,
        context: float = 1.0,
        acronyms: Iterable[str] = (),
        place_context: float | None = None,
        sure_context: float = 0.0,
        sure: float = SURE,
    ) -> None:
        self.common = frozenset(common)
        self.acronyms = frozenset(acronyms)  # words in capitals that public questions use
        self.threshold = threshold
        self.confident = threshold if confident is None else confident
        self.context = context
        self.place_context = context if place_context is None else place_context
        self.sure_context = sure_context
        self.sure = sure
        self.native = _scan.Model(
            _UP_TABLE,
            sorted(self.common),
            list(weights),
            list(weights.values()),
            list(bias),
            threshold,
            sorted(STREET_WORDS),
        )

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> SpanModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            data["weights"],
            data["bias"],
            data["common"],
            data.get("threshold", 0.5),
            data.get("confident"),
            data.get("context", 1.0),
            data.get("acronyms", ()),
            data.get("place_context"),
            data.get("sure_context", 0.0),
            data.get("sure", SURE),
        )

    @classmethod
    def untrained(cls, common: Iterable[str]) -> SpanModel:
        """A model that labels nothing, for training: its candidates and features are the ones scored."""
        return cls({}, [1.0, 0.0, 0.0, 0.0], common)

    def candidates(self, text: str) -> list[tuple[str, int, int]]:
        """(shape kind, start, end) of each span worth labeling."""
        return self.native.candidates(text)

    def features(self, text: str, kind: str, start: int, end: int) -> list[str]:
        """The features of one candidate, each once."""
        return self.native.features(text, kind, start, end)

    def find(self, text: str) -> list[Finding]:
        return self.findings(self.native.find(text))

    @staticmethod
    def findings(labeled: list[tuple[int, int, int, float]]) -> list[Finding]:
        """Findings from `native.find(text)`: (type index, start, end, confidence) in text order."""
        return [
            Finding(SPAN_TYPES[label], start, end, confidence, DETECTOR) for label, start, end, confidence in labeled
        ]


# A street address has a number (house, unit, postcode) or ends in a street word: 755 of the 764
# gold addresses in the training data do; "France" alone, or "Paris", is a place, not an address.
STREET_WORDS = frozenset(
    "street st road rd avenue ave lane ln drive dr way boulevard blvd place pl court ct square sq terrace "
    "crescent close gardens garden hill hills park parkway fort gateway isle loop mall flats dale lodge row "
    "alley highway hwy plaza quay wharf walk grove mews circle cir strasse straße weg gasse platz allee rue "
    "calle avenida rua via viale piazza vej gade gata katu utca ulica".split()
)


# --- cue-led findings ---------------------------------------------------------------------
# Each pattern is tried only where its cue occurs (`anchors.anchored`); the words of every
# language are `lexicon`'s tables.
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_OTHER_MONTH = rf"(?:{alternation(words(MONTHS))})(?!\w)"
# A date as people write one: day, month and year in figures either way round ("12/03/1990",
# "1990/03/12", "03.12.1990"), with the month's name ("3 March 1990", "12-Mar-1990", "March 3rd,
# 1990", "12 Mar 90") in English or another language ("14 mars 1987", "14. März 1987", "14 de
# marzo de 1987", "1er avril 1990"), or in Chinese and Japanese ("1990年3月12日").
_DATE = (
    rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:19|20)?\d{{2}}|(?:19|20)\d{{2}}[/.-]\d{{1,2}}[/.-]\d{{1,2}}|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?[ -]{_MONTH}\.?,?[ -](?:(?:19|20)\d{{2}}|\d{{2}}\b)|"
    rf"{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? (?:19|20)\d{{2}}|"
    rf"\d{{1,2}}(?:er|º|°|\.)?[ \t]+(?:de[ \t]+)?{_OTHER_MONTH}\.?,?[ \t]+(?:de[ \t]+|del[ \t]+)?(?:19|20)\d{{2}}|"
    rf"(?:19|20)\d{{2}}年\d{{1,2}}月\d{{1,2}}日)"
)
# Cues in Chinese, Japanese and Korean need no word boundary: those languages write none
# ("生日1990年3月12日").
_BIRTH_SCRIPTS = ("生日", "出生", "誕生日", "생년월일", "생일", "рождения")
_BIRTH = re.compile(
    rf"(?i)(?:(?<!\w)(?:{alternation(words(BIRTH_BEFORE))}|d\.?o\.?b\.?)(?!\w)|{'|'.join(_BIRTH_SCRIPTS)})"
    rf"[^\n\d]{{0,20}}?({_DATE})"
)
# A date the cue follows, where the verb ends the sentence ("am 14. März 1987 geboren"): searched
# for in the stretch before each such cue.
_BIRTH_AFTER = re.compile(rf"(?i)({_DATE})[^\n\d]{{0,12}}?(?<!\w)(?:{alternation(words(BIRTH_AFTER))})(?!\w)")
_BEFORE_AFTER_CUE = 64
_BIRTH_CUES: tuple[str, ...] = (*map(literal, words(BIRTH_BEFORE)), "dob", "d.o", "do.b", *_BIRTH_SCRIPTS)
_AFTER_CUES: tuple[str, ...] = tuple(map(literal, words(BIRTH_AFTER)))
# The first person's cues in French, Spanish, Portuguese, Italian and German too ("je souffre de",
# "sufro de", "sofro de", "soffro di", "ich leide an", "j'ai un"), and where the condition's words
# end in them.
_HEALTH = re.compile(
    r"(?i)\b(?:diagnosed with|suffer(?:s|ing)? from|treated for|treatment for|living with|recovering from|"
    r"medication for|(?:(?<=\ba )|(?<=family )|(?<=medical )|(?<=past )|(?<=prior ))history of|"  # not "of the USA"
    r"tested positive for|diagnosticad[oa] co[nm]|diagnostiziert mit|diagnostiquée? (?:avec|d'une?)|"
    r"atteinte? d(?:e|'une?|u|')|(?<=je )souffre d(?:e|'une?|u|')|(?<=j['’])ai une?|sufro de|padezco|sofro de|"
    r"soffro di|(?<=ich )leide (?:an|unter))\s*"
    r"((?:an? |the |la |le |les |el |los |una? |der |die |das |einer? )?[\w'’-]+(?: [\w'’-]+){0,3}?)"
    r"(?=\s+(?:last|in|since|two|three|a|and|but|so|for|when|after|depuis|desde|seit|da|dal|et|y|und|e|"
    r"mais|pero|aber|ma|mas|em|im)\b|[.,;:!?)\n\"'”»\]}]|$)"
)
_HEALTH_CUES = (
    "diagnosed with",
    "suffer",
    "treated for",
    "treatment for",
    "living with",
    "recovering from",
    "medication for",
    "history of",
    "tested positive for",
    "diagnosticad",
    "diagnostiziert mit",
    "diagnostiqu",
    "atteint",
    "souffre d",
    "ai un",
    "sufro de",
    "padezco",
    "sofro de",
    "soffro di",
    "leide an",
    "leide unter",
)
# A condition named in passing: one of the table's in any language, or an English word ending as
# a diagnosis does (in ASCII: "arthritis", "carcinoma").
_CONDITION = re.compile(
    rf"(?i)(?<!\w)(?:{alternation(words(CONDITIONS))}|[a-z]+(?:itis|osis|emia|oma|pathy|algia|phobia))(?!\w)"
)
# A condition's type before it, masked with it ("Typ-1-Diabetes", "type 2 diabetes").
_QUALIFIER = re.compile(r"(?i)(?<!\w)(?:type|typ|tipo|de type)[ -]?(?:1|2|i|ii)[ -]?$")
# Every condition above holds one of these; it begins where the word holding it does ("disorder":
# a word earlier).
_CONDITION_HINTS = tuple(
    dict.fromkeys(
        ("itis", "osis", "emia", "oma", "pathy", "algia", "phobia", "disorder", *map(literal, words(CONDITIONS)))
    )
)
# Told in the first person, or of a patient or client: "her team ... can lead to type 2 diabetes"
# in a news article is no one's health (it was, with she/he/her/his here: 1 public prompt flagged,
# no PUPA unit found; edgeway's template HEALTH unchanged at 1.000 / 1.000).
_FIRST_PERSON = re.compile(rf"(?i)(?<!\w)(?:{alternation(words(FIRST_PERSON))})(?!\w)")
CUES = Anchors((), _BIRTH_CUES + _AFTER_CUES + _HEALTH_CUES + _CONDITION_HINTS)
_CUE_SET, _HINT_SET = frozenset(CUES.folded), frozenset(_CONDITION_HINTS)
_BIRTH_SET, _HEALTH_SET, _AFTER_SET = frozenset(_BIRTH_CUES), frozenset(_HEALTH_CUES), frozenset(_AFTER_CUES)


def _word_start(text: str, at: int) -> int:
    while at > 0 and text[at - 1].isalpha():
        at -= 1
    return at


def _condition_starts(text: str, hits: Hits) -> list[int]:
    starts = []
    for hint in _HINT_SET.intersection(hits):
        for at in hits[hint]:
            start = _word_start(text, at)
            starts.append(start)
            if hint == "disorder" and start > 1 and text[start - 1] == " ":  # "anxiety disorder"
                starts.append(_word_start(text, start - 1))
    return starts


def _qualified(text: str, start: int) -> int:
    """Where a condition begins, its type before it taken in ("Typ-1-Diabetes")."""
    qualifier = _QUALIFIER.search(text, max(0, start - 12), start)
    return qualifier.start() if qualifier else start


def cued(text: str, hits: Hits | None = None) -> list[Finding]:
    """Birth dates and health conditions. `hits`: `CUES.find(text)`, or more, when the caller has it."""
    hits = hits if hits is not None else CUES.find(text)
    if _CUE_SET.isdisjoint(hits):
        return []
    found = [
        Finding("DATE_OF_BIRTH", m.start(1), m.end(1), 0.9, "birth-cue")
        for m in anchored(_BIRTH, text, starts_of(hits, _BIRTH_SET))
    ]
    for at in starts_of(hits, _AFTER_SET):
        before = [m for m in _BIRTH_AFTER.finditer(text, max(0, at - _BEFORE_AFTER_CUE), at + 16) if m.end() > at]
        found += [Finding("DATE_OF_BIRTH", m.start(1), m.end(1), 0.9, "birth-cue") for m in before[-1:]]
    health_spans = []
    for m in anchored(_HEALTH, text, starts_of(hits, _HEALTH_SET)):
        health_spans.append((m.start(1), m.end(1)))
        found.append(Finding("HEALTH", m.start(1), m.end(1), 0.85, "health-cue"))
    # A condition named in passing, in a short personal message.
    if len(text) < 2000 and not _HINT_SET.isdisjoint(hits):
        named = [
            m
            for m in anchored(_CONDITION, text, _condition_starts(text, hits))
            if not any(s <= m.start() < e for s, e in health_spans)
        ]
        if named and _FIRST_PERSON.search(text):
            found += [Finding("HEALTH", _qualified(text, m.start()), m.end(), 0.6, "condition-term") for m in named]
    return found
