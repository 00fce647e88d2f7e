"""The facts about one request that routing decides on, computed once per request.

`Scorer` loads the trained models once; `Scorer.signals()` reads a whole conversation (system
prompt and earlier turns included, text parts of content arrays, images counted) and never
raises on odd input: an empty conversation, a megabyte of text or binary garbage all give
valid signals.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from classifiers.complexity import ComplexityModel, EdgeClass
from classifiers.forwarded import NUMBER_TYPES, Key, Path, forwarded, key_text, number_finding, text_at
from classifiers.identifier import LanguageIdentifier
from classifiers.language import detect_language
from classifiers.privacy import STRUCTURED_TYPES, Finding, PrivacyScanner
from classifiers.privacy.fields import FIELD_CHARS, field_value
from classifiers.privacy.findings import drop_overlaps
from classifiers.privacy.languages import UNREAD_WORDS
from classifiers.privacy.readings import composed_text
from classifiers.privacy.scripts import UNREAD
from classifiers.privacy.structured import checked_numbers
from classifiers.reassembled import Joined, in_array, in_conversation, in_fields, in_record, key_and_value
from classifiers.seen import SeenTexts, TextFacts
from classifiers.tokens import TokenEstimator, joined_counts, text_counts

TOKENS_PER_MESSAGE = 5  # the chat template's role markers, measured on SmolLM2's template
FIELD_CONFIDENCE = 0.9  # a key that names a person, over a value written as a name
KEYED_CHARS = 64  # a value this short, with a digit, is read again after its key (`_keyed`)
# Keys that name a field of the protocol, not what its value is: no cue.
_NO_CUE_KEYS = frozenset({"content", "text", "arguments", "description", "name", "role", "type", "id", "model"})
STRUCTURED = frozenset(STRUCTURED_TYPES)


class PrivacyFinding(NamedTuple):
    """A Finding located in the request body: `path` is the JSON path of the string it is in
    (`("messages", 0, "content")`, `("tools", 1, "function", "description")`, `("user",)`) and
    `start`/`end` index that string. An UNSCANNED finding spans a whole media part it names."""

    type: str
    start: int
    end: int
    confidence: float
    detector: str
    path: Path

    @property
    def message(self) -> int | None:
        """The message whose text holds it, if it is in a message's content."""
        path = self.path
        if len(path) >= 3 and path[0] == "messages" and path[2] == "content" and isinstance(path[1], int):
            return path[1]
        return None

    @property
    def part(self) -> int | None:
        """The content part, when the message's content is an array."""
        return self.path[3] if len(self.path) >= 5 and isinstance(self.path[3], int) else None


@dataclass(frozen=True)
class Signals:
    privacy: tuple[PrivacyFinding, ...]
    prompt_tokens: int
    max_tokens: int | None
    language: str  # ISO 639-1, or "und"
    text_only: bool  # no image, audio or file parts
    metadata: dict[str, str] = field(default_factory=dict)
    score_complexity: Callable[[], float] = field(default=lambda: 0.0, repr=False, compare=False)

    @cached_property
    def complexity(self) -> float:
        """Calibrated P(the edge tier is not enough), scored when first read: a policy that tests
        no complexity (an edge-only app, a privacy-only one) never pays for the model."""
        return self.score_complexity()

    @property
    def scored_complexity(self) -> float | None:
        """The complexity if something has read it already, else None (without scoring it)."""
        scored = self.__dict__.get("complexity")
        return scored if isinstance(scored, float) else None

    @property
    def pii_types(self) -> frozenset[str]:
        return frozenset(f.type for f in self.privacy)

    @property
    def kept_masked(self) -> tuple[PrivacyFinding, ...]:
        """The findings a copy kept at rest masks (the ledger's prompt, the egress audit): every
        one located in a text, the words of a script or a language no detector reads as `UNREAD`
        (what was not read is not kept readable either); media, which has no span, stays as it is."""
        return tuple(
            f._replace(type=UNREAD) if f.detector.startswith(UNREAD_WORDS) else f
            for f in self.privacy
            if f.type != "UNSCANNED" or f.detector.startswith(UNREAD_WORDS)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "complexity": round(self.complexity, 4),
            "privacy": [
                {
                    **f._asdict(),
                    "path": [str(p.name) if isinstance(p, Key) else p for p in f.path],
                    "confidence": round(f.confidence, 3),
                }
                for f in self.privacy
            ],
            "prompt_tokens": self.prompt_tokens,
            "max_tokens": self.max_tokens,
            "language": self.language,
            "text_only": self.text_only,
            "metadata": dict(self.metadata),
        }


