"""Bank accounts and routing numbers by the words that name them, in the languages the scan reads.

"routing 026009593, account 4830019275166", "Konto 1234567890", "número de cuenta 0049 1500 05
1234567890", "счёт 40817810099910004312", "口座番号 1234567", "계좌번호 110-123-456789": the cue
says what the digits are, as a form's label does (an IBAN, with its own check digits, is
`structured`'s wherever it stands). A routing number is an ABA routing transit number whose check
digit holds (python-stdnum's `us.rtn`); an account's number is six digits or more, in groups,
more sure where python-stdnum validates it as a national account (Czech, Spanish, New Zealand);
either above what reads as a phone number there (a cue names the account).
Both are ID_NUMBER, as `identifiers`' "account number" is; a sort code is `identifiers`'. An
IBAN's shape after an account's name ("IBAN: IT28 W030 ...", "Nr rachunku: PL27 ...") is an IBAN,
and 13 to 19 digits in a card's groups after a card's name ("carte", "Dankort", "Карта") a card,
though their check digits fail: a value miscopied or made up for a form is someone's all the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from stdnum.cz import bankaccount as czech
from stdnum.es import ccc as spanish
from stdnum.nz import bankaccount as new_zealand
from stdnum.us import rtn

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.findings import Finding

DETECTOR = "account-cue"
_ROUTING_WORDS = ("routing", "aba", "rtn", "transit")
_ACCOUNT_WORDS = (
    "account", "acct", "a/c", "konto", "kontonummer", "kontonr", "cuenta", "compte", "conta", "conto",
    "rekening", "hesap", "rachunek", "rachunku", "tài khoản", "tai khoan", "счёт", "счет", "счета",
    "рахунок", "账号", "账户", "帳號", "帳戶", "口座", "계좌", "iban", "clabe", "számlaszám", "reg.nr",
)  # fmt: skip
# A card's name: the digits after it are a card's though their check digit fails (a card
# miscopied is someone's all the same); a card whose check holds is `structured`'s anywhere.
_CARD_WORDS = (
    "card", "carte", "cartão", "cartao", "tarjeta", "karte", "kaart", "dankort", "карта", "карты", "карту",
    "卡号", "カード", "카드",
)  # fmt: skip
# What may stand between a cue and its digits: a number's word, "is", a colon, a "#", a JSON
# key's closing quote.
_LINK = (
    r"(?:[ \t]*(?:number|num|nr\.?|no\.?|nummer|n[º°o]\.?|número|numero|numéro|#|id|is|es|est|ist|:|：|=|\.|/|[\"']|"
    r"номер|番号|번호|号码?|號碼?|番號)){0,3}[ \t]*[\"']?[ \t]*"
)
_GROUPS = r"\d(?:[ -]?\d){5,33}"
# An IBAN's shape, its country, its check digits and groups of four (its check is `structured`'s:
# after an account's name, one miscopied or made up for a form is an account's all the same)
_IBAN_SHAPE = r"(?-i:[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)"
_CARD_GROUPS = r"\d{4}(?:[ -]?\d{2,4}){2,4}"
# (a cue in a script written without spaces stands against the word before it: "我的账号")
_BEFORE = r"(?<![A-Za-z\u00c0-\u024f\u0400-\u04ff])"


def _cue(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_ROUTING = re.compile(rf"(?i){_BEFORE}(?:{_cue(_ROUTING_WORDS)})(?![^\W\d_]){_LINK}(?P<value>\d{{9}})(?![\d-])")
# (a cue may stand against its digits in a script without spaces: "账号6222...")
_ACCOUNT = re.compile(
    rf"(?i){_BEFORE}(?:{_cue(_ACCOUNT_WORDS)})(?![a-z]){_LINK}(?:(?P<iban>{_IBAN_SHAPE})(?![A-Z0-9])|"
    rf"(?P<value>{_GROUPS})(?![\d]))"
)
_CARD = re.compile(rf"(?i){_BEFORE}(?:{_cue(_CARD_WORDS)})(?![a-z]){_LINK}(?P<value>{_CARD_GROUPS})(?![\d])")
CUES = Anchors((), (*_ROUTING_WORDS, *_ACCOUNT_WORDS, *_CARD_WORDS))
_ROUTING_SET = frozenset(_ROUTING_WORDS)
_ACCOUNT_SET = frozenset(_ACCOUNT_WORDS)
_CARD_SET = frozenset(_CARD_WORDS)
_CARD_DIGITS = range(13, 20)
_VALIDATORS = (czech, spanish, new_zealand)


def accounts(text: str, hits: Hits) -> list[Finding]:
    """ID_NUMBER findings of routing and account numbers after their cues. `hits`: `CUES.find(text)`, or more."""
    found = list(_routing(text, hits)) if not _ROUTING_SET.isdisjoint(hits) else []
    if not _ACCOUNT_SET.isdisjoint(hits):
        found += _accounts(text, hits)
    if not _CARD_SET.isdisjoint(hits):
        found += [
            Finding("CREDIT_CARD", m.start("value"), m.end("value"), 0.9, DETECTOR)
            for m in anchored(_CARD, text, starts_of(hits, _CARD_SET))
            if sum(ch.isdigit() for ch in m.group("value")) in _CARD_DIGITS
        ]
    return found


def _routing(text: str, hits: Hits) -> Iterator[Finding]:
    for m in anchored(_ROUTING, text, starts_of(hits, _ROUTING_SET)):
        if rtn.is_valid(m.group("value")):
            yield Finding("ID_NUMBER", m.start("value"), m.end("value"), 0.97, DETECTOR)


def _accounts(text: str, hits: Hits) -> Iterator[Finding]:
    for m in anchored(_ACCOUNT, text, starts_of(hits, _ACCOUNT_SET)):
        if m.group("iban"):
            yield Finding("IBAN", m.start("iban"), m.end("iban"), 0.95, DETECTOR)
            continue
        value = m.group("value").rstrip(" -")
        sure = any(validator.is_valid(value) for validator in _VALIDATORS)
        yield Finding("ID_NUMBER", m.start("value"), m.start("value") + len(value), 0.97 if sure else 0.95, DETECTOR)
