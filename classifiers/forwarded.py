"""Everything of a request body that a provider would receive, each with its JSON path.

The privacy scan reads these, not only the messages' text: a name in a message's `name`, a card
in an earlier tool call's arguments, an email in `user`, `metadata`, a tool's description, a
prediction or a media URL's query string reaches the provider as surely as the prompt does. So does
a key (`{"jane.roe@example.com": 1}`, at any depth, the top level included) and a number
(`"seed": 4111111111111111` is sixteen digits a provider reads): every string, every key and every
number, whatever its name, is read; no list of fields stands between the body and the scan.

What edgeway cannot read is listed apart, so that a policy can keep it local instead of forwarding
it unread: a media part's payload (an image, audio, a file by id or of a type that is not text),
and any `data:` URL whose media type is not text (recognized by its syntax, RFC 2397, wherever it
stands), or whose text does not decode by its charset. A `data:` URL of text (a text file sent
inline included), and a string that only starts like one, is read like any other string; one in
another encoding than UTF-8 (UTF-16 or UTF-32, by its charset or its byte-order mark, EBCDIC, a
Windows or ISO code page: any Python codec) is decoded, and its text read too (`files`).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

# The names and values the chat protocols are made of, read on every request: a text that is
# exactly one of them holds nothing private, and is not scanned (each tiny scan cost 25 us).
PROTOCOL_WORDS = frozenset(
    {
        "role", "content", "user", "assistant", "system", "developer", "tool", "type", "text", "name",
        "image_url", "url", "detail", "function", "arguments", "tool_calls", "tool_call_id", "id",
        "description", "parameters", "properties", "required", "object", "string", "integer", "number",
        "boolean", "array", "items", "enum", "auto", "none", "low", "high", "file", "file_data",
        "filename", "input_audio", "data", "format", "refusal", "cache_control", "ephemeral",
        "messages", "model", "max_tokens", "max_completion_tokens", "stream", "stream_options",
        "include_usage", "temperature", "top_p", "tools", "tool_choice", "metadata", "seed",
        "response_format", "json_schema", "schema", "strict", "stop", "n", "logprobs",
    }
)  # fmt: skip
# An array of scalars this long or shorter may be one value in pieces (`classifiers.reassembled`);
# a longer one is data: a token list, an embedding, a table's column.
JOINED_ITEMS = 64
MEDIA_PARTS = frozenset({"image_url", "input_audio", "file", "input_image", "input_file"})
# RFC 2397's data URL: `data:[<mediatype>][;base64],<data>`. Text media types are read.
_DATA_URL = re.compile(r"data:([a-z]+/[a-z0-9.+-]+)?((?:;[a-z0-9.+-]+=[^;,]*)*)(;base64)?,", re.IGNORECASE)
_TEXT_TYPES = re.compile(
    r"(?:text/.*|application/(?:json|xml|x-www-form-urlencoded|[a-z0-9.+-]*\+(?:json|xml)))$", re.IGNORECASE
)


@dataclass(frozen=True)
class Key:
    """A path step naming a mapping's key itself (a private value used as a key), not its value."""

    name: str


Path = tuple[str | int | Key, ...]


def key_text(name: str) -> str:
    """A key as the scan reads it: `_` is how keys separate words (`x_Tel: 0207...`,
    `passport_no X1234567`), so it reads as a space. One character for one, so that what is found
    stands at the same place in the key as written."""
    return name.replace("_", " ")


def readable_file(part: Mapping[str, Any]) -> bool:
    """A file part whose payload is a text `data:` URL, inline: read like any other string. A file
    by id or URL, or of any other type, is media edgeway cannot read."""
    inner = part.get("file")
    fields = inner if isinstance(inner, Mapping) else part
    data = fields.get("file_data")
    return (
        isinstance(data, str)
        and data[:5].lower() == "data:"
        and _DATA_URL.match(data) is not None
        and not unreadable_data_url(data)
        and not any(fields.get(ref) for ref in ("file_id", "file_url"))
    )


