"""Identifiers that the words before them name: a passport, a driver's licence, a national ID,
insurance, tax or health number, an account, member, policy, patient or student number
(`ID_NUMBER`), and a postal code (`POSTAL_CODE`).

"my driver's license number is D1234567", "NI number: QQ 12 34 56 C", "passport no. X1234567",
`"passport_number": "533380006"`, "身份证号码：110101199003071234", "ZIP: 7412 SL", "my postcode
is sn10 2he". Their shapes are each country's own (a licence is seven digits in one state and a
letter and twelve in the next), so the cue says what the value is, as a form's label does. The
value is the run of groups after it that hold a digit (or one to three capitals beside them:
"QQ", "C", "SL"), in any case. A generic word needs its "number", "no." or "ID" ("account number",
"member ID": "account 2023" is a year); a word that names one document may stand alone
("passport X1234567", "zip 94043").

A US social security number is `structured.ssns`' (US_SSN); digits that read as a phone number after
one of these cues are this module's (more confident: "NHS number 943 476 5919" is not a phone).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding

DETECTOR = "id-cue"
CONFIDENCE = 0.95  # above a cued phone's 0.9: the cue names the document
_NUMBER = r"(?:[ _-]?(?:number|num|no\.?|nr\.?|#|id|code|号码?|號碼|番号|번호))"
# (the literal the cue begins with, the cue from there); a cue whose literal names a document
_DOCUMENTS: tuple[tuple[str, str], ...] = (
    ("passport", rf"passport{_NUMBER}?"),
    ("driver", rf"driver'?s?[ _-]?licen[cs]e{_NUMBER}?"),
    ("driving", rf"driving[ _-]?licen[cs]e{_NUMBER}?"),
    ("national insurance", rf"national insurance{_NUMBER}?"),
    ("national_insurance", rf"national_insurance{_NUMBER}?"),
    ("national id", rf"national id(?:entity)?(?: card)?{_NUMBER}?"),
    ("national_id", rf"national_id{_NUMBER}?"),
    ("ni number", r"ni number"),
    ("ni no", r"ni no\.?"),
    ("nino", r"nino"),
    ("social insurance", rf"social insurance{_NUMBER}?"),
    ("aadha", rf"aadha?ar(?: card)?{_NUMBER}?"),
    ("medicare", rf"medicare(?: card)?{_NUMBER}?"),
    ("medicaid", rf"medicaid{_NUMBER}?"),
    ("license plate", rf"licen[cs]e[ _-]?plate{_NUMBER}?"),
    ("licence plate", rf"licen[cs]e[ _-]?plate{_NUMBER}?"),
    ("license_plate", rf"licen[cs]e[ _-]?plate{_NUMBER}?"),
    ("licenseplate", rf"licen[cs]e[ _-]?plate{_NUMBER}?"),
    ("number plate", r"number plate"),
    ("plate number", rf"plate{_NUMBER}"),
    ("plate_number", rf"plate{_NUMBER}"),
    ("platenumber", rf"plate{_NUMBER}"),
    ("passeport", rf"(?:num[ée]ro de )?passeport{_NUMBER}?"),
    ("numéro de passeport", r"numéro de passeport"),
    ("numero de passeport", r"numero de passeport"),
    ("pasaporte", r"pasaporte"),
    ("número de pasaporte", r"número de pasaporte"),
    ("passaporto", r"passaporto"),
    ("reisepass", r"reisepass(?:nummer)?"),
    ("personalausweis", r"personalausweis(?:nummer)?"),
    ("ausweisnummer", r"ausweisnummer"),
    ("steuer", r"steuer(?:-?id(?:entifikationsnummer)?|nummer)"),
    ("sozialversicherung", r"sozialversicherungsnummer"),
    ("sécurité sociale", r"sécurité sociale"),
    ("securite sociale", r"securite sociale"),
    ("seguridad social", r"seguridad social"),
    ("seguro social", r"seguro social"),
    ("codice fiscale", r"codice fiscale"),
    ("personnummer", r"personnummer"),
    ("паспорт", r"паспорт(?:а|ные данные)?"),
    ("инн", r"инн"),
    ("снилс", r"снилс"),
    ("身份证", rf"身份证{_NUMBER}?"),
    ("身分證", rf"身分證{_NUMBER}?"),
    ("护照", rf"护照{_NUMBER}?"),
    ("護照", rf"護照{_NUMBER}?"),
    ("マイナンバー", r"マイナンバー"),
    ("주민등록번호", r"주민등록번호"),
    ("여권", rf"여권{_NUMBER}?"),
)
_KIND = r"(?:number|num|no\.?|nr\.?|#|id)"
# words that name one of many kinds of number: they need theirs ("account number", "member ID";
# "account 2023" is a year). Their literals are the word with its kind, so that prose that only
# says "account" or "student" costs no look.
# (Not "license number": a business's or a program's as often as a driver's, which has its own cue.)
_GENERIC_WORDS = (
    "account", "acct", "acct.", "a/c", "routing", "member", "membership", "policy",
    "patient", "medical record", "employee", "staff", "student", "customer", "insurance", "health card",
    "health insurance", "tax", "taxpayer", "tax identification", "taxpayer identification", "vat",
    "vat registration", "identity", "identification", "identity card", "identification card", "id card",
    "pan card", "nhs",
)  # fmt: skip
_GENERIC: tuple[tuple[str, str], ...] = tuple(
    (f"{word}{between}{kind}", rf"{re.escape(word)}[ _-]?{_KIND}")
    for word in _GENERIC_WORDS
    for between in ("", " ", "_", "-")
    for kind in ("num", "no", "nr", "#", "id")  # "num" begins "number"
) + (("sort code", "sort code"),)
# acronyms, in capitals only ("sin" is Spanish for "without", "pan" a pan)
_ACRONYMS = (
    "SIN", "TIN", "ITIN", "EIN", "VIN", "MRN", "DNI", "NIE", "NIF", "CPF", "CURP", "RFC", "BSN", "PESEL", "NIR", "UTR",
    "NINO", "PAN", "SNILS", "AHV",
)  # fmt: skip
_POSTAL: tuple[tuple[str, str], ...] = (
    ("zip", r"zip(?:[ _-]?code)?"),
    ("postcode", r"postcode"),
    ("post code", r"post code"),
    ("post_code", r"post_code"),
    ("postal", r"postal[ _-]?code"),
    ("code postal", r"code postal"),
    ("código postal", r"código postal"),
    ("codigo postal", r"codigo postal"),
    ("postleitzahl", r"postleitzahl"),
    ("почтовый индекс", r"почтовый индекс"),
    ("邮编", r"邮编"),
    ("郵便番号", r"郵便番号"),
    ("우편번호", r"우편번호"),
)
_EXACT_POSTAL = ("PLZ", "CEP")
# What may stand between a cue and its value: "is", a colon, a JSON string's quotes and colon, and
# up to four words saying "has the number" in the scan's languages ("Reisepass hat die Nummer
# C01X00T47", "passport has the number X1234567", "mon passeport a le numéro 12AB34567").
_LINKS = (
    "is", "was", "has", "the", "es", "est", "ist", "è", "é", "a", "le", "la", "el", "il", "o", "hat", "die",
    "tiene", "ha", "tem", "heeft", "het", "de", "number", "nummer", "numéro", "numero", "número", "lautet",
)  # fmt: skip
_BETWEEN = (
    r"""["']?[ \t]*(?:(?:"""
    + "|".join(rf"{re.escape(w)}(?![^\W\d_])" for w in sorted(_LINKS, key=len, reverse=True))
    + r"""|:|=|：|是|は|는|#)[ \t]*){0,4}["']?[ \t]*"""
)
_DIGITS = r"[A-Za-z]*\d[A-Za-z0-9]*"
_CAPITALS = r"(?-i:[A-Z]{1,3})"
_SEP = r"(?:[ -]|[./](?=\d))"
_VALUE = rf"(?:{_CAPITALS}[ -]?)?{_DIGITS}(?:{_SEP}(?:{_DIGITS}|{_CAPITALS})){{0,7}}"
_BEFORE = r"(?<![A-Za-z0-9_])"


