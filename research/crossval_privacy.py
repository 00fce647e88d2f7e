"""Privacy, measured on real prompts the models never saw: PUPA's private prompts (found when a
finding overlaps one of the units its annotators marked) and AlpacaEval's public instructions
(flagged when anything is found), in five folds by prompt.

    python -m research.crossval_privacy

Each fold trains the span model and the private-context gate on the other folds' real prompts
and the template rows, and scores its own prompts with every candidate kept (the thresholds at
their floor). The five thresholds (`SpanModel`) are then chosen, for each fold, on the other
folds' scores alone: the most recall whose public flag rate there is at most `CHOSEN_FOR`.
Baselines in the same run: the span model without the gate, and the detectors that need no
model (structured identifiers, cues). The exam questions no gate trained on (GSM8K, MMLU) are
public too, and are reported beside AlpacaEval; the thresholds are never chosen on them.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from classifiers.privacy import GATED_DETECTORS, PrivacyScanner
from classifiers.privacy.context import probability
from classifiers.privacy.contextual import ADDRESS, SURE
from classifiers.privacy.places import CONFIDENCE as PLACE_CONFIDENCE
from classifiers.privacy.places import DETECTOR as PLACE_DETECTOR
from classifiers.privacy.places import TYPE as PLACE_TYPE
from gateway.bench.folds import opening
from research.data.real_privacy import PrivatePrompt, exam_questions, private_prompts, public_prompts
from research.privacy_model import Thresholds, span_rows, train_context, train_spans

FOLDS = 5
FLAG_TARGET = 0.05  # the target for public prompts flagged
# Thresholds are chosen for 3% on the other folds: what fits four folds fits the fifth less well.
# Chosen for 5%, the held-out folds flagged 6.2%; for 4%, 4.7%, and 5.5% once HEALTH stopped
# flagging public articles (its figures then 63.3% recall); for 3.5%, 4.2% (62.8%). Once the gate
# no longer read line breaks (2026-12-03), for 4% / 3.5% / 3% / 2.5%: 67.7% / 66.1% / 64.2% /
# 63.0% recall at 6.2% / 5.5% / 5.0% / 4.2% flagged. Each margin was set after seeing those figures.
CHOSEN_FOR = 0.03
FLOOR = 0.02  # the lowest threshold considered: below it every capitalized word is a name


NEVER = Thresholds(1.01, 1.01, 1.01, 1.01, 1.01, 1.01)  # above every confidence and gate score


@dataclass(frozen=True)
class Scored:
    """One held-out prompt as its fold's models read it."""

    others: tuple[tuple[str, int, int], ...]  # (type, start, end) found without the span model
    candidates: tuple[tuple[str, int, int, float], ...]  # the gated ones but places, with a confidence
    context: float  # the gate's P(private document)
    units: tuple[tuple[int, int], ...] = ()
    words_context: float = 0.0  # what the gate's words term alone says
    places: tuple[tuple[int, int], ...] = ()  # (start, end): findings in a private-looking text only

    def words_only(self) -> Scored:
        return replace(self, context=self.words_context)

    def findings(self, t: Thresholds) -> list[tuple[str, int, int]]:
        keep, not_public, carries = self.context >= t.context, self.context >= t.sure_context, bool(self.others)
        entities = [
            (k, s, e)
            for k, s, e, c in self.candidates
            if (not_public and c >= t.confident)
            or (keep and c >= t.threshold)
            or (c >= t.sure and (carries or k == ADDRESS))
        ]
        if self.context >= t.place_context and PLACE_CONFIDENCE >= t.threshold:
            entities += [(PLACE_TYPE, s, e) for s, e in self.places]
        return list(self.others) + entities

    def found(self, t: Thresholds) -> bool:
        return any(s < ue and us < e for _, s, e in self.findings(t) for us, ue in self.units)


