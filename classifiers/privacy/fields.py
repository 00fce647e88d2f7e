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


# --- a JSON field's value, by its key --------------------------------------------------------
# Keys that hold a person more often than not, though no `_TYPES` key: a request's `user`, a
# message's `name`, a letter's `to`. A value there that is written as a name is one.
PERSON_KEYS = frozenset(
    "name user username to from sender recipient author owner assignee reporter customer client patient "
    "contact employee student member passenger guest attendee person participant speaker".split()
)
# A name as written in a field: one to four words, each capitalized, of letters (and an
# apostrophe or hyphen: "O'Brien", "Anne-Marie").
_NAME_SHAPE = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*(?: [^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*){0,3}")
FIELD_CHARS = 80  # a field's value this long or shorter may be one name or address


def field_value(key: str, value: str, known_names: frozenset[str], common: frozenset[str], listed: bool) -> str | None:
    """What a JSON field's whole value is, read by its key: `_TYPES`' type under such a key
    (`"customer_name": "amara okafor"`); PERSON for a name-shaped value under `PERSON_KEYS` or
    among a schema's listed values (`enum`), when a word of it is a known name (`known_names`,
    lower case: the given names and surnames of 86 locales; among listed values, of a name of two
    words or more), or, under a key that names a person
    more surely than a plain `name` does, when it has two words and neither is a common word
    (`common`: "Sales Team" is no one). None otherwise."""
    if len(value) > FIELD_CHARS or not _value(value):
        return None
    normalized = _key(key)
    kind = _TYPES.get(normalized)
    if kind is not None:
        return kind
    if not (normalized in PERSON_KEYS or listed) or _NAME_SHAPE.fullmatch(value) is None:
        return None
    words = [word.lower() for word in value.split()]
    if not all(word[0].isupper() for word in value.split()):
        return None
    personal = normalized in PERSON_KEYS
    if any(word in known_names for word in words) and (personal or len(words) > 1):
        return "PERSON"  # (one word of a list of units or colours may be a name too: "Kelvin", "Rose")
    surely = personal and normalized != "name" and not listed
    return "PERSON" if surely and len(words) > 1 and not any(word in common for word in words) else None
