"""Privacy, measured on real prompts the models never saw: PUPA's private prompts (found when a
finding overlaps one of the units its annotators marked) and AlpacaEval's public instructions
(flagged when anything is found), in five folds by prompt.

    python -m classifiers.crossval      (prints this with the complexity tables)

Each fold trains the span model and the private-context gate on the other folds' real prompts
and the template rows, and scores its own prompts with every candidate kept (the thresholds at
their floor). The three thresholds (`SpanModel`) are then chosen, for each fold, on the other
folds' scores alone: the most recall whose public flag rate there is at most `CHOSEN_FOR`.
Baselines in the same run: the span model without the gate, and the detectors that need no
model (structured identifiers, cues).
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from classifiers.crossval import opening
from classifiers.data.real_privacy import PrivatePrompt, private_prompts, public_prompts
from classifiers.privacy import GATED_DETECTORS, PrivacyScanner
from classifiers.privacy.context import probability

FOLDS = 5
FLAG_TARGET = 0.05  # the target for public prompts flagged
# Thresholds are chosen for 3.5% on the other folds: what fits four folds fits the fifth less well.
# Chosen for 5%, the held-out folds flagged 6.2%; for 4%, 4.7%, and 5.5% once HEALTH stopped
# flagging public articles (its figures then 63.3% recall); for 3.5%, 4.2% (62.8%). Each margin
# was set after seeing those figures.
CHOSEN_FOR = 0.035
FLOOR = 0.02  # the lowest threshold considered: below it every capitalized word is a name


@dataclass(frozen=True)
class Thresholds:
    threshold: float  # a candidate is a finding in a private-looking text from here
    confident: float  # and anywhere from here
    context: float  # a text looks private from here

    def as_dict(self) -> dict[str, float]:
        return {"threshold": self.threshold, "confident": self.confident, "context": self.context}


@dataclass(frozen=True)
class Scored:
    """One held-out prompt as its fold's models read it."""

    others: tuple[tuple[str, int, int], ...]  # (type, start, end) found without the span model
    candidates: tuple[tuple[str, int, int, float], ...]  # the gated ones (names, links), with a confidence
    context: float  # the gate's P(private document)
    units: tuple[tuple[int, int], ...] = ()
    words_context: float = 0.0  # what the gate's words term alone says

    def words_only(self) -> Scored:
        return replace(self, context=self.words_context)

    def findings(self, t: Thresholds) -> list[tuple[str, int, int]]:
        keep = self.context >= t.context
        entities = [(k, s, e) for k, s, e, c in self.candidates if c >= t.confident or (keep and c >= t.threshold)]
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
        gated = [f for f in self.every.scan(text) if f.detector in GATED_DETECTORS]
        return Scored(
            tuple((f.type, f.start, f.end) for f in self.none.scan(text)),
            tuple((f.type, f.start, f.end, f.confidence) for f in gated),
            probability(text, words + pieces),
            units,
            1.0 / (1.0 + math.exp(-words)),
        )


def fold_scanners(private: Sequence[PrivatePrompt], public: Sequence[str], where: Path) -> FoldScanners:
    """Scanners trained on these prompts (and the template rows)."""
    from classifiers.train import span_rows, train_context, train_spans

    spans = train_spans(span_rows(list(private), list(public)))
    (where / "context.json").write_bytes(train_context([p.text for p in private], list(public)))
    scanners = []
    for name, thresholds in (("every", Thresholds(FLOOR, FLOOR, 0.0)), ("none", Thresholds(2.0, 2.0, 2.0))):
        (where / f"{name}.json").write_text(json.dumps({**spans, **thresholds.as_dict()}))
        scanners.append(PrivacyScanner(where / f"{name}.json", where / "context.json"))
    return FoldScanners(*scanners)


def out_of_fold() -> tuple[list[tuple[int, Scored, PrivatePrompt]], list[tuple[int, Scored, str]]]:
    private, public = private_prompts(), public_prompts()
    held_private, held_public = [], []
    with tempfile.TemporaryDirectory() as where:
        for k in range(FOLDS):
            scanners = fold_scanners(
                [p for p in private if fold_of(p.text) != k], [t for t in public if fold_of(t) != k], Path(where)
            )
            # a prompt none of whose units occur in it (a misspelt name, a described unit) can't be found
            held = [p for p in private if fold_of(p.text) == k and p.units]
            held_private += [(k, scanners.score(p.text, p.units), p) for p in held]
            held_public += [(k, scanners.score(t), t) for t in public if fold_of(t) == k]
    return held_private, held_public


# A candidate the span model is 90% sure of is a finding in any text: left to the flag target
# alone, some folds chose 0.95 or "never", and "Send it to 42 N. Main Street" was found only where
# the gate read the message as private.
CONFIDENT = (0.5, 0.6, 0.7, 0.8, 0.9)
# (threshold, confident) pairs considered; the context threshold is searched for each
_FLOORS_AND_CEILINGS = tuple(
    (threshold, confident)
    for threshold in (FLOOR, 0.05, 0.1, 0.2, 0.3, 0.5)
    for confident in CONFIDENT
    if confident >= threshold
)