def fold_of(text: str) -> int:
    """By the text's opening: near-duplicates stay in one fold."""
    return int(hashlib.sha256(opening(text).encode("utf-8")).hexdigest()[:8], 16) % FOLDS


@dataclass(frozen=True)
class FoldScanners:
    """One fold's models, as two scanners: one keeps every span candidate, one none (so what the
    other detectors find is what they find when the span model's unlikely candidates are not
    there to overlap them, as in the shipped scanner)."""

    every: PrivacyScanner
    none: PrivacyScanner

    def score(self, text: str, units: tuple[tuple[int, int], ...] = ()) -> Scored:
        words, pieces = self.every.context.terms(text)
        # the places apart, as the gate decides on them apart: the ones a more confident name
        # overlaps too, since where the text reads private enough for places only, they are found
        gated = [f for f in self.every.scan(text) if f.detector in GATED_DETECTORS and f.detector != PLACE_DETECTOR]
        return Scored(
            tuple((f.type, f.start, f.end) for f in self.none.scan(text)),
            tuple((f.type, f.start, f.end, f.confidence) for f in gated),
            probability(text, words + pieces),
            units,
            1.0 / (1.0 + math.exp(-words)),
            tuple((f.start, f.end) for f in self.every.places.find(text)),
        )


def fold_scanners(private: Sequence[PrivatePrompt], public: Sequence[str], where: Path) -> FoldScanners:
    """Scanners trained on these prompts (and the template rows)."""
    spans = train_spans(span_rows(list(private), list(public)))
    (where / "context.json").write_bytes(train_context([p.text for p in private], list(public)))
    scanners = []
    for name, thresholds in (("every", Thresholds(FLOOR, FLOOR, 0.0, 0.0)), ("none", Thresholds(*[2.0] * 6))):
        (where / f"{name}.json").write_text(json.dumps({**spans, **thresholds.as_dict()}))
        scanners.append(PrivacyScanner(where / f"{name}.json", where / "context.json"))
    return FoldScanners(*scanners)


def lowered(text: str) -> str:
    """`text` in lower case, each character in place ("İ" lower-cases to two: it stays)."""
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


@dataclass(frozen=True)
class HeldOut:
    """Every prompt as the models of the fold it is in read it (`fold`, `Scored`, the prompt)."""

    private: list[tuple[int, Scored, PrivatePrompt]]
    public: list[tuple[int, Scored, str]]
    # the exam questions no gate trained on, by source (each read by the fold its opening falls in)
    exams: dict[str, list[tuple[int, Scored, str]]]


def out_of_fold(read: Callable[[str], str] = str, exams: bool = False) -> HeldOut:
    """Each prompt scored by the models of the folds it is not in, as `read` gives it (as written,
    or `lowered`: the same prompts typed without capitals, read by models trained as written);
    with `exams`, the exam questions the gate never trained on too."""
    private, public = private_prompts(), public_prompts()
    questions = exam_questions(trained=False) if exams else {}
    held = HeldOut([], [], {source: [] for source in questions})
    with tempfile.TemporaryDirectory() as where:
        for k in range(FOLDS):
            scanners = fold_scanners(
                [p for p in private if fold_of(p.text) != k], [t for t in public if fold_of(t) != k], Path(where)
            )
            # a prompt none of whose units occur in it (a misspelt name, a described unit) can't be found
            mine = [p for p in private if fold_of(p.text) == k and p.units]
            held.private.extend((k, scanners.score(read(p.text), p.units), p) for p in mine)
            held.public.extend((k, scanners.score(read(t)), t) for t in public if fold_of(t) == k)
            for source, texts in questions.items():
                held.exams[source].extend((k, scanners.score(read(t)), t) for t in texts if fold_of(t) == k)
    return held


