"""Values a request's containers split, read whole.

A provider reads a conversation as one text and a JSON object as one document: a card sent as
"4111 1111" in one turn and "1111 1111" in the next, as sixteen one-digit items of an array, or
as a `metadata` key and its value is a card to it. The scan reads each string alone, so what a
container splits is put back together here, as a `Joined` text whose `Piece`s say where each part
came from, and what is found across two pieces or more is located in each of them:

- consecutive texts of the conversation, of any role (tool calls' arguments and tool results
  among them): the end of one and the start of the next, a short text between them whole;
  a user's text is also read with the user's next one across one turn of another role (the
  assistant's "Go on." between the two halves of a number);
- an array of scalars: one-character items side by side (`[4, 1, 1, 1, ...]`, `["j", "a", ...]`),
  short strings with a space between them (`["4111", "1111", "1111", "1111"]`);
- a key and its value (`{"4111 1111": "1111 1111"}`, `{"jane.roe@": "example.com"}`).
- a record's fields: an object's consecutive values, in the body (`metadata`) and in a JSON text
  (a tool call's arguments, `{"card_first8": "54127534", "card_last8": "29016889"}`), and a
  table's consecutive cells ("54127534,29016889", a TSV's columns), in `in_fields`.

Texts meet only where a value can cross: digits on both sides of the meeting (joined by a space,
as a number's groups), or an at sign in one of the two words that meet (joined as they stand).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from classifiers._scan import windows
from classifiers.forwarded import JOINED_ITEMS, Path

JOIN_CHARS = 48  # of each end of a meeting: longer than any value a meeting can cut
SHORT_ITEM = 24  # an array's item this short may be a piece of one value


@dataclass(frozen=True)
class Piece:
    """Where a part of a joined text came from: `path`'s text, from `offset` on, stands at
    `start`..`end` of the joined text."""

    path: Path
    start: int
    end: int
    offset: int


@dataclass(frozen=True)
class Joined:
    """A text put together from the pieces a container split it into."""

    text: str
    pieces: tuple[Piece, ...]

    @cached_property
    def _starts(self) -> list[int]:
        return [p.start for p in self.pieces]  # (the pieces stand in order, none over another)

    def located(self, start: int, end: int) -> list[tuple[Path, int, int]]:
        """Each piece's share of `start`..`end`, in its own text's offsets; empty unless the span
        crosses from one piece into another (what lies in one piece, its own scan finds). The
        pieces it may cross are found by bisection: a table's reading has thousands."""
        shares = []
        for p in self.pieces[max(0, bisect_right(self._starts, start) - 1) :]:
            if p.start >= end:
                break
            if start < p.end:
                shares.append((p.path, max(start, p.start) - p.start + p.offset, min(end, p.end) - p.start + p.offset))
        return shares if len(shares) > 1 else []


def joiner(tail: str, head: str) -> str | None:
    """What stands between two texts read as one where they meet: a space between groups of
    digits, nothing where an at sign is in one of the two words that meet; None where no value
    can cross the meeting."""
    tail, head = tail[-JOIN_CHARS:], head[:JOIN_CHARS]
    if tail.rstrip()[-1:].isdigit() and head.lstrip()[:1].isdigit():
        return " "
    if ("@" in tail or "@" in head) and any("@" in word for word in tail.split()[-1:] + head.split(None, 1)[:1]):
        return ""
    return None


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pieces: list[Piece] = []
        self.length = 0

    def add(self, path: Path, text: str, offset: int = 0, before: str = "") -> None:
        self.parts += [before, text]
        self.length += len(before)
        self.pieces.append(Piece(path, self.length, self.length + len(text), offset))
        self.length += len(text)

    def joined(self) -> Joined:
        return Joined("".join(self.parts), tuple(self.pieces))


def _meeting(first: tuple[Path, str], second: tuple[Path, str]) -> Joined | None:
    (path_a, a), (path_b, b) = first, second
    between = joiner(a, b)
    if between is None:
        return None
    built = _Builder()
    built.add(path_a, a[-JOIN_CHARS:], max(0, len(a) - JOIN_CHARS))
    built.add(path_b, b[:JOIN_CHARS], 0, between)
    return built.joined()


def chained(texts: list[tuple[Path, str]]) -> Iterator[Joined]:
    """Runs of consecutive texts that meet (`joiner`), each read as one: the first's end, any
    text between whole when it is short, the last's start. Two texts make a run when they meet;
    a run grows through a short text that meets the next."""
    i = 0
    while i < len(texts) - 1:
        j = i
        while j + 1 < len(texts) and joiner(texts[j][1], texts[j + 1][1]) is not None:
            if j > i and len(texts[j][1]) > JOIN_CHARS:
                break  # a long text between: no value spans it
            j += 1
        if j > i:
            built = _Builder()
            first = texts[i][1]
            built.add(texts[i][0], first[-JOIN_CHARS:], max(0, len(first) - JOIN_CHARS))
            for k in range(i + 1, j + 1):
                path, text = texts[k]
                between = joiner(texts[k - 1][1], text) or ""
                built.add(path, text if k < j else text[:JOIN_CHARS], 0, between)
            yield built.joined()
            i = j
        else:
            i += 1


