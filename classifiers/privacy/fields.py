"""Values that a record's own field names say are personal, whatever their case or script.

A customer record pasted as JSON (`"firstName": "amara"`, `"KhmerName": "រិទ្ធ មករា"`), a
form or a résumé's header (`Last name: okafor`, `Address: flat 2, 14 kingsley road`), keyword
arguments (`surname="nguyen"`): the key says what the value is, so it is found however common or
uncased the value, in the languages forms are filled in most ("姓名：王小明", "Nachname: müller",
"Фамилия: иванов"). Only keys that name a person or an address; a plain `name` names apps, files
and products as often (AlpacaEval's "Name: Pizzeria"). A value that is a placeholder (`null`,
`[Your Name]`, `{{name}}`) is none. Each pattern is tried only where a key's literal occurs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from classifiers.privacy.anchors import Anchors, Hits, anchored
from classifiers.privacy.findings import Finding

DETECTOR = "field"
# Below what the other detectors say of the same words (`drop_overlaps` keeps theirs): a key says
# what its value is, not where it ends. An address runs on over the lines below its key, and a
# billing address's first line is who it is for ("Billing address: Sara Schwarz\n  ...").
CONFIDENCE = 0.6
_WHOSE = (
    "first given middle last family maiden full legal real birth sur customer patient client contact "
    "employee applicant candidate student member card holder cardholder account accountholder owner "
    "recipient sender father fathers mother mothers spouse guardian latin khmer native english chinese arabic"
).split()
_ADDRESSES = "home street mailing residential permanent current billing shipping postal".split()
# Keys as `_key` writes them: lower case, no spaces, underscores, hyphens, dots or apostrophes.
_TYPES: dict[str, str] = {f"{whose}name": "PERSON" for whose in _WHOSE if whose != "sur"}
_TYPES |= {"surname": "PERSON", "nextofkin": "PERSON", "cardholder": "PERSON", "accountholder": "PERSON"}
_TYPES |= {"address": "STREET_ADDRESS", "street": "STREET_ADDRESS", "streetaddress": "STREET_ADDRESS"}
_TYPES |= {f"{kind}address": "STREET_ADDRESS" for kind in _ADDRESSES}
_TYPES |= {f"address{line}": "STREET_ADDRESS" for line in ("1", "2", "line1", "line2")}
# The same keys in the languages forms are filled in most: surnames and full names (a plain
# "nombre", "nom", "имя" or "名前" is any name, as "name" is), and addresses.
_NAMES = "apellido apellidos nombrecompleto prénom nomdefamille vorname nachname familienname cognome sobrenome"
_NAMES += " nomecompleto фамилия отчество 姓名 氏名 성명"
_HOMES = "dirección direccion domicilio adresse anschrift indirizzo endereço адрес 地址 住址 住所 주소"
_TYPES |= {key: "PERSON" for key in _NAMES.split()} | {key: "STREET_ADDRESS" for key in _HOMES.split()}
_WORDS: tuple[str, ...] = (
    "name",
    "address",
    "street",
    "holder",
    "of kin",
    "apellido",
    "prénom",
    "nom de famille",
    "vorname",
)
_WORDS += ("nachname", "familienname", "cognome", "sobrenome", "dirección", "direccion", "domicilio", "adresse")
_WORDS += ("anschrift", "indirizzo", "endereço", *(key for key in _TYPES if not key[0].isascii()))
CUES = Anchors((), _WORDS)
_CUE_SET = frozenset(CUES.folded)
_KEY = r"[^\W\d_][\w .'’-]{0,30}?"
_KEY_REACH = 40  # characters from a key's cue to its separator, at most
# "key": "value", 'key': 'value', key="value" (a value runs to its own closing quote).
_QUOTED = re.compile(rf"""(["']?)({_KEY})\1[ \t]*[:=][ \t]*(["'])((?:(?!\3)[^\n\\]){{1,80}})\3""")
# A form's line: "Last name: okafor", "- Address: 14 kingsley road" (to the line's end).
_LABELED = re.compile(rf"[ \t>*•-]*({_KEY})[ \t]*[:：][ \t]*([^\s][^\n]{{0,79}}?)[ \t\r]*(?:\n|$)")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[\[<{(%$]|null$|none$|nil$|n/?a$|-+$|\?+$|x+$|\.\.\.|string$|str$|text$|tbd$|todo$|your\b|enter\b|"
    r"example\b|sample\b|name$|address$|first$|last$|true$|false$|\d+$)"
)


def fields(text: str, hits: Hits) -> list[Finding]:
    """PERSON and STREET_ADDRESS findings where a record's key names them. `hits`:
    `CUES.find(text)`, or more."""
    if _CUE_SET.isdisjoint(hits):
        return []
    cues = sorted(at for literal in _CUE_SET.intersection(hits) for at in hits[literal] if _separated(text, at))
    found = [*_quoted(text, cues), *_labeled(text, cues)]
    return [Finding(kind, start, end, CONFIDENCE, DETECTOR) for kind, start, end in dict.fromkeys(found)]


def _separated(text: str, at: int) -> bool:
    """Whether a key's separator follows its cue closely enough: prose's "name" and "address"
    ("the name of the ...") have none, and are not read further."""
    return any(text.find(sep, at, at + _KEY_REACH) >= 0 for sep in (":", "=", "："))


def _quoted(text: str, cues: list[int]) -> Iterator[tuple[str, int, int]]:
    for m in anchored(_QUOTED, text, (_key_start(text, at) for at in cues)):
        kind = _TYPES.get(_key(m.group(2)))
        if kind is not None and _value(m.group(4)):
            yield kind, m.start(4), m.end(4)


def _labeled(text: str, cues: list[int]) -> Iterator[tuple[str, int, int]]:
    """A form's lines, from a line's start or from a string's opening quote (a form inside JSON:
    `{"body": "First name: amara\nLast name: okafor"}`), each value without the quote and
    brackets that close its string."""
    for m in anchored(_LABELED, text, _line_starts(text, cues)):
        kind = _TYPES.get(_key(m.group(1)))
        value = m.group(2).rstrip("\"'}]),")
        if kind is not None and _value(value):
            yield kind, m.start(2), m.start(2) + len(value)


def _line_starts(text: str, cues: list[int]) -> Iterator[int]:
    for at in cues:
        line = text.rfind("\n", 0, at) + 1
        quote = text.rfind('"', line, at) + 1  # 0 when there is none
        yield from (start for start in (line, quote) if start >= line and at - start <= 40)


def _key_start(text: str, at: int) -> int:
    """Where the key around a cue begins: its opening quote ("First Name": spaces and all), or the
    first character of a bare one (`surname=`, an identifier)."""
    start = at
    while start > 0 and at - start < 32 and (text[start - 1].isalnum() or text[start - 1] in " _.'’-"):
        start -= 1
    if start > 0 and text[start - 1] in "\"'":
        return start - 1
    start = at
    while start > 0 and at - start < 32 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    return start


def _key(written: str) -> str:
    return re.sub(r"[ _.'’-]", "", written.lower())


def _value(value: str) -> bool:
    value = value.strip()
    return any(ch.isalpha() for ch in value) and _PLACEHOLDER.match(value) is None and "{{" not in value