def unreadable_data_url(text: str) -> bool:
    """A `data:` URL that carries media (an image, audio, any non-text bytes)."""
    if not text.startswith(("data:", "DATA:", "Data:")):
        return False
    found = _DATA_URL.match(text)
    if found is None:
        return False  # only starts like one: plain text, read as such
    media_type = found.group(1) or "text/plain"  # RFC 2397's default
    return _TEXT_TYPES.match(media_type) is None


def text_at(body: Any, path: Path) -> str:
    """The text the walk read at `path`: a string, a key, or a number's digits."""
    holder = body
    for step in path[:-1]:
        holder = holder[step]
    last = path[-1]
    if isinstance(last, Key):
        return key_text(last.name)
    value = holder[last]
    if isinstance(value, str):
        return value
    text = number_text(value)
    if text is None:
        raise TypeError(f"no text at {path}")
    return text


def number_text(value: int | float) -> str | None:
    """A JSON number's digits as a provider reads them, of any width, without its sign (a card is
    a card with a minus before it: `"seed": -4214833366294245`); None for NaN and infinities,
    which JSON has not."""
    value = abs(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() and value < 1e17 else repr(value)
    return str(value)


@dataclass(frozen=True)
class Forwarded:
    """What a body forwards: its texts (strings, keys and numbers' digits, each with its path), the
    paths of its numbers among them, and the paths of what cannot be read."""

    strings: list[tuple[Path, str]]
    numbers: frozenset[Path]
    media: list[Path]
    files: list[tuple[Path, str]]  # a text data URL in another encoding than UTF-8, and its text
    arrays: list[list[tuple[Path, str]]]  # arrays of scalars only: each item's path and text
    pairs: list[tuple[tuple[Path, str], tuple[Path, str]]]  # a key and its scalar value
    records: list[list[tuple[Path, str]]]  # an object's scalar values in order, where it has two or more


def forwarded(body: Mapping[str, Any]) -> Forwarded:
    """The body's texts in document order. A text that is exactly a protocol word is left out: it
    holds nothing private, and the walk runs over every request's whole history."""
    walk = _Walk()
    walk.value((), body)
    return Forwarded(
        walk.strings, frozenset(walk.numbers), walk.media, walk.files, walk.arrays, walk.pairs, walk.records
    )


class _Walk:
    """A depth-first walk (a body nests at most `server.max_json_depth` levels)."""

    def __init__(self) -> None:
        self.strings: list[tuple[Path, str]] = []
        self.numbers: set[Path] = set()
        self.media: list[Path] = []
        self.files: list[tuple[Path, str]] = []
        self.arrays: list[list[tuple[Path, str]]] = []
        self.pairs: list[tuple[tuple[Path, str], tuple[Path, str]]] = []
        self.records: list[list[tuple[Path, str]]] = []

    def value(self, path: Path, value: Any) -> None:
        if isinstance(value, str):
            self.string(path, value)
        elif isinstance(value, dict):
            kind = value.get("type")  # (in a tool's schema, a property may be named "type")
            if isinstance(kind, str) and kind in MEDIA_PARTS and not readable_file(value):
                self.media.append(path)
            # its scalar values in order, a value may cross two: but for the request's own fields
            # (`max_tokens`, `seed`, `temperature`) and those the protocol names
            record: list[tuple[Path, str]] = []
            for key, item in value.items():
                if path and key not in PROTOCOL_WORDS and _scalar(item) and item not in PROTOCOL_WORDS:
                    record.append(((*path, key), _scalar_text(item)))
                read_key = isinstance(key, str) and key not in PROTOCOL_WORDS
                if read_key:
                    self.strings.append(((*path, Key(key)), key_text(key)))
                if type(item) is str:  # most leaves: no call for them
                    if item not in PROTOCOL_WORDS:
                        self.string((*path, key), item)
                        if read_key:
                            self.pairs.append((((*path, Key(key)), key_text(key)), ((*path, key), item)))
                else:
                    self.value((*path, key), item)
                    if read_key and _scalar(item):
                        self.pairs.append((((*path, Key(key)), key_text(key)), ((*path, key), _scalar_text(item))))
            if len(record) > 1:
                self.records.append(record)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self.value((*path, i), item)
            if 1 < len(value) <= JOINED_ITEMS and all(_piece(item) for item in value):
                self.arrays.append([((*path, i), _scalar_text(item)) for i, item in enumerate(value)])
        elif isinstance(value, int | float) and not isinstance(value, bool):
            text = number_text(value)
            if text is not None:
                self.strings.append((path, text))
                self.numbers.add(path)

    def string(self, path: Path, text: str) -> None:
        if text[:5].lower() == "data:":
            if unreadable_data_url(text):
                self.media.append(path)
                return
            decoded = encoded_text(text)
            if decoded is UNREADABLE:
                self.media.append(path)
                return
            if isinstance(decoded, str):
                self.files.append((path, decoded))
        if text not in PROTOCOL_WORDS:
            self.strings.append((path, text))


def _piece(value: Any) -> bool:
    """Whether an array's item may be a piece of one value: a string, or a single digit (an array
    of larger numbers is data: token ids, measurements)."""
    return isinstance(value, str) or (type(value) is int and 0 <= value <= 9)


def _scalar(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, int | float) and not isinstance(value, bool) and number_text(value) is not None
    )