def _cue(kind: str, folded: tuple[tuple[str, str], ...], exact: tuple[str, ...]) -> str:
    words = "|".join(sorted(dict.fromkeys(cue for _, cue in folded), key=len, reverse=True))
    return rf"(?P<{kind}>{_BEFORE}(?:{words}|(?-i:{'|'.join(exact)})))(?![A-Za-z])"


_CUED = re.compile(
    rf"(?i)(?:{_cue('id', _DOCUMENTS + _GENERIC, _ACRONYMS)}|{_cue('postal', _POSTAL, _EXACT_POSTAL)})"
    rf"{_BETWEEN}(?P<value>{_VALUE})(?![A-Za-z0-9])"
)
_FOLDED = tuple(dict.fromkeys(literal for literal, _ in (*_DOCUMENTS, *_GENERIC, *_POSTAL)))
CUES = Anchors(_ACRONYMS + _EXACT_POSTAL, _FOLDED)
_CUE_SET = frozenset(CUES.exact + CUES.folded)
_LONGEST = 40  # characters of a value, at most (eight groups)


def identifiers(text: str, hits: Hits) -> list[Finding]:
    """ID_NUMBER and POSTAL_CODE findings after their cues. `hits`: `CUES.find(text)`, or more."""
    if _CUE_SET.isdisjoint(hits):
        return []
    return list(_found(text, starts_of(hits, _CUE_SET)))


def _found(text: str, cues: list[int]) -> Iterator[Finding]:
    for m in anchored(_CUED, text, cues):
        value = m.group("value").rstrip(" -")
        digits = sum(ch.isdigit() for ch in value)
        # a postal code may be "880" or "B0J 2H0"; an ID of fewer than four characters is a count
        if digits >= 2 and (m.group("postal") or len(value) >= 4) and len(value) <= _LONGEST:
            kind = "POSTAL_CODE" if m.group("postal") else "ID_NUMBER"
            yield Finding(kind, m.start("value"), m.start("value") + len(value), CONFIDENCE, DETECTOR)