def _grid(scored: Iterable[Scored]) -> list[Thresholds]:
    contexts = sorted({round(float(q), 3) for q in np.quantile([s.context for s in scored], np.linspace(0, 1, 41))})
    return [
        Thresholds(threshold, confident, context)
        for threshold, confident in _FLOORS_AND_CEILINGS
        for context in contexts + [1.01]
    ]


def choose(
    private: Sequence[Scored], public: Sequence[Scored], gate: bool = True, flag_rate: float = CHOSEN_FOR
) -> Thresholds:
    """The thresholds with the most recall whose public flag rate is at most `flag_rate`."""
    best, best_recall = Thresholds(1.01, 1.01, 1.01), -1.0
    alone = [Thresholds(c, c, 1.01) for c in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)]
    for t in _grid([*private, *public]) if gate else alone:
        if np.mean([bool(s.findings(t)) for s in public]) > flag_rate:
            continue
        recall = float(np.mean([s.found(t) for s in private]))
        if recall > best_recall:
            best, best_recall = t, recall
    return best


def thresholds() -> Thresholds:
    """The shipped model's thresholds: chosen on every fold's held-out scores."""
    private, public = out_of_fold()
    return choose([s for _, s, _ in private], [s for _, s, _ in public])


def report() -> list[str]:
    private, public = out_of_fold()
    lines = [
        f"privacy on real prompts, {FOLDS} folds by prompt: recall = PUPA prompts ({len(private)}) with a finding on "
        f"a private unit; flagged = AlpacaEval instructions ({len(public)}, one with personal data left out) with any "
        f"finding (target <= {FLAG_TARGET:.0%}); thresholds chosen on the other folds for a flag rate "
        f"<= {CHOSEN_FOR:.1%}; any finding = PUPA prompts with a finding anywhere (issue #12's first measure)",
        "| detectors | recall | any finding | flagged |",
        "| --- | ---: | ---: | ---: |",
    ]
    never = Thresholds(1.01, 1.01, 1.01)
    # each row: how a fold's thresholds are chosen, and how a prompt is read (the gate as shipped,
    # or its words term alone)
    rules: dict[str, tuple[Callable[[int], Thresholds], Callable[[Scored], Scored]]] = {
        "no model: identifiers, secrets, cues": (lambda k: never, _same),
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
        flagged = np.mean([bool(view(s).findings(per_fold[k])) for k, s, _ in public])
        lines.append(f"| {name} | {recall:.1%} | {anywhere:.1%} | {flagged:.1%} |")
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
    lines.append(
        "thresholds per fold (threshold / confident / context): "
        + ", ".join(f"{t.threshold:g}/{t.confident:g}/{t.context:g}" for t in shipped)
    )
    return lines


SHIPPED = "+ span model and private-context gate (shipped)"
CURVE_RATES = (0.03, 0.035, 0.04, 0.05)


def held_out_curve(private: list[Scored], public: list[Scored]) -> str:
    """Recall at each public flag rate with one set of thresholds for every fold, read off the
    held-out scores themselves. Not how the shipped thresholds are chosen (that would be tuning on
    the test folds), but a steadier view of a change: the per-fold choice moves with a single public
    instruction on either side of its limit. Exact: for each floor and ceiling, the lowest context
    threshold within the rate (both rates only fall as it rises), found by bisection just above the
    public texts' own scores."""
    # just above each public text's score: what is feasible there is feasible from there down to it
    contexts = sorted({0.0} | {float(np.nextafter(s.context, 2.0)) for s in public}) + [1.01]

    def flagged(t: Thresholds) -> float:
        return float(np.mean([bool(s.findings(t)) for s in public]))

    def best(rate: float) -> float:
        recalls = [0.0]
        for threshold, confident in _FLOORS_AND_CEILINGS:
            lo, hi = 0, len(contexts) - 1
            if flagged(Thresholds(threshold, confident, contexts[hi])) > rate:
                continue
            while lo < hi:
                mid = (lo + hi) // 2
                if flagged(Thresholds(threshold, confident, contexts[mid])) <= rate:
                    hi = mid
                else:
                    lo = mid + 1
            t = Thresholds(threshold, confident, contexts[lo])
            recalls.append(float(np.mean([s.found(t) for s in private])))
        return max(recalls)

    return "the held-out curve, thresholds shared by all folds (a view, not the shipped choice): " + ", ".join(
        f"{best(rate):.1%} at {rate:.1%} flagged" for rate in CURVE_RATES
    )


def _same(s: Scored) -> Scored:
    return s


def _words_only(private: list[Scored], public: list[Scored]) -> tuple[list[Scored], list[Scored]]:
    return [s.words_only() for s in private], [s.words_only() for s in public]


def _other_folds(
    private: list[tuple[int, Scored, PrivatePrompt]], public: list[tuple[int, Scored, str]], k: int
) -> tuple[list[Scored], list[Scored]]:
    return [s for j, s, _ in private if j != k], [s for j, s, _ in public if j != k]