def _scalar_text(value: str | int | float) -> str:
    return value if isinstance(value, str) else number_text(value) or ""


UNREADABLE = object()  # a text data URL whose bytes do not decode as its charset says
_CHARSET = re.compile(r";\s*charset=\"?([^;,\"]+)", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"), (codecs.BOM_UTF8, "utf-8-sig"))  # fmt: skip
_AS_WRITTEN = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})  # the string's own reading finds what these hold


def encoded_text(url: str) -> str | object | None:
    """The text of a text `data:` URL written in another encoding than UTF-8: by its `charset`,
    else its byte-order mark. None where the string's own readings read it (UTF-8, ASCII, or only
    the start of a data URL); `UNREADABLE` where the bytes do not decode so (an unknown charset,
    bytes the charset does not have)."""
    found = _DATA_URL.match(url)
    if found is None:
        return None
    declared = _CHARSET.search(found.group(2) or "")
    charset = declared.group(1).strip().lower() if declared else None
    payload = url[found.end() :]
    if found.group(3) is None and (charset is None or charset in _AS_WRITTEN):
        return None  # percent-encoded UTF-8 or ASCII: the string's percent reading reads it
    try:
        raw = base64.b64decode(payload + "=" * (-len(payload) % 4)) if found.group(3) else unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return UNREADABLE
    if charset is None:  # its byte-order mark, else RFC 2397's US-ASCII, read as UTF-8
        charset = next((name for bom, name in _BOMS if raw.startswith(bom)), "utf-8")
    try:
        text = raw.decode(charset)
    except (LookupError, UnicodeDecodeError):
        return UNREADABLE
    return None if charset in _AS_WRITTEN else text  # (base64 of UTF-8: the string's base64 reading)


# What a bare number can be: an identifier that validates (a card's Luhn digits, an SSN, a national
# ID) is one wherever it stands; a phone number only where its key says so (a JSON number of ten
# digits is far more often a timestamp or an id than a phone number written without its +).
NUMBER_TYPES = frozenset({"CREDIT_CARD", "US_SSN", "ID_NUMBER", "IBAN", "SECRET", "UNSCANNED"})
_PHONE_KEYS = re.compile(r"phone|tel|mobile|cell|fax|whatsapp|contact|msisdn", re.IGNORECASE)


def number_finding(path: Path, kind: str) -> bool:
    """Whether a finding of `kind` in the number at `path` stands."""
    if kind in NUMBER_TYPES:
        return True
    key = next((step for step in reversed(path) if isinstance(step, str)), "")
    return kind == "PHONE" and _PHONE_KEYS.search(key) is not None
