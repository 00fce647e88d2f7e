"""Personal data that no pattern validates: names, employers, street addresses, birth dates and
health conditions, found from the words themselves and the words around them.

Candidate spans come from cheap scans (runs of capitalized words, number-and-street shapes,
unit and postal codes); a linear model learned by `classifiers.train` labels each one PERSON,
ORGANIZATION, STREET_ADDRESS or nothing, from features such as the words' endings, their
shape, the two words before ("my colleague") and the word after ("at"). Birth dates and health
conditions are found by their cues ("born", "diagnosed with").
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Iterator

from classifiers.privacy.findings import Finding

MODEL_PATH = Path(__file__).resolve().parent.parent / "models" / "pii_spans.json"
SPAN_TYPES = ("O", "PERSON", "ORGANIZATION", "STREET_ADDRESS")

_UP = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽА-ЯΑ-Ω"
_CAPWORD = rf"[{_UP}][\w'’&]*(?:[.-][\w'’]+)*\.?"
_PARTICLE = r"(?:van|von|de|da|del|der|den|di|du|le|la|bin|al|y|dos|das)"
# Order matters: at one position the first pattern that matches wins, so the specific come first.
_CANDIDATE_PATTERNS = {
    "unit": r"\b(?:Suite|Apt\.?|Apartment|Unit|P\.?O\.? Box|Box|Flat|Floor|PSC)[ \t]*#?\d+[A-Za-z]?\b",
    "num-street": rf"\b\d{{1,6}}[A-Za-z]?(?:[ \t]+[\w'’.-]+){{0,3}}[ \t]+{_CAPWORD}(?:[ \t]+\d{{1,5}}[A-Za-z]?\b)?",
    "postal": rf"\b(?:[A-Z]{{2}}[ \t]+\d{{5}}(?:-\d{{4}})?|\d{{4,5}}[ \t]+[{_UP}][\w'’-]+)\b",
    "cap": rf"(?<![\w@/]){_CAPWORD}(?:[ \t]+(?:{_CAPWORD}|&|{_PARTICLE}(?=[ \t]+[{_UP}]))){{0,4}}",
}
# Every candidate starts with a capital or a digit. Saying so up front lets the regex engine skip
# the other positions in C instead of trying four patterns at each (469 -> 145 us a conversation);
# the same leading lookahead speeds up the other patterns below that start with a lookbehind.
_CANDIDATES = re.compile(rf"(?=[{_UP}\d])(?:" + "|".join(f"(?P<{name.replace('-', '_')}>{p})"
                                                         for name, p in _CANDIDATE_PATTERNS.items()) + ")")
_WORD = re.compile(r"[\w'’&]+")
_SENTENCE_END = frozenset(".!?:\n\"“(")


def candidates(text: str, common: frozenset[str]) -> Iterator[tuple[str, int, int]]:
    """Spans worth labeling. A capitalized run loses a first word that is only capitalized because
    a sentence starts with it ("Call Diego Sato" -> "Diego Sato"), and is skipped if that is all."""
    for m in _CANDIDATES.finditer(text):
        kind, start, end = m.lastgroup.replace("_", "-"), m.start(), m.end()
        if kind == "cap" and end - start <= 12 and " " not in m.group():
            word = m.group().rstrip(".").lower()
            if len(word) < 2 or word in common:
                continue  # "I", "A.", "Answer": one capitalized common word is not worth a look
        if kind == "cap" and _at_sentence_start(text, start):
            first_end = start + len(m.group().split(None, 1)[0])
            if text[start:first_end].lower().rstrip(".") in common:
                start = first_end
                while start < end and text[start] in " \t":
                    start += 1
                if start >= end:
                    continue
        yield kind, start, end


def _shape(word: str) -> str:
    if word.isdigit():
        return "d"
    if word.isupper():
        return "XX" if len(word) > 1 else "X"
    if word[:1].isupper():
        return "Xx."[: 3 if word.endswith(".") else 2]
    return "x"


def features(text: str, kind: str, start: int, end: int, common: frozenset[str]) -> list[str]:
    words = _WORD.findall(text[start:end])
    if not words:
        return []
    lower = [w.lower() for w in words]
    before = _WORD.findall(text[max(0, start - 40):start])[-2:]
    after = _WORD.findall(text[end:end + 30])[:1]
    feats = [f"gen={kind}", f"n={min(len(words), 4)}", "shape=" + " ".join(_shape(w) for w in words[:4]),
             f"first={lower[0]}", f"last={lower[-1]}", f"lsuf={lower[-1][-4:]}",
             "bos" if _at_sentence_start(text, start) else "mid",
             "common1" if lower[0] in common else "rare1"]
    feats += [f"w={w}" for w in lower[:5]]
    feats += [f"suf={w[-3:]}" for w in lower[:5] if len(w) > 3]
    feats += [f"pre={w[:3]}" for w in lower[:5] if len(w) > 3]
    feats += [f"common={sum(w in common for w in lower) * 2 // len(lower)}"]
    if before:
        feats.append(f"l1={before[-1].lower()}")
        feats.append(f"l2={' '.join(w.lower() for w in before)}")
    else:
        feats.append("l1=<s>")
    feats.append(f"r1={after[0].lower()}" if after else "r1=</s>")
    if any(ch.isdigit() for ch in text[start:end]):
        feats.append("digit")
    return feats


class SpanModel:
    """The learned labeler; its weights are `classifiers/models/pii_spans.json`."""

    def __init__(self, weights: dict[str, list[float]], bias: list[float], common: frozenset[str],
                 threshold: float = 0.5) -> None:
        self.weights = {k: tuple(v) for k, v in weights.items()}
        self.bias = tuple(bias)
        self.common = common
        self.threshold = threshold

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "SpanModel":
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["weights"], data["bias"], frozenset(data["common"]), data.get("threshold", 0.5))

    def label(self, feats: list[str]) -> tuple[str, float]:
        weights = self.weights
        rows = [weights[f] for f in feats if f in weights]
        scores = [sum(column) for column in zip(self.bias, *rows)]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        best = max(range(len(scores)), key=scores.__getitem__)
        return SPAN_TYPES[best], exps[best] / sum(exps)

    def find(self, text: str) -> list[Finding]:
        found = []
        for kind, start, end in candidates(text, self.common):
            label, confidence = self.label(features(text, kind, start, end, self.common))
            if label != "O" and confidence >= self.threshold:
                found.append(Finding(label, start, end, confidence, "span-model"))
        return [f for f in merge_addresses(text, found) if f.type != "STREET_ADDRESS" or _street_like(text[f.start:f.end])]


# Between two pieces of one address: commas, line breaks and at most four short words (a town).
_ADDRESS_GAP = re.compile(r"[\s,>?–-]*(?:[\w.'’()]+[\s,>?–-]*){0,4}")
# What may follow a street: a town, a region code, a country, a postcode, after a comma on the same
# line or on the next lines of a written address (mail quoting '>' included).
_ADDRESS_PIECE = re.compile(rf"[ \t]*(?:,[ \t]*\n{{0,2}}|\n{{1,2}})[ \t>]*(?:,[ \t]*)?"
                            rf"[{_UP}\d][\w'’.()-]*(?:[ \t]+(?:[{_UP}\d][\w'’.()-]*|(?:d[eiu]|la|del|am|an|upon)\b))*")
_POSTCODE = re.compile(r"\b\d{4,6}\b")
_HOUSE_NUMBER = re.compile(r"(?:[ \t]+(?:u|ul|st|str)\.)?[ \t]+\d{1,5}[A-Za-z]?\b(?![.,:/-]?\d)", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")
_TRAILING_POSTCODE = re.compile(r"[ \t,]*\n?[ \t]*(?:[\w'’.()]+[ \t]+){0,3}\d{4,6}\b")


def merge_addresses(text: str, found: list[Finding]) -> list[Finding]:
    """Join the pieces of one street address (street, unit, town, postcode) into one span."""
    merged: list[Finding] = []
    for f in sorted(found, key=lambda f: f.start):
        last = merged[-1] if merged else None
        if (last is not None and last.type == f.type == "STREET_ADDRESS" and f.start - last.end <= 40
                and _ADDRESS_GAP.fullmatch(text, last.end, f.start)):
            merged[-1] = Finding(f.type, last.start, max(last.end, f.end), max(last.confidence, f.confidence),
                                 last.detector)
        else:
            merged.append(f)
    out = []
    for f in merged:
        if f.type == "STREET_ADDRESS":
            f = Finding(f.type, f.start, _address_end(text, f.end), f.confidence, f.detector)
        out.append(f)
    return out


# A street address has a number (house, unit, postcode) or ends in a street word: 755 of the 764
# gold addresses in the training data do; "France" alone, or "Paris", is a place, not an address.
_STREET_WORDS = frozenset(
    "street st road rd avenue ave lane ln drive dr way boulevard blvd place pl court ct square sq terrace "
    "crescent close gardens garden hill hills park parkway fort gateway isle loop mall flats dale lodge row "
    "alley highway hwy plaza quay wharf walk grove mews circle cir strasse straße weg gasse platz allee rue "
    "calle avenida rua via viale piazza vej gade gata katu utca ulica".split())


def _street_like(span: str) -> bool:
    if any(ch.isdigit() for ch in span):
        return True
    words = _WORD.findall(span.lower())
    return bool(words) and words[-1].rstrip(".") in _STREET_WORDS


def _address_end(text: str, end: int) -> int:
    """Where an address that has reached `end` stops: past a house number written after the street
    ("Via Tasso 129"), past the pieces after it on the same line, and past the lines below it when
    they run to a postcode ("Porto Alegre / , RS / Brazil 95828")."""
    number = _HOUSE_NUMBER.match(text, end)
    if number:
        end = number.end()
    tail = _TRAILING_POSTCODE.match(text, end)
    best = tail.end() if tail and "\n\n" not in tail.group() else end
    position = end
    for _ in range(5):
        piece = _ADDRESS_PIECE.match(text, position)
        if piece is None:
            break
        if len(_NUMBER.findall(piece.group())) > 2:
            break   # a line of numbers is a phone or an account, not a town and its postcode
        position = piece.end()
        if _POSTCODE.search(piece.group()) or "\n" not in text[end:position]:
            best = max(best, position)
    return best


def _at_sentence_start(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t":   # not text[:start].rstrip(): that copies the text before
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


# --- cue-led findings ---------------------------------------------------------------------
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|" \
         r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_DATE = rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:19|20)?\d{{2}}|(?:19|20)\d{{2}}-\d{{2}}-\d{{2}}|\d{{1,2}}(?:st|nd|rd|th)?" \
        rf" {_MONTH},? (?:19|20)\d{{2}}|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? (?:19|20)\d{{2}})"
_BIRTH = re.compile(rf"(?i)(?=[bdgn])\b(?:born|birth(?:day|date)?|d\.?o\.?b\.?|date of birth|geboren|née?|nacid[oa]|nat[oa])"
                    rf"\b[^\n\d]{{0,20}}?({_DATE})")
_HEALTH = re.compile(
    r"(?i)(?=[dstlrmh])\b(?:diagnosed with|suffer(?:s|ing)? from|treated for|treatment for|living with|recovering from|"
    r"medication for|history of|tested positive for|diagnosticad[oa] con|diagnostiziert mit)\s+"
    r"((?:an? |the )?[\w'’-]+(?: [\w'’-]+){0,3}?)(?=\s+(?:last|in|since|two|three|a|and|but|so|for|when|after)\b|[.,;:!?)\n]|$)")
_CONDITION = re.compile(r"(?i)\b(?:[a-z]+(?:itis|osis|emia|oma|pathy|algia|phobia)|diabetes|cancer|HIV|AIDS|"
                        r"depression|bipolar|schizophrenia|asthma|epilepsy|ADHD|autism|dementia|alzheimer'?s|"
                        r"parkinson'?s|hepatitis|pregnan(?:t|cy)|miscarriage|chlamydia|herpes|hypertension|"
                        r"anxiety disorder|eating disorder|anorexia|bulimia|PTSD|OCD)\b")
_FIRST_PERSON = re.compile(r"(?i)(?=[imshpc])\b(?:i|i'm|i am|my|me|she|he|her|his|patient|client)\b")


_HEALTH_GATES = ("diagnos", "suffer", "treat", "living with", "recovering", "medication", "history of",
                 "positive for")


_CONDITION_HINTS = ("itis", "osis", "emia", "oma", "pathy", "algia", "phobia", "diabet", "cancer", "hiv", "aids",
                    "depress", "bipolar", "schizo", "asthma", "epilep", "adhd", "autis", "dementia", "alzheimer",
                    "parkinson", "hepatitis", "pregnan", "miscarriage", "chlamydia", "herpes", "hypertension",
                    "disorder", "anorexia", "bulimia", "ptsd", "ocd")


def cued(text: str) -> Iterator[Finding]:
    lowered = text.lower()
    has_digit = any(d in text for d in "0123456789")
    if has_digit and any(cue in lowered for cue in ("born", "birth", "dob", "d.o.b", "geboren", "né", "nacid",
                                                     "nat")):
        for m in _BIRTH.finditer(text):   # a birth date is written with digits
            yield Finding("DATE_OF_BIRTH", m.start(1), m.end(1), 0.9, "birth-cue")
    health_spans = []
    if any(cue in lowered for cue in _HEALTH_GATES):
        for m in _HEALTH.finditer(text):
            health_spans.append((m.start(1), m.end(1)))
            yield Finding("HEALTH", m.start(1), m.end(1), 0.85, "health-cue")
    # A condition named in passing, in a short personal message. The substring tests cost a
    # microsecond; the patterns, a hundred.
    if len(text) < 2000 and any(hint in lowered for hint in _CONDITION_HINTS) and _FIRST_PERSON.search(text):
        for m in _CONDITION.finditer(text):
            if not any(s <= m.start() < e for s, e in health_spans):
                yield Finding("HEALTH", m.start(), m.end(), 0.6, "condition-term")