Turns = tuple[list[tuple[Path, str]], list[str]]  # the conversation's texts with their paths, and their roles


def turns(body: Mapping[str, Any]) -> Turns:
    """The conversation's texts in order, each with its path and its turn's role, in whichever of
    the three APIs the body is written: Chat Completions' and Anthropic's `messages` (content,
    content parts' and blocks' text, tool calls' arguments, a `tool_use` block's input, a
    `tool_result`'s content), Anthropic's `system`, and Responses' `instructions` and `input`
    (messages, function calls' arguments and their outputs)."""
    texts: list[tuple[Path, str]] = []
    roles: list[str] = []

    def add(path: Path, text: Any, role: str) -> None:
        if isinstance(text, str):
            texts.append((path, text))
            roles.append(role)

    def content(path: Path, value: Any, role: str) -> None:
        if isinstance(value, str):
            add(path, value, role)
            return
        for j, part in enumerate(value if isinstance(value, list) else []):
            if not isinstance(part, Mapping):
                continue
            at = (*path, j)
            kind = part.get("type")
            add((*at, "text"), part.get("text"), role)
            if kind == "tool_use":
                _strings((*at, "input"), part.get("input"), role, add)
            elif kind == "tool_result":
                content((*at, "content"), part.get("content"), "tool")

    add(("instructions",), body.get("instructions"), "system")
    content(("system",), body.get("system"), "system")
    messages = body.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, Mapping):
            continue
        given = message.get("role")
        role = given if isinstance(given, str) else ""
        content(("messages", i, "content"), message.get("content"), role)
        calls = message.get("tool_calls")
        for k, call in enumerate(calls if isinstance(calls, list) else []):
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                add(("messages", i, "tool_calls", k, "function", "arguments"), function.get("arguments"), role)
    given_input = body.get("input")
    if isinstance(given_input, str) and "messages" not in body:
        add(("input",), given_input, "user")
    for i, item in enumerate(given_input if isinstance(given_input, list) else []):
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        given_role = item.get("role")
        if kind == "message" or "role" in item:
            content(("input", i, "content"), item.get("content"), given_role if isinstance(given_role, str) else "")
        elif kind in ("function_call", "custom_tool_call"):
            add(("input", i, "arguments"), item.get("arguments"), "assistant")
            add(("input", i, "input"), item.get("input"), "assistant")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            content(("input", i, "output"), item.get("output"), "tool")
    return texts, roles


def _strings(path: Path, value: Any, role: str, add: Any) -> None:
    """The strings of a JSON value (a tool call's input as an object), in document order."""
    if isinstance(value, str):
        add(path, value, role)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _strings((*path, key), item, role, add)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _strings((*path, i), item, role, add)


def in_conversation(body: Mapping[str, Any]) -> list[Joined]:
    """What the conversation's turns split (`chained`), and each user text read with the user's
    next one across one text of another role."""
    texts, roles = turns(body)
    found = list(chained(texts))
    for i in range(len(texts) - 2):
        if roles[i] == roles[i + 2] == "user" and roles[i + 1] != "user":
            meeting = _meeting(texts[i], texts[i + 2])
            if meeting is not None:
                found.append(meeting)
    return found


def in_array(items: Iterable[tuple[Path, str]]) -> Joined | None:
    """An array of short scalars read as one text (`items`: each one's path and text): side by side
    when every item is one character, else a space between each two where two items meet
    (`joiner`)."""
    listed = list(items)
    if not 2 <= len(listed) <= JOINED_ITEMS or any(len(text) > SHORT_ITEM or not text for _, text in listed):
        return None
    between = "" if all(len(text) == 1 for _, text in listed) else " "
    if between and not any(joiner(a, b) is not None for (_, a), (_, b) in zip(listed, listed[1:], strict=False)):
        return None  # a schema's `enum` or `required`, a list of tags: no value crosses them
    built = _Builder()
    for k, (item_path, text) in enumerate(listed):
        built.add(item_path, text, 0, between if k else "")
    return built.joined()


def key_and_value(key: tuple[Path, str], value: tuple[Path, str]) -> Joined | None:
    """A key and its value, where a value can cross from one into the other."""
    return _meeting(key, value)


