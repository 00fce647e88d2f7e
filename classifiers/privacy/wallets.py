"""A crypto wallet's secrets and accounts, by what they are.

- a seed phrase: BIP-39's word lists in their ten languages (`mnemonic` ships them): 12, 15, 18,
  21 or 24 consecutive words of one list whose checksum holds, or any run of twelve list words or
  more (a phrase miscopied, or made up for a test, is written to be used all the same); numbering
  and punctuation between the words are read through ("1. abandon 2. ability ...");
- a private key: Wallet Import Format (`5HueCGU8rMjxEX...`, Base58Check-verified, its version
  byte a private key's), an extended private key (`xprv...`), and 64 hex digits after a cue
  ("private key", "privkey");
- an address: Bitcoin's Base58Check (`1...`, `3...`, verified) and bech32 (`bc1...`, its checksum
  verified), Ethereum's (`0x` and 40 hex digits): an account's number (ID_NUMBER).

A run of words numbers are said in is a number (a card said in Russian's words holds some of
Russian's list), not a seed. Ordinary sentences are no seed: English's list has none of "the",
"a", "of", "to", "is", so a sentence of twelve list words in a row is all but unwritten. A list
of one-character words (Chinese) is read only with spaces between them: any Chinese text is a
run of such characters.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator
from functools import cache

from mnemonic import Mnemonic

from classifiers.privacy.findings import Finding
from classifiers.privacy.tables import DIGIT_WORDS, NUMBER_WORDS

SEED = "seed-phrase"
# An address is a whole form, checked where it can be: above what its digits may read as inside it
# (an Ethereum address's run of decimal digits passed as a card's).
ADDRESS = "wallet-address"
SHORTEST_SEED = 12
_STRIDE = SHORTEST_SEED // 2
_CHECKED_LENGTHS = frozenset((12, 15, 18, 21, 24))
# A run this long at most is searched for a phrase whose checksum holds (55 checks at most):
# "name name name ..." of 12,000 characters took 2.5 s when every stretch of it was checked
_LONGEST_CHECKED = max(_CHECKED_LENGTHS) + 4
# Numbering and punctuation a seed is written with, read as spaces: "1. abandon, 2) ability"
_PUNCTUATION = "0123456789.,;:()[]{}\"'#-|/\\"
_ASCII_BETWEEN = bytes.maketrans(_PUNCTUATION.encode(), b" " * len(_PUNCTUATION))
_WORD = re.compile(r"[^\W\d_]+")


@cache
def _lists() -> dict[str, frozenset[str]]:
    """Each BIP-39 language's words, as written composed and decomposed (Spanish's "ábaco")."""
    lists = {}
    for language in Mnemonic.list_languages():
        words = Mnemonic(language).wordlist
        lists[language] = frozenset(w for word in words for w in (word, unicodedata.normalize("NFC", word)))
    return lists


@cache
def _all_words() -> frozenset[str]:
    return frozenset().union(*_lists().values())


@cache
def _said_numbers() -> frozenset[str]:
    """The words numbers are said in, in any language (`tables`): a run of them is a number said
    ("четыре один один ...", a card), not a seed, though a list holds some ("один")."""
    return frozenset(word for table in (*DIGIT_WORDS.values(), *NUMBER_WORDS.values()) for word in table)


@cache
def _checker(language: str) -> Mnemonic:
    return Mnemonic(language)  # (it reads its list from a file)


def seed_phrases(text: str) -> list[Finding]:
    """SECRET findings of seed phrases in `text`. Most texts are told apart without a regular
    expression: their tokens' list words never run to twelve."""
    # in UTF-8, bytes translate in a table (no byte of a character beyond ASCII is an ASCII one);
    # a string's translate reads a dict a character, ten times the cost on a non-ASCII text
    # (a lone surrogate, which JSON's escapes can write, is carried through as it is)
    tokens = (
        text.lower().encode(errors="surrogatepass").translate(_ASCII_BETWEEN).decode(errors="surrogatepass").split()
    )
    if len(tokens) < SHORTEST_SEED:
        return []
    words = _all_words()
    # twelve tokens in a row hold two sixth tokens in a row: most texts are let go on a sixth of them
    if b"\x01\x01" not in bytes(map(words.__contains__, tokens[::_STRIDE])):
        return []
    marks = bytes(map(words.__contains__, tokens))
    if b"\x01" * SHORTEST_SEED not in marks:
        return []
    return list(_phrases(text))


def _phrases(text: str) -> Iterator[Finding]:
    """The runs of one list's words, located: the words of the text in order, a run broken by any
    word of no list (numbering and punctuation between them do not break it)."""
    spans = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]
    for language, words in _lists().items():
        run: list[tuple[int, int, str]] = []
        for span in [*spans, (0, 0, "")]:
            if span[2] in words and (len(span[2]) > 1 or _spaced(text, span)):
                run.append(span)
                continue
            if len(run) >= SHORTEST_SEED and 2 * sum(word in _said_numbers() for _, _, word in run) < len(run):
                yield _seed(_checker(language), run)
            run = []