def message_texts(messages: list[Any]) -> list[tuple[int, int | None, str]]:
    """(message index, part index or None, text) for every piece of text in the conversation."""
    texts: list[tuple[int, int | None, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append((i, None, content))
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict):
                    text = part.get("text") or part.get("refusal")
                    if isinstance(text, str):
                        texts.append((i, j, text))
    return texts


def _text_only(messages: list[Any]) -> bool:
    return all(
        not isinstance(m, dict)
        or not isinstance(m.get("content"), list)
        or all(isinstance(p, dict) and p.get("type") in ("text", "refusal") for p in m["content"])
        for m in messages
    )


class Scorer:
    def __init__(self, edge_class: EdgeClass = EdgeClass.SMALL) -> None:
        self.complexity = ComplexityModel(edge_class)
        self.privacy = PrivacyScanner()
        self.tokens = TokenEstimator()
        self.seen = SeenTexts()

    def _keyed(
        self, strings: list[tuple[Path, str]], numbers: frozenset[Path], found: set[Path]
    ) -> list[PrivacyFinding]:
        """A short value whose key is its cue (`{"ssn": 123456789}`, `{"passport": "X1234567"}`):
        alone, nine digits are no SSN; under that key, they are. Read as "key: value", what is
        found in the value is kept."""
        keyed: list[PrivacyFinding] = []
        for path, text in strings:
            key = path[-1] if path else None
            if (
                not isinstance(key, str)
                or key in _NO_CUE_KEYS
                or path in found
                or len(text) > KEYED_CHARS
                or not any(ch.isdigit() for ch in text)
            ):
                continue
            prefix = f"{key_text(key)}: "
            for f in self.facts(prefix + text).findings:
                if f.type in STRUCTURED_TYPES and f.start >= len(prefix):
                    if path not in numbers or number_finding(path, f.type):
                        start, end = f.start - len(prefix), f.end - len(prefix)
                        keyed.append(PrivacyFinding(f.type, start, end, f.confidence, f"{f.detector}+key", path))
        return keyed

    def _field_values(self, strings: list[tuple[Path, str]], whole: set[tuple[Path, int]]) -> list[PrivacyFinding]:
        """A field's whole value that its key says is a person or an address (`fields.field_value`:
        `metadata.name`, `user`, a message's `name`, a schema's `enum` of names), outside the
        messages' text (whose words say more than a key). `whole`: the paths (with their
        lengths) a finding already covers whole."""
        named: list[PrivacyFinding] = []
        names, common = self.privacy.uncased.names, self.privacy.spans.common
        for path, text in strings:
            if len(text) > FIELD_CHARS or not path or not text[:1].isalpha() or (path, len(text)) in whole:
                continue
            key, listed = _field_key(path)
            if key is None:
                continue
            kind = field_value(key, composed_text(text), names, common, listed)
            if kind is not None:
                named.append(PrivacyFinding(kind, 0, len(text), FIELD_CONFIDENCE, "field-value", path))
        return named

    def _reassembled(
        self,
        joined: Iterable[Joined],
        numbers: frozenset[Path],
        kinds: frozenset[str] = STRUCTURED,
        read: Callable[[str], Iterable[Finding]] | None = None,
    ) -> list[PrivacyFinding]:
        """What crosses from one piece of a split value into another (`classifiers.reassembled`:
        turns, arrays, a key and its value, a record's fields), located in each piece it crosses:
        each piece is masked, not only the one a finding of its own would have named. `kinds`:
        the types that stand across the pieces (a record's fields: those a check proves, as a bare
        number's: two cells that read as a phone number together are two numbers). `read`: what
        reads a joined text (the whole scan, by default, kept while the texts stay)."""
        found: list[PrivacyFinding] = []
        for whole in joined:
            for f in read(whole.text) if read is not None else self.facts(whole.text).findings:
                if f.type not in kinds:
                    continue
                shares = whole.located(f.start, f.end)
                if any(path in numbers and not number_finding(path, f.type) for path, _, _ in shares):
                    continue
                found += [
                    PrivacyFinding(f.type, start, end, f.confidence, f"{f.detector}+joined", path)
                    for path, start, end in shares
                ]
        return list(dict.fromkeys(found))  # (stretches of a record's fields overlap)

    def use_edge_class(self, edge_class: EdgeClass) -> None:
        """The prior for the edge model this gateway serves (its size is known once it is loaded)."""
        if edge_class is not self.complexity.edge_class:
            self.complexity = ComplexityModel(edge_class)

    def facts(self, text: str) -> TextFacts:
        """What one text holds, read once while it stays among the recent texts."""
        facts = self.seen.get(text)
        if facts is None:
            facts = TextFacts((*self.privacy.scan(text), *_fielded(text)), text_counts(text))
            self.seen.put(text, facts)
        return facts

    def signals(
        self,
        messages: list[Any],
        *,
        max_tokens: int | None = None,
        metadata: dict[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Signals:
        """Complexity, tokens and language from the messages' text (what a model reads); privacy
        from every string of `body` (what a provider receives), or of the messages without one."""
        pieces = message_texts(messages)
        counts = [self.facts(text).counts for _, _, text in pieces]
        scanned = body if body is not None else {"messages": messages}
        sent = forwarded(scanned)
        findings = [
            PrivacyFinding(*f, path)
            for path, text in sent.strings
            for f in self.facts(text).findings
            if path not in sent.numbers or number_finding(path, f.type)
        ]
        findings += self._keyed(sent.strings, sent.numbers, {f.path for f in findings})
        findings += self._field_values(sent.strings, {(f.path, f.end) for f in findings if f.start == 0})
        findings += [PrivacyFinding("UNSCANNED", 0, 0, 1.0, "media", path) for path in sent.media]
        findings += self._in_files(scanned, sent.files)
        split = [*in_conversation(scanned), *filter(None, map(in_array, sent.arrays))]
        split += filter(None, (key_and_value(key, value) for key, value in sent.pairs))
        findings += self._reassembled(split, sent.numbers)
        records = [joined for record in sent.records for joined in in_record(record)]
        findings += self._reassembled(records, sent.numbers, NUMBER_TYPES, _checked)
        joined, ask = joined_counts(counts), _ask(messages, pieces)
        return Signals(
            privacy=tuple(findings),
            prompt_tokens=self.tokens.from_counts(joined)
            + TOKENS_PER_MESSAGE * len(messages)
            + self._described_tokens(body),
            max_tokens=max_tokens,
            language=_language(messages, pieces, self.privacy.languages.identifier),
            text_only=_text_only(messages),
            metadata=dict(metadata or {}),
            # read at call time: the prior follows the edge class once the edge model is loaded
            score_complexity=lambda: self.complexity.score("\n".join(text for _, _, text in pieces), joined, ask),
        )

    def _in_files(self, body: Mapping[str, Any], files: list[tuple[Path, str]]) -> list[PrivacyFinding]:
        """What a text file in another encoding holds: its data URL found whole, as the most
        confident finding in its text (a decoded character is no character of the URL)."""
        found = []
        for path, text in files:
            inner = self.facts(text).findings
            if inner:
                best = max(inner, key=lambda f: f.confidence)
                url = text_at(body, path)
                found.append(PrivacyFinding(best.type, 0, len(url), best.confidence, f"{best.detector}+file", path))
        return found

    def _described_tokens(self, body: Mapping[str, Any] | None) -> int:
        """The tokens of what a model reads beside the messages: the tools' descriptions and
        schemas (on a coding agent's request, most of the prompt) and a response schema."""
        if not body:
            return 0
        described = [body.get(key) for key in ("tools", "functions", "response_format") if body.get(key)]
        if not described:
            return 0
        text = json.dumps(described, ensure_ascii=False, separators=(",", ":"))
        return self.tokens.from_counts(text_counts(text))


def _field_key(path: Path) -> tuple[str | None, bool]:
    """The key a field's value is read by, and whether it is one of a schema's listed values
    (`enum`: the property's name is its key). None for the messages' text and for keys."""
    last = path[-1]
    if isinstance(last, Key) or _conversation_text(path):
        return None, False
    if isinstance(last, str):
        return last, False
    if len(path) >= 3 and path[-2] == "enum" and isinstance(path[-3], str):
        return path[-3], True
    return None, False


def _conversation_text(path: Path) -> bool:
    """Whether `path` is a turn's text, in any of the three APIs: a message's content (Chat
    Completions, Messages, a Responses input item's), Anthropic's `system`, Responses' `instructions`
    and a string `input`."""
    if path[0] in ("system", "instructions") or path == ("input",):
        return True
    return len(path) >= 3 and path[0] in ("messages", "input") and path[2] in ("content", "output")


def _user_texts(messages: list[Any], pieces: list[tuple[int, int | None, str]]) -> Iterator[str]:
    """The user's texts, the latest first."""
    return (text for message, _, text in reversed(pieces) if messages[message].get("role") == "user")


def _ask(messages: list[Any], pieces: list[tuple[int, int | None, str]]) -> str:
    """What the complexity model reads as the ask: the latest user text that holds any, else the
    latest text (a conversation of a system prompt alone). Read on every request, so no text is
    copied to tell (as strip() would a long message)."""
    latest = pieces[-1][2] if pieces else ""
    return next((text for text in _user_texts(messages, pieces) if text and not text.isspace()), latest)


def _language(messages: list[Any], pieces: list[tuple[int, int | None, str]], identifier: LanguageIdentifier) -> str:
    """The answer's language: that of the latest user text that shows one, else of all the text."""
    for text in _user_texts(messages, pieces):
        language = detect_language(text, identifier)
        if language != "und":
            return language
    return detect_language("\n".join(text for _, _, text in pieces), identifier)


def _checked(text: str) -> list[Finding]:
    """What the checks of identifiers find in a reading of fields put together: cards, IBANs, SSNs,
    national IDs (`structured.checked_numbers`), without the readings and models of the whole scan:
    the fields' values stand there side by side already, spaced as a number's groups."""
    return drop_overlaps(checked_numbers(text))


def _fielded(text: str) -> tuple[Finding, ...]:
    """A value a record's fields split within one text (a tool call's arguments, a pasted table:
    `classifiers.reassembled.in_fields`), as findings in each field it crosses, in `text`'s offsets:
    each piece is masked, not the one a finding of its own would have named."""
    found: list[Finding] = []
    for joined in in_fields((), text):
        for f in _checked(joined.text):
            if f.type in NUMBER_TYPES:
                found += [
                    Finding(f.type, s, e, f.confidence, f"{f.detector}+joined")
                    for _, s, e in joined.located(f.start, f.end)
                ]
    return tuple(dict.fromkeys(found))