# A JSON object's member written in a text: its value's characters (a string's, unescaped or not,
# or a number's digits), short enough to be a piece of one value.
_MEMBER = re.compile(
    r'"(?:[^"\\\n]|\\.){1,64}"[ \t]*:[ \t]*(?:"(?P<text>(?:[^"\\\n]|\\.){1,48})"|(?P<number>-?\d{1,48})(?![\d.]))'
)
# A table's cell of digits (with spaces or hyphens between groups), between separators or a line's
# ends; four digits at least on each side of a meeting ("1,250,000" is one number, not three cells).
_CELL = re.compile(r"(?m)(?:^|(?<=[\t,;|]))[ ]*(?P<cell>\d[\d -]{2,46}\d)[ ]*(?=[\t,;|]|\r?$)")
_CELLS_MEET = re.compile(r"\d{4}[ ]*[\t,;|][ ]*\d{4}")
# Where cells may meet, found in one pass in C (`_scan.windows`: digits, separators, longest gap,
# fewest digits, fewest separators, margin): eight digits or more with a separator among them.
# The pattern above, run over every text, cost about 4% of a conversation's signals.
_CELL_WINDOWS = ("", "\t,;| ", 3, 8, 1, 0)
_CELL_DIGITS = 4
_Field = tuple[Path, str, int]  # a field's path, its value, and where the value starts in its text


def in_fields(path: Path, text: str) -> list[Joined]:
    """What a record's fields split within one text, read whole: an object's consecutive members'
    values where they meet (`joiner`), and a table row's consecutive cells of digits."""
    found: list[Joined] = []
    if '":' in text or '" :' in text:
        values = [(m.start(g), m.end(g)) for m in _MEMBER.finditer(text) for g in ("text", "number") if m.group(g)]
        found += _runs([(path, text[s:e], s) for s, e in values if _piece_like(text[s:e])], lambda a, b: True)
    if any(_CELLS_MEET.search(text, start, end) for start, end in windows(text, _CELL_WINDOWS)):
        cells = [(path, m.group("cell"), m.start("cell")) for m in _CELL.finditer(text)]
        cells = [cell for cell in cells if sum(ch.isdigit() for ch in cell[1]) >= _CELL_DIGITS]
        found += _runs(cells, lambda a, b: _one_separator(text, a, b))
    return found


def in_record(values: list[tuple[Path, str]]) -> list[Joined]:
    """An object's consecutive scalar values in the body (`{"card_first8": ..., "card_last8": ...}`
    in `metadata`), where they meet, read whole."""
    return _runs([(path, value, 0) for path, value in values if _piece_like(value)], lambda a, b: True)


def _piece_like(value: str) -> bool:
    """Whether a field's value may be a piece of one value split over fields: short, and every word
    of it holds a digit or an at sign ("54127534", "5412 7534", "jane.roe@"). A field of words
    ("Nummer C01X00T47") is a value of its own, and a request's own numbers are no fields of one
    (`max_tokens` beside `user`)."""
    return (
        len(value) <= SHORT_ITEM
        and all("@" in word or any(ch.isdigit() for ch in word) for word in value.split())
        and bool(value.strip())
    )


def _one_separator(text: str, first: _Field, second: _Field) -> bool:
    """Whether two cells stand in one row, side by side: one separator between them, no line break."""
    between = text[first[2] + len(first[1]) : second[2]].strip(" ")
    return len(between) == 1 and between in "\t,;|"


FIELD_PIECES = 4  # fields one value may be split over (a card's four groups in four columns)


STRETCHES_APART = "\n\n"  # between two stretches in one reading: no number crosses a line break


def _runs(fields: list[_Field], adjacent: Callable[[_Field, _Field], bool]) -> list[Joined]:
    """Runs of consecutive `fields` that meet and stand `adjacent`, each stretch of two to
    `FIELD_PIECES` of them read as one: a row's id beside a card's two halves ("884120,54127534,
    29016889") is no number of 22 digits, and the card is in the last two. Every stretch of a text
    is put in one reading, apart from the others by a blank line: a table of 10,000 rows is one
    scan of three times its cells, not 30,000 scans."""
    built = _Builder()
    run: list[_Field] = []
    for field in [*fields, None]:
        if field is not None and run and adjacent(run[-1], field) and joiner(run[-1][1], field[1]) is not None:
            run.append(field)
            continue
        for first in range(len(run) - 1):
            for last in range(first + 1, min(len(run), first + FIELD_PIECES)):
                for k in range(first, last + 1):
                    path, value, offset = run[k]
                    before = (joiner(run[k - 1][1], value) or "") if k > first else STRETCHES_APART * bool(built.parts)
                    built.add(path, value, offset, before)
        run = [field] if field is not None else []
    return [built.joined()] if built.pieces else []