def _seed(checker: Mnemonic, run: list[tuple[int, int, str]]) -> Finding:
    """A run of list words as a seed: the longest phrase within it whose checksum holds (a run may
    begin with a word of the list that says what follows: "seed: abandon ..."), else the whole run."""
    if len(run) > _LONGEST_CHECKED:  # a list of words, not a phrase with a word or two beside it
        return Finding("SECRET", run[0][0], run[-1][1], 0.9, SEED)
    words = [unicodedata.normalize("NFKD", word) for _, _, word in run]
    for length in sorted((n for n in _CHECKED_LENGTHS if n <= len(run)), reverse=True):
        for first in range(len(run) - length + 1):
            if checker.check(" ".join(words[first : first + length])):
                return Finding("SECRET", run[first][0], run[first + length - 1][1], 0.99, SEED)
    return Finding("SECRET", run[0][0], run[-1][1], 0.9, SEED)


def _spaced(text: str, span: tuple[int, int, str]) -> bool:
    """Whether a one-character word stands apart (a Chinese list's word with spaces around it)."""
    start, end, _ = span
    return (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())


# --- keys and addresses ------------------------------------------------------------------------
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_VALUES = {ch: i for i, ch in enumerate(_B58)}
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_WIF = re.compile(
    r"(?<![A-Za-z0-9])(?:[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}|[xt]prv[1-9A-HJ-NP-Za-km-z]{107,108})(?![A-Za-z0-9])"
)
_BASE58_ADDRESS = re.compile(r"(?<![A-Za-z0-9])[13mn2][1-9A-HJ-NP-Za-km-z]{25,34}(?![A-Za-z0-9])")
_BECH32_ADDRESS = re.compile(r"(?i)(?<![A-Za-z0-9])(?:bc|tb)1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{11,71}(?![A-Za-z0-9])")
_ETHEREUM = re.compile(r"(?<![A-Za-z0-9])0x[0-9a-fA-F]{40}(?![A-Za-z0-9])")
_HEX_KEY = re.compile(r"(?<![A-Za-z0-9])(?:0x)?[0-9a-fA-F]{64}(?![A-Za-z0-9])")
# the words before 64 hex digits that make them a private key (a hash is 64 hex digits too)
_KEY_CUE = re.compile(
    r"(?i)(?:priv(?:ate)?[ _-]?key|secret[ _-]?key|wallet[ _-]?key|signing[ _-]?key|私钥|秘密鍵|개인\s?키)"
)
_CUE_REACH = 40
_PRIVATE_VERSIONS = frozenset((0x80, 0xEF))
_ADDRESS_VERSIONS = frozenset((0x00, 0x05, 0x6F, 0xC4))
_EXTENDED_PRIVATE = (bytes.fromhex("0488ade4"), bytes.fromhex("04358394"))


def keys_and_addresses(text: str, windows: list[tuple[int, int]]) -> list[Finding]:
    """Private keys (SECRET) and addresses (ID_NUMBER) in the text's runs of base64-like
    characters (`windows`, from the scan: keys and addresses are such runs)."""
    found = []
    for start, end in windows:
        for m in _WIF.finditer(text, start, end):
            payload = _base58check(m.group())
            if payload is not None and _private(payload):
                found.append(Finding("SECRET", m.start(), m.end(), 0.99, "wallet-key"))
        for m in _BASE58_ADDRESS.finditer(text, start, end):
            payload = _base58check(m.group())
            if payload is not None and len(payload) == 21 and payload[0] in _ADDRESS_VERSIONS:
                found.append(Finding("ID_NUMBER", m.start(), m.end(), 0.99, ADDRESS))
        for m in _BECH32_ADDRESS.finditer(text, start, end):
            if _bech32(m.group().lower()):
                found.append(Finding("ID_NUMBER", m.start(), m.end(), 0.99, ADDRESS))
        found += [Finding("ID_NUMBER", m.start(), m.end(), 0.99, ADDRESS) for m in _ETHEREUM.finditer(text, start, end)]
        for m in _HEX_KEY.finditer(text, start, end):
            if _KEY_CUE.search(text, max(0, m.start() - _CUE_REACH), m.start()):
                found.append(Finding("SECRET", m.start(), m.end(), 0.95, "wallet-key"))
    return found


def _private(payload: bytes) -> bool:
    """A WIF key's payload (a version byte, 32 bytes, and 1 when its public key is compressed), or
    an extended private key's (78 bytes)."""
    if len(payload) == 78:
        return payload[:4] in _EXTENDED_PRIVATE
    return payload[0] in _PRIVATE_VERSIONS and (len(payload) == 33 or (len(payload) == 34 and payload[-1] == 1))


def _base58check(text: str) -> bytes | None:
    """The payload of a Base58Check string, or None where its checksum does not hold."""
    number = 0
    for ch in text:
        number = number * 58 + _B58_VALUES[ch]
    zeros = len(text) - len(text.lstrip("1"))
    raw = b"\x00" * zeros + number.to_bytes((number.bit_length() + 7) // 8, "big")
    if len(raw) < 5:
        return None
    payload, checksum = raw[:-4], raw[-4:]
    return payload if hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] == checksum else None


def _bech32(address: str) -> bool:
    """Whether a segwit address's checksum holds (BIP-173's bech32 or BIP-350's bech32m)."""
    prefix, _, data = address.rpartition("1")
    values = [_BECH32.index(ch) for ch in data]
    check = 1
    for value in [ord(ch) >> 5 for ch in prefix] + [0] + [ord(ch) & 31 for ch in prefix] + values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for i, generator in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            check ^= generator if (top >> i) & 1 else 0
    return check in (1, 0x2BC830A3)