# The confident candidates are tried up to 0.9: left to the flag target alone, some folds chose 0.95
# or "never", and "Send it to 42 N. Main Street" was found only where the gate read the message as
# private (an address is now sure anywhere from `SURE`).
CONFIDENT = (0.5, 0.6, 0.7, 0.8, 0.9)
# (threshold, confident) pairs considered; the context threshold is searched for each
_FLOORS_AND_CEILINGS = tuple(
    (threshold, confident)
    for threshold in (FLOOR, 0.05, 0.1, 0.2, 0.3, 0.5)
    for confident in CONFIDENT
    if confident >= threshold
)


# The gate scores from which a confident candidate is a finding: 0 is anywhere, as before word
# problems were measured
SURE_CONTEXTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


@dataclass(frozen=True)
class _Reads:
    """What each prompt needs, for each (threshold, confident) pair, to be flagged (or found: on a
    private unit): nothing (a finding without the gate), a text that does not read plainly
    public (a sure name), or one that reads private enough for names, or for places. Every share
    of a grid of two context thresholds follows from them by counting, in O(grid) for each pair
    and sure context."""

    ungated: np.ndarray  # (prompts,) bool: a finding without the gate, or one `SURE` makes
    sure: np.ndarray  # (pairs, prompts) bool: a candidate at or above the pair's confident
    name: np.ndarray  # a candidate at or above the pair's threshold
    place: np.ndarray  # a place, at or above it
    context: np.ndarray  # (prompts,)

    @classmethod
    def of(cls, scored: Sequence[Scored], on_units: bool) -> _Reads:
        def on(s: Scored, start: int, end: int) -> bool:
            return not on_units or any(start < ue and us < end for us, ue in s.units)

        sure, name, place = [], [], []
        for threshold, confident in _FLOORS_AND_CEILINGS:
            sure.append([any(c >= confident and on(s, a, b) for _, a, b, c in s.candidates) for s in scored])
            name.append([any(c >= threshold and on(s, a, b) for _, a, b, c in s.candidates) for s in scored])
            place.append([PLACE_CONFIDENCE >= threshold and any(on(s, a, b) for a, b in s.places) for s in scored])
        ungated = np.array(
            [
                any(on(s, a, b) for _, a, b in s.others)
                or any(c >= SURE and (s.others or k == ADDRESS) and on(s, a, b) for k, a, b, c in s.candidates)
                for s in scored
            ],
            dtype=bool,
        )
        contexts = np.array([s.context for s in scored])
        return cls(ungated, np.array(sure, bool), np.array(name, bool), np.array(place, bool), contexts)

    def shares(self, pair: int, contexts: np.ndarray, place_contexts: np.ndarray, sure_context: float) -> np.ndarray:
        """(contexts, place contexts): the share of prompts flagged (found) at each."""
        rest = ~(self.ungated | (self.sure[pair] & (self.context >= sure_context)))
        name, place = self.name[pair] & rest, self.place[pair] & rest

        def at_least(mask: np.ndarray, limits: np.ndarray) -> np.ndarray:
            reads = np.sort(self.context[mask])
            return len(reads) - np.searchsorted(reads, limits, side="left")

        both = at_least(name & place, np.minimum.outer(contexts, place_contexts).ravel())
        hit = (
            at_least(name & ~place, contexts)[:, None]
            + at_least(place & ~name, place_contexts)[None, :]
            + both.reshape(len(contexts), len(place_contexts))
            + (~rest).sum()
        )
        shares: np.ndarray = hit / max(1, len(self.context))
        return shares


def _best(private: _Reads, public: _Reads, contexts: np.ndarray, flag_rate: float) -> tuple[float, Thresholds | None]:
    """The most recall within `flag_rate` over the pairs, the sure contexts and the grid
    `contexts` x `contexts`; of equal recalls, the lowest pair, then the lowest thresholds."""
    best: tuple[float, Thresholds | None] = (-1.0, None)
    for pair, (threshold, confident) in enumerate(_FLOORS_AND_CEILINGS):
        for sure in SURE_CONTEXTS:
            within = public.shares(pair, contexts, contexts, sure) <= flag_rate
            recall = np.where(within, private.shares(pair, contexts, contexts, sure), -1.0)
            i, j = np.unravel_index(int(np.argmax(recall)), recall.shape)
            if recall[i, j] > best[0]:
                chosen = Thresholds(threshold, confident, float(contexts[i]), float(contexts[j]), sure)
                best = (float(recall[i, j]), chosen)
    return best


