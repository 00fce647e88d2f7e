"""Private data in prompts: validated identifiers and secrets, and contextual personal data."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from classifiers import _scan
from classifiers.identifier import LanguageIdentifier
from classifiers.language import detect_language
from classifiers.privacy.accounts import CUES as ACCOUNTS
from classifiers.privacy.accounts import accounts
from classifiers.privacy.addresses import CUES as WRITTEN_ADDRESSES
from classifiers.privacy.addresses import written_addresses
from classifiers.privacy.canonical import AT_CUES, SEPARATED_WINDOWS
from classifiers.privacy.capitals import CAPITAL_WINDOWS, capitals
from classifiers.privacy.capitals import DETECTOR as CAPITALS_DETECTOR
from classifiers.privacy.checked import CUES as CHECKED
from classifiers.privacy.checked import checked
from classifiers.privacy.context import MODEL_PATH as CONTEXT_PATH
from classifiers.privacy.context import PrivateContext
from classifiers.privacy.contextual import ADDRESS, CUES, MODEL_PATH, SpanModel, cued
from classifiers.privacy.contextual import DETECTOR as SPAN_DETECTOR
from classifiers.privacy.disclosure import DisclosureModel
from classifiers.privacy.fields import CUES as FIELDS
from classifiers.privacy.fields import fields
from classifiers.privacy.findings import (
    CONTEXTUAL_TYPES,
    ENTITY_TYPES,
    STRUCTURED_TYPES,
    Finding,
    Taken,
    drop_overlaps,
    without_placeholders,
)
from classifiers.privacy.identifiers import CUES as IDENTIFIERS
from classifiers.privacy.identifiers import identifiers
from classifiers.privacy.introduced import CUES as INTRODUCTIONS
from classifiers.privacy.introduced import introduced
from classifiers.privacy.languages import UNDETERMINED, UNREAD_WORDS, UnreadLanguages
from classifiers.privacy.lexicon import LANGUAGES as READ_LANGUAGES
from classifiers.privacy.links import CUES as LINKS
from classifiers.privacy.links import DETECTOR as LINK_DETECTOR
from classifiers.privacy.links import find_links
from classifiers.privacy.named import CUES as NAMED
from classifiers.privacy.named import named
from classifiers.privacy.numbering import international_phones
from classifiers.privacy.ordinary import ENGLISH, NAMES_FILE, OrdinaryWords
from classifiers.privacy.ordinary import MODEL_DIR as ORDINARY_DIR
from classifiers.privacy.places import DETECTOR as PLACE_DETECTOR
from classifiers.privacy.places import MODEL_PATH as PLACES_PATH
from classifiers.privacy.places import Places
from classifiers.privacy.readings import (
    Windows,
    composed,
    reread,
    spaced,
    unescaped,
    windows_of,
)
from classifiers.privacy.scripts import UNSCANNED, unread
from classifiers.privacy.secrets import ANCHORS, load_rule_set
from classifiers.privacy.structured import WINDOW_SPECS, find_structured
from classifiers.privacy.told import CUES as TOLD
from classifiers.privacy.told import told
from classifiers.privacy.uncased import DETECTOR as UNCASED_DETECTOR
from classifiers.privacy.uncased import MODEL_PATH as NAMES_PATH
from classifiers.privacy.uncased import UncasedNames, caseless
from classifiers.privacy.wallets import keys_and_addresses, seed_phrases
from classifiers.privacy.worded import DIGIT_WORD_CUES

# The detectors whose findings the private-context gate decides on (`PrivacyScanner._decided`).
GATED_DETECTORS = frozenset((SPAN_DETECTOR, LINK_DETECTOR, CAPITALS_DETECTOR, PLACE_DETECTOR, UNCASED_DETECTOR))


class PrivacyScanner:
    """Scans texts for private data (the Scorer keeps what it found in recent texts)."""

    def __init__(
        self,
        model_path: Path = MODEL_PATH,
        context_path: Path = CONTEXT_PATH,
        places_path: Path = PLACES_PATH,
        names_path: Path = NAMES_PATH,
        ordinary_dir: Path = ORDINARY_DIR,
        disclosure: DisclosureModel | None = None,
    ) -> None:
        self.spans = SpanModel.load(model_path)
        self.context = PrivateContext(context_path)
        self.places = Places(places_path)
        self.uncased = UncasedNames(names_path)
        self.ordinary = OrdinaryWords(ordinary_dir)
        known = [*self.ordinary.read_list(f"{ENGLISH}.txt"), *self.ordinary.read_list(NAMES_FILE)]
        self.languages = UnreadLanguages(self.ordinary.named, known, LanguageIdentifier())
        self.disclosure = disclosure or DisclosureModel.load()
        self.anchors = (
            ANCHORS + CUES + INTRODUCTIONS + NAMED + FIELDS + TOLD + IDENTIFIERS + LINKS + AT_CUES + DIGIT_WORD_CUES
            + WRITTEN_ADDRESSES + CHECKED + ACCOUNTS
        )  # fmt: skip
        load_rule_set()  # the secrets' rule set loads beside the rest, not on the first request
        self._native = _scan.Scanner(
            self.anchors.native, self.spans.native, (*WINDOW_SPECS, CAPITAL_WINDOWS, SEPARATED_WINDOWS)
        )

    def scan(self, text: str) -> tuple[Finding, ...]:
        """Every finding in `text`, as written and as it reads folded, spelled out or decoded
        (`readings.reread`); overlaps resolved in favour of the more confident one. A text with
        decomposed accents is read composed (`readings.composed`), and one with JSON's escapes
        also unescaped (`readings.unescaped`), their findings located in it: what the unescaped
        reading finds is kept, and what the text as written finds elsewhere but for names, links
        and places (read as written, an escape splits a word: "Jos\\u00e9 Garc\\u00eda" was "Jos"
        and "Garc"; a Windows path's user, "\\nadia", is a folder's name, not a line break). A
        placeholder a masking rule wrote ("[EMAIL_1]") reads as spaces
        (`findings.without_placeholders`): it is never a finding, nor part of one."""
        text = without_placeholders(text)
        # nearly every text is ASCII with no backslash: no other reading to make; beside what was
        # found, what no detector reads: a value in those words is both (a link in Cyrillic)
        if text.isascii() and "\\" not in text:
            found = self._read(text)
            unread_words = self.languages.find(text)
            kept = drop_overlaps(found) if len(found) > 1 else found
        else:
            unread_words, kept = self._unread(text), drop_overlaps(self._readings(text))
        return self._disclosed(text, kept, unread_words)

    def _disclosed(self, text: str, kept: list[Finding], unread_words: list[Finding]) -> tuple[Finding, ...]:
        """`disclosed`, the reader read only where it decides something: most texts hold neither
        words no detector reads nor names alone, and most that hold names alone are English."""
        named_at = self._named_at(text) if kept and all(f.detector in GATED_DETECTORS for f in kept) else 0.0
        if not unread_words and named_at <= 0.0:
            return tuple(kept)
        return disclosed(kept, unread_words, self._probability(text), self.disclosure.private_at, named_at)

    def _probability(self, text: str) -> float:
        """How private the reader reads `text`: its most private window's probability, wherever
        the words it decides on are (a long text reads as private as its most private part). A
        text with JSON's escapes or decomposed accents is read as its readings read it ("\\u0645"
        is a letter): the same probability whatever its spelling."""
        escaped = unescaped(text)
        read = escaped.text if escaped is not None else text
        reading = composed(read)
        return self.disclosure.probability(reading.text if reading is not None else read)

    def _named_at(self, text: str) -> float:
        """From which probability the reader keeps names and places no form found.

        In the languages the cues were written for (`lexicon.LANGUAGES`: English, French, German,
        Spanish, Italian, Portuguese, Dutch), from any: the span model, the cues and the
        private-context gate already decided on them there ("Ich heiße Anna Schmidt"); and so in
        a text in no language told (code: "C:\\Users\\Abu Bakr Siddique"). In any other
        language, from the reader's `named_at`: the gate, trained on English prompts, reads most
        text in other languages as private ("10 Kasım 1938", in a Turkish question about Atatürk,
        was a street address)."""
        language = detect_language(text, self.languages.identifier)
        return 0.0 if language in READ_LANGUAGES or language == UNDETERMINED else self.disclosure.named_at

    def unread_words(self, text: str) -> list[Finding]:
        """What of `text` no detector reads: words of a script (`scripts`) or a language
        (`languages`) none was made for, which a masking rule refuses to send."""
        return [f for f in self.scan(text) if f.type == UNSCANNED and f.detector.startswith(UNREAD_WORDS)]

    def _unread(self, text: str) -> list[Finding]:
        """The words of a script or a language no detector reads (`scripts.unread`,
        `languages`), in the text composed and unescaped, as the other findings are read: the
        same words whatever their spelling."""
        escaped = unescaped(text)
        if escaped is None:
            return self._composed(text, self._unread_words)
        return [escaped.located(f, len(text)) for f in self._composed(escaped.text, self._unread_words)]

    def _unread_words(self, text: str) -> list[Finding]:
        return unread(text) + self.languages.find(spaced(text))  # (a stretch is cut at a space)

    def _readings(self, text: str) -> list[Finding]:
        found = self._composed(text)
        escaped = unescaped(text)
        if escaped is None:
            return found
        first = [escaped.located(f, len(text)) for f in self._composed(escaped.text)]
        taken = Taken(first)
        return first + [f for f in found if f.detector not in GATED_DETECTORS and not taken.overlaps(f.start, f.end)]

    def _composed(self, text: str, read: Callable[[str], list[Finding]] | None = None) -> list[Finding]:
        """What `read` (every detector, by default) finds in `text` read composed, located in it."""
        read = read or self._read
        reading = composed(text)
        if reading is None:
            return read(text)
        return [reading.located(f, len(text)) for f in read(reading.text)]

    def _read(self, text: str) -> list[Finding]:
        found, number_windows = self._detect(text)
        return found + reread(text, lambda t: self._detect(t)[0], number_windows, lambda t: list(self.scan(t)))

    def _detect(self, text: str) -> tuple[list[Finding], Windows]:
        # Other spaces read as plain ones, in place (`readings.spaced`); the folded reading still
        # sees the original, zero-width spaces and all (`reread` is given `scan`'s own text).
        text = spaced(text)
        # One call into C: every pattern's leading literals, the windows the number patterns and
        # the words in capitals can be in, and the span model's labels. Python then looks only where those point.
        hits, windows, labeled = self._native.scan(text)
        hits = self.anchors.scripted(text, hits)
        numbers, ibans, dotted, colons, encoded, capital_windows, separated = windows
        rereading = windows_of(text, hits, separated, encoded)
        found = (
            find_structured(text, hits, (numbers, ibans, dotted, colons, encoded))
            if hits or numbers or ibans or dotted or colons or encoded or "@" in text
            else []
        )
        if numbers:
            found += international_phones(text, numbers, found)
        found += seed_phrases(text)
        if encoded:
            found += keys_and_addresses(text, encoded)
        gated = self.ordinary.names(text, self.spans.findings(labeled), SPAN_DETECTOR) if labeled else []
        if hits:
            found += cued(text, hits) + introduced(text, hits, self.spans.common) + fields(text, hits)
            found += told(text, hits) + identifiers(text, hits) + named(text, hits) + written_addresses(text, hits)
            found += list(checked(text, hits))
            found += accounts(text, hits)
            gated += find_links(text, hits)
        if capital_windows:
            gated += capitals(text, self.spans.common, self.spans.acronyms, capital_windows)
        if caseless(text):
            gated += self.uncased.find(text)
        return found + self._decided(text, gated, carries=bool(found)), rereading

    def _decided(self, text: str, gated: list[Finding], carries: bool) -> list[Finding]:
        """The names the span model labeled, the links, the words in capitals and the places
        that are findings (`SpanModel`). A place is one only in a text the gate reads as private
        (none is sure anywhere), from its own threshold: public questions name places in texts
        that read far less private than those that name people ("the capital of France").
        A place the span model also labeled is what the more confident of the two says
        (`drop_overlaps`): "Jackson" may be a person, "Fujian" at 0.17 is not. A name of two
        words or more that is a place's ("San Francisco") is that place, whatever the span model
        says. A name the span model is sure of is one in a text that `carries` personal data the
        other detectors found (a birth date, an email address), however public the text reads:
        "Patient Leonie, born 1989-06-24" is a note about someone."""
        places = self.places.find(text)  # in C: cheaper than the gate, which runs only when it decides something
        places = self.ordinary.places(text, places) if places else places
        if places:
            where = {(p.start, p.end) for p in places}
            gated = [f for f in gated if not _one_place(text, f, where)]
        # with no places, and every candidate sure without the gate's reading, the gate is not run
        if not places and all(self._sure(f, not self.spans.sure_context, carries) for f in gated):
            return gated
        private = self.context.score(text)
        if private >= self.spans.context:
            names = gated
        else:
            not_public = private >= self.spans.sure_context
            names = [f for f in gated if self._sure(f, not_public, carries)]
        return names + places if private >= self.spans.place_context else names

    def _sure(self, found: Finding, not_public: bool, carries: bool) -> bool:
        """Whether the span model is sure enough of `found` without the gate reading the text as
        private: from `confident` where the text does not read plainly public (`not_public`), from
        `sure` where it `carries` other personal data, and then anywhere for an address."""
        if found.confidence >= self.spans.sure and (carries or found.type == ADDRESS):
            return True
        return not_public and found.confidence >= self.spans.confident


def disclosed(
    kept: list[Finding],
    unread_words: list[Finding],
    probability: float,
    private_at: float,
    named_at: float,
) -> tuple[Finding, ...]:
    """What the disclosure reader (`disclosure`) decides of what forms cannot, from `probability`:
    how private it reads the text.

    The words no detector reads are findings only in a text it reads as private, or cannot tell
    from private (`private_at`): a Polish recipe is sent as written, a Polish diagnosis fails
    closed as before, each such finding keeping its detector (`language:pl`, `script:thai`).

    A name, a place or a word in capitals that only the span model, the word lists or the
    private-context gate found (`GATED_DETECTORS`) is a finding only where the reader does not
    read the text as plainly public (`named_at`, which the caller gives:
    `PrivacyScanner._named_at`), or where a form found something else in it: "Jacinda Ardern" in
    a question about New Zealand's politics is no one's private data, the same name beside a
    passport number is."""
    if named_at > 0.0 and probability < named_at and all(f.detector in GATED_DETECTORS for f in kept):
        kept = []  # names and places alone, in a text that reads plainly public
    if probability < private_at:
        return tuple(kept)
    return (*kept, *(f._replace(confidence=probability) for f in unread_words))


def _one_place(text: str, found: Finding, places: set[tuple[int, int]]) -> bool:
    """Whether the span model's `found` is exactly one place's name of two words or more: "San
    Francisco", "New South Wales". Not two places' names: "David Easton" (a city in Panama and one
    in Pennsylvania) is a person. `places`: where each place found lies (a set: a text of a
    thousand names and a thousand places once compared every pair)."""
    if found.detector != SPAN_DETECTOR or " " not in text[found.start : found.end]:
        return False
    return (found.start, found.end) in places


__all__ = ["CONTEXTUAL_TYPES", "ENTITY_TYPES", "GATED_DETECTORS", "STRUCTURED_TYPES", "Finding", "PrivacyScanner"]
