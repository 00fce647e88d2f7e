"""Credentials by what carries them, where no key's prefix and no "password:" says so.

- an HTTP `Authorization: Basic` header: base64 of "user:password" (decoded to tell it from other
  base64), and a `Bearer` token;
- a `Cookie:` header's values and a `Set-Cookie:` header's first one: a session's value;
- a command line's password: `mysql -u root -pW1nter!sC0ming`, `curl -u user:pass`,
  `sshpass -p ...`, `redis-cli -a ...`, `--password ...`, `PGPASSWORD=...`;
- a PIN or a door's, an alarm's or a one-time code after the words that name it, in the
  languages people write them in ("PIN on 0410", "the alarm code is 6-0-3-9", "暗証番号は3907").

A connection string's `Password=...;` and a URL's `postgres://u:p@h` are `secrets`' assignments
and URL passwords. Each pattern is tried only where its literal occurs (`anchors.anchored`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding

DETECTOR = "credential"
CONFIDENCE = 0.95
_SHORTEST = 4  # characters of a password: shorter ones are flags' values ("-p 1")
# (the literal a pattern begins with, folded; the pattern, with the secret as its group "value")
_PATTERNS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("basic",), r"(?i)basic[ \t]+(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])"),
    (("bearer",), r"(?i)bearer[ \t]+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)(?![A-Za-z0-9._~+/=-])"),
    # mysql's password is written against its flag; "-p dbname" asks for one
    (
        ("mysql", "mariadb"),
        r"(?i)(?:mysql(?:dump|admin|import|sh)?|mariadb(?:-dump)?)\b[^\n|;&]{0,120}?[ \t](?-i:-p)"
        r"(?P<value>[^\s'\"-][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")",
    ),
    (
        ("curl", "wget"),
        r"(?i)(?:curl|wget)\b[^\n|;&]{0,160}?[ \t](?:-u|--user)[ \t=]+['\"]?[^\s:'\"]+:(?P<value>[^\s'\"]+)",
    ),
    (("sshpass",), r"(?i)sshpass[ \t]+-p[ \t]*(?P<value>'[^'\n]+'|\"[^\"\n]+\"|\S+)"),
    (("redis-cli",), r"(?i)redis-cli\b[^\n|;&]{0,120}?[ \t]-a[ \t]+(?P<value>'[^'\n]+'|\"[^\"\n]+\"|\S+)"),
    (("--pass", "-pass"), r"(?i)(?<![\w-])--?pass(?:word|wd)?[ \t]+(?P<value>'[^'\n]+'|\"[^\"\n]+\"|[^\s-]\S*)"),
    (("pgpassword",), r"(?i)pgpassword[ \t]*=[ \t]*(?P<value>'[^'\n]+'|\"[^\"\n]+\"|\S+)"),
)
_COMPILED = tuple((frozenset(literals), re.compile(pattern)) for literals, pattern in _PATTERNS)
# A PIN or a code that opens something, after the words that name it, in the languages people
# write them in: "mun puhelimen PIN on 0410", "the alarm code is 6-0-3-9", "koden till porten är
# 3390", "ゆうちょの暗証番号は3907". The value is three to eight digits (a "#" or "*" and a letter
# or two beside them: "1948#", "4B719"), after a copula, a colon or an equals sign: "GPIO pin 17"
# and "error code 500" are none.
_CODE_WORDS = (
    "pin", "puk", "otp", "cvv", "cvc", "passcode", "pincode", "pin code", "pin-code", "door code",
    "gate code", "alarm code", "access code", "entry code", "security code", "verification code",
    "digicode", "code de la porte", "code d'accès", "code pin", "türcode", "geheimzahl", "zugangscode",
    "código de acceso", "código de la puerta", "código do portão", "codice della porta", "codice pin",
    "alarmcode", "toegangscode", "portkod", "portkode", "pinkod", "pinkode", "koden till porten",
    "koden til porten", "kapukód", "tunnusluku", "codul de la ușa", "kode otp", "kode pin", "mã pin",
    "mã otp", "mã cửa", "heslo", "hasło", "пин", "пин-код", "код от домофона", "暗証番号", "暗证番号",
    "密码", "密碼", "비밀번호", "رمز",
)  # fmt: skip
_COPULAS = (
    "is", "was", "are", "on", "er", "är", "ist", "es", "est", "c'est", "e", "è", "é", "je", "jest", "ni",
    "adalah", "là", "to", "de", "la", "da", "der", "die", "das", "el", "il", "nya", "mijn", "my",
)  # fmt: skip
_CODE = re.compile(
    rf"(?i)(?<![A-Za-z])(?:{'|'.join(re.escape(w) for w in sorted(_CODE_WORDS, key=len, reverse=True))})"
    rf"(?![a-z])[ \t]*(?:(?:{'|'.join(re.escape(w) for w in sorted(_COPULAS, key=len, reverse=True))})(?![^\W\d_])"
    r"[ \t]*|[:=：]|是|は|는|:)[ \t]*[\"']?(?P<value>[#*]?\d(?:[\d#*-]|(?<=\d)[A-Za-z](?=\d)){2,9}[#*]?)(?![\w@.])"
)
_COOKIE = re.compile(r"(?i)(?P<set>set-)?cookie[ \t]*:[ \t]*(?P<pairs>[^\r\n]+)")
_PAIR = re.compile(r"[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)=(\"?)([^;\"\s]*)\2")
_COOKIE_LITERALS = frozenset(("cookie",))
_FOLDED = (*dict.fromkeys(literal for literals, _ in _PATTERNS for literal in literals), "cookie", *_CODE_WORDS)
_CODE_SET = frozenset(_CODE_WORDS)
CUES = Anchors((), _FOLDED)
_CUE_SET = frozenset(_FOLDED)
_NOT_SECRETS = frozenset(("none", "null", "true", "false", "password", "xxxx", "****", "$password", "<password>"))


def credentials(text: str, hits: Hits) -> list[Finding]:
    """SECRET findings of credentials carried by a header or a command line. `hits`: `CUES.find(text)`, or more."""
    if _CUE_SET.isdisjoint(hits):
        return []
    found = [Finding("SECRET", start, end, CONFIDENCE, DETECTOR) for start, end in _values(text, hits)]
    if not _CODE_SET.isdisjoint(hits):
        found += [Finding("SECRET", start, end, CONFIDENCE, "code") for start, end in _codes(text, hits)]
    if "cookie" in hits:
        found += [Finding("SECRET", start, end, CONFIDENCE, "cookie") for start, end in _cookies(text, hits)]
    return found


def _values(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    for literals, pattern in _COMPILED:
        for m in anchored(pattern, text, starts_of(hits, literals)):
            start, end = m.span("value")
            if text[start] in "'\"":
                start, end = start + 1, end - 1
            value = text[start:end]
            if len(value) < _SHORTEST or value.lower() in _NOT_SECRETS or value.startswith(("$", "%", "<", "{")):
                continue  # a variable or a placeholder, not the password
            if "basic" in literals and not _basic(value):
                continue
            yield start, end


def _basic(value: str) -> bool:
    """Whether `value` is base64 of "user:password" (printable, with its colon)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password and decoded.isprintable())


def _cookies(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    """A `Cookie:` header's values (a session's), a `Set-Cookie:` header's first (its attributes
    follow): each at least eight characters, with a digit (a language's "en" or a flag is none)."""
    for m in anchored(_COOKIE, text, starts_of(hits, _COOKIE_LITERALS, back=(0, 4))):
        pairs = list(_PAIR.finditer(text, m.start("pairs"), m.end("pairs")))
        for pair in pairs[:1] if m.group("set") else pairs:
            value = pair.group(3)
            if len(value) >= 8 and any(ch.isdigit() for ch in value):
                yield pair.start(3), pair.end(3)


def _codes(text: str, hits: Hits) -> Iterator[tuple[int, int]]:
    for m in anchored(_CODE, text, starts_of(hits, _CODE_SET)):
        value = m.group("value")
        if 3 <= sum(ch.isdigit() for ch in value) <= 8:
            yield m.span("value")