def choose(
    private: Sequence[Scored], public: Sequence[Scored], gate: bool = True, flag_rate: float = CHOSEN_FOR
) -> Thresholds:
    """The thresholds with the most recall whose public flag rate is at most `flag_rate`, the two
    contexts each one of 41 quantiles of the gate's scores (or never), the sure context one of
    `SURE_CONTEXTS`."""
    if not gate:
        best, best_recall = NEVER, -1.0
        for t in (Thresholds(c, c, 1.01, 1.01) for c in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)):
            if np.mean([bool(s.findings(t)) for s in public]) > flag_rate:
                continue
            recall = float(np.mean([s.found(t) for s in private]))
            if recall > best_recall:
                best, best_recall = t, recall
        return best
    reads = [s.context for s in (*private, *public)]
    contexts = np.array(sorted({round(float(q), 3) for q in np.quantile(reads, np.linspace(0, 1, 41))}) + [1.01])
    return _best(_Reads.of(private, True), _Reads.of(public, False), contexts, flag_rate)[1] or NEVER


def thresholds() -> Thresholds:
    """The shipped model's thresholds: chosen on every fold's held-out scores."""
    held = out_of_fold()
    return choose([s for _, s, _ in held.private], [s for _, s, _ in held.public])


def report() -> list[str]:
    held = out_of_fold(exams=True)
    private, public, exams = held.private, held.public, held.exams
    lines = [
        f"privacy on real prompts, {FOLDS} folds by prompt: recall = PUPA prompts ({len(private)}) with a finding on "
        f"a private unit; flagged = AlpacaEval instructions ({len(public)}, one with personal data left out) with any "
        f"finding (target <= {FLAG_TARGET:.0%}); thresholds chosen on the other folds for a flag rate "
        f"<= {CHOSEN_FOR:.1%}; any finding = PUPA prompts with a finding anywhere (issue #12's first measure); "
        f"GSM8K and MMLU = the exam questions no gate trained on ({len(exams['gsm8k'])} and {len(exams['mmlu'])}, "
        "public questions that name people and places, never used to choose), with any finding",
        "| detectors | recall | any finding | flagged | GSM8K flagged | MMLU flagged |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    # each row: how a fold's thresholds are chosen, and how a prompt is read (the gate as shipped,
    # or its words term alone)
    rules: dict[str, tuple[Callable[[int], Thresholds], Callable[[Scored], Scored]]] = {
        "no model: identifiers, secrets, cues": (lambda k: NEVER, _same),
        "+ span model alone": (lambda k: choose(*_other_folds(private, public, k), gate=False), _same),
        "+ span model and the gate's words term alone": (
            lambda k: choose(*_words_only(*_other_folds(private, public, k))),
            Scored.words_only,
        ),
        SHIPPED: (lambda k: choose(*_other_folds(private, public, k)), _same),
    }
    chosen: dict[str, list[Thresholds]] = {name: [rule(k) for k in range(FOLDS)] for name, (rule, _) in rules.items()}
    for name, per_fold in chosen.items():
        view = rules[name][1]
        recall = np.mean([view(s).found(per_fold[k]) for k, s, _ in private])
        anywhere = np.mean([bool(view(s).findings(per_fold[k])) for k, s, _ in private])
        flagged = [np.mean([bool(view(s).findings(per_fold[k])) for k, s, _ in x]) for x in (public, *exams.values())]
        lines.append(f"| {name} | {recall:.1%} | {anywhere:.1%} | " + " | ".join(f"{f:.1%}" for f in flagged) + " |")
    shipped = chosen[SHIPPED]
    lines += ["", "| PUPA category | prompts | found |", "| --- | ---: | ---: |"]
    by_category: dict[str, list[bool]] = {}
    for k, s, p in private:
        by_category.setdefault(p.category, []).append(s.found(shipped[k]))
    lines += [f"| {c} | {len(h)} | {np.mean(h):.1%} |" for c, h in sorted(by_category.items())]
    types: dict[str, int] = {}
    for k, s, _ in public:
        for kind in {kind for kind, _, _ in s.findings(shipped[k])}:
            types[kind] = types.get(kind, 0) + 1
    named = [(k, s) for k, s, _ in public if any(c >= 0.5 for *_, c in s.candidates)]
    named_flagged = np.mean([bool(s.findings(shipped[k])) for k, s in named])
    lines.append(
        "\npublic instructions flagged, by type: "
        + (", ".join(f"{t} {n}" for t, n in sorted(types.items(), key=lambda kv: -kv[1])) or "none")
        + f"; of the {len(named)} that name someone or something (a candidate the span model calls a name at 0.5:"
        f" 'Larry Page', 'Okinawa Japan', 'Duck Typing'), {named_flagged:.1%} flagged"
    )
    lines.append(held_out_curve([s for _, s, _ in private], [s for _, s, _ in public]))
    lines.append(_lower_case(shipped))
    lines.append(
        "thresholds per fold (threshold / confident / context / place context / sure context): "
        + ", ".join(
            f"{t.threshold:g}/{t.confident:g}/{t.context:g}/{t.place_context:g}/{t.sure_context:g}" for t in shipped
        )
    )
    return lines


SHIPPED = "+ span model and private-context gate (shipped)"


def _lower_case(shipped: list[Thresholds]) -> str:
    """The same prompts typed without capitals, each fold's thresholds as chosen above."""
    held = out_of_fold(lowered)
    private, public = held.private, held.public
    recall = np.mean([s.found(shipped[k]) for k, s, _ in private])
    flagged = np.mean([bool(s.findings(shipped[k])) for k, s, _ in public])
    return f"the same prompts in lower case, out of fold: recall {recall:.1%}, public flagged {flagged:.1%}"


CURVE_RATES = (0.03, 0.035, 0.04, 0.05)


def held_out_curve(private: list[Scored], public: list[Scored]) -> str:
    """Recall at each public flag rate with one set of thresholds for every fold, read off the
    held-out scores themselves. Not how the shipped thresholds are chosen (that would be tuning on
    the test folds), but a steadier view of a change: the per-fold choice moves with a single public
    instruction on either side of its limit. Exact: both rates only fall as either context
    threshold rises, so the best lies just above the public texts' own scores (or at 0), and
    every pair of those is counted."""
    contexts = np.array(sorted({0.0} | {float(np.nextafter(s.context, 2.0)) for s in public}) + [1.01])
    found, flagged = _Reads.of(private, True), _Reads.of(public, False)
    return "the held-out curve, thresholds shared by all folds (a view, not the shipped choice): " + ", ".join(
        f"{max(0.0, _best(found, flagged, contexts, rate)[0]):.1%} at {rate:.1%} flagged" for rate in CURVE_RATES
    )


def _same(s: Scored) -> Scored:
    return s


def _words_only(private: list[Scored], public: list[Scored]) -> tuple[list[Scored], list[Scored]]:
    return [s.words_only() for s in private], [s.words_only() for s in public]


def _other_folds(
    private: list[tuple[int, Scored, PrivatePrompt]], public: list[tuple[int, Scored, str]], k: int
) -> tuple[list[Scored], list[Scored]]:
    return [s for j, s, _ in private if j != k], [s for j, s, _ in public if j != k]


def main() -> None:
    """`python -m research.crossval_privacy`: the privacy tables, out of fold."""
    print("\n".join(report()))


if __name__ == "__main__":
    main()
