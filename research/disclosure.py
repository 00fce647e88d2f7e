"""The disclosure reader (`classifiers.privacy.disclosure`): which configuration, at which
threshold, and how the scanner decides with it.

Every source's fold 0 is locked (`research.disclosure_data`); configurations are compared on folds
1-4, each fold scored by a model fitted on the other three (`--develop`, the default), and the one
shipped is fitted on folds 1-4 and measured once on the locked folds (`--locked`), beside the
baselines run in the same process: the scanner as it was (forms only: every stretch in a language
its cues do not read fails closed), prompt length (the longest texts flagged, as many as the
reader flags), and random (as many, at random), with a 90% bootstrap interval for each share.

What is measured is what a user meets: for a private text, whether a local-only app keeps it local
(any finding: the reader's or a detector's); for a public one, whether it is sent as written (no
finding at all).

    python -m research.disclosure              # development folds: every configuration tried
    python -m research.disclosure --locked     # the locked folds, once per change
    python -m research.disclosure --write      # fits folds 1-4 -> classifiers/models/disclosure.npz
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from classifiers.language import detect_language
from classifiers.privacy import PrivacyScanner, disclosed
from classifiers.privacy.disclosure import MODEL_PATH, DisclosureModel, features
from classifiers.privacy.findings import Finding
from classifiers.privacy.languages import UNDETERMINED, UNREAD_WORDS
from classifiers.privacy.lexicon import LANGUAGES as READ_LANGUAGES
from classifiers.privacy.scripts import UNSCANNED
from research.disclosure_data import LOCKED, Labelled, texts


@dataclass(frozen=True)
class Configuration:
    orders: tuple[int, ...]
    bits: int
    c: float  # the inverse of the regularization's strength

    def __str__(self) -> str:
        return f"n={','.join(map(str, self.orders))} 2^{self.bits} C={self.c:g}"


@dataclass(frozen=True)
class Thresholds:
    private_at: float
    named_at: float


# Every configuration tried, in the order tried (the first is the starting point).
CONFIGURATIONS = (
    Configuration((1, 2, 3, 4), 18, 4.0),
    Configuration((2, 3, 4, 5), 18, 4.0),
    Configuration((1, 2, 3, 4), 18, 16.0),
    Configuration((1, 2, 3, 4, 5), 19, 8.0),
)
# Also tried, on the third: word 1-2-grams hashed beside the characters (no gain: every share within
# a point); and four decision rules (the reader deciding names everywhere, everywhere but where the
# private-context gate reads the text private, everywhere but in English, then everywhere but in the
# seven languages the cues read and text in no language told: the last shipped), each over the
# pairs of thresholds of `GRID`.
SHIPPED = CONFIGURATIONS[2]
TRYING = (SHIPPED,)  # what `--develop` runs: the others' figures are in docs/classifiers.md
# by `--develop`: the most public text of the marked sources sent, no private source losing more
# than `GIVEN_UP` of what the scanner as it was kept
CHOSEN = Thresholds(0.25, 0.6)


def matrix(rows: Sequence[Labelled], config: Configuration) -> sparse.csr_matrix:
    data, indices, indptr = [], [], [0]
    for r in rows:
        buckets, values = features(r.text, config.orders, config.bits)
        indices.append(buckets)
        data.append(values)
        indptr.append(indptr[-1] + len(buckets))
    return sparse.csr_matrix(
        (np.concatenate(data), np.concatenate(indices), np.array(indptr)), shape=(len(rows), 1 << config.bits)
    )


def weights_of(rows: Sequence[Labelled]) -> np.ndarray:
    """Each (source, label) weighs the same in all: the exam questions, many and easy, count as
    much as one language's private prompts."""
    sizes: dict[tuple[str, bool], int] = {}
    for r in rows:
        sizes[(r.source, r.private)] = sizes.get((r.source, r.private), 0) + 1
    mean = len(rows) / len(sizes)
    return np.array([mean / sizes[(r.source, r.private)] for r in rows])


def fit(rows: Sequence[Labelled], config: Configuration, at: Thresholds | None = None) -> DisclosureModel:
    x = matrix(rows, config)
    y = np.array([r.private for r in rows])
    model = LogisticRegression(C=config.c, max_iter=2000, tol=1e-6)
    model.fit(x, y, sample_weight=weights_of(rows))
    at = at or Thresholds(0.5, 0.5)
    weights, bias = model.coef_[0].copy(), float(model.intercept_[0])
    return DisclosureModel(weights, bias, config.orders, config.bits, at.private_at, at.named_at)


MARKED = ("multilingual", "made")


def interval(hits: Sequence[bool], rounds: int = 1000) -> tuple[float, float, float]:
    """The share of `hits` and its 90% bootstrap interval."""
    values = np.array(hits, dtype=float)
    if not len(values):
        return (float("nan"),) * 3
    rng = np.random.default_rng(0)
    means = rng.choice(values, size=(rounds, len(values))).mean(axis=1)
    return float(values.mean()), float(np.quantile(means, 0.05)), float(np.quantile(means, 0.95))


def shares(rows: Sequence[Labelled], flagged: Callable[[int], bool]) -> list[str]:
    """Per source: private texts kept (flagged), public texts sent as written (not flagged)."""
    lines = []
    for source in sorted({r.source for r in rows}):
        for private in (True, False):
            mine = [i for i, r in enumerate(rows) if r.source == source and r.private == private]
            if not mine:
                continue
            share, lo, hi = interval([flagged(i) == private for i in mine])
            what = "private kept" if private else "public sent"
            lines.append(f"  {source:12} {what:13} {share:6.1%} [{lo:.1%}, {hi:.1%}]  n={len(mine)}")
    return lines


def always_private(bits: int) -> DisclosureModel:
    """A reader that reads every text as private: the scanner as it was, every word in a language
    or a script its detectors do not read failing closed."""
    return DisclosureModel(np.zeros(1 << bits), 50.0, (1,), bits, 0.5, 0.0)


@dataclass(frozen=True)
class Met:
    """What a user meets for one text: whether anything was found (a local-only app keeps it on
    the edge; a public text is not sent as written), and whether a masking app sends none of its
    marked values (each is covered by a finding, or something unread makes it refuse)."""

    found: bool
    values_safe: bool


def met(scanner: PrivacyScanner, row: Labelled) -> Met:
    return met_by(row, scanner.scan(row.text))


def met_by(row: Labelled, found: Sequence[Finding]) -> Met:
    """What a user meets of `row` where the scanner found `found` in it."""
    refused = any(f.type == UNSCANNED for f in found)
    covered = all(any(f.start < s.end and s.start < f.end for f in found) for s in row.spans)
    return Met(bool(found), refused or covered)


def system_lines(rows: Sequence[Labelled], seen: Sequence[Met]) -> list[str]:
    lines = shares(rows, lambda i: seen[i].found)
    for source in MARKED:
        mine = [i for i, r in enumerate(rows) if r.source == source and r.private]
        if mine:
            share, lo, hi = interval([seen[i].values_safe for i in mine])
            lines.append(f"  {source:12} {'no value sent':13} {share:6.1%} [{lo:.1%}, {hi:.1%}]  (masking app)")
    return lines


@dataclass(frozen=True)
class Formed:
    """What the detectors find in a text before the reader decides: the words no detector reads,
    and the rest; and whether the text is in a language the cues read (where the detectors decide
    on names, `PrivacyScanner._named_at`)."""

    kept: list[Finding]
    unread_words: list[Finding]
    read: bool

    @classmethod
    def of(cls, scanner: PrivacyScanner, text: str) -> Formed:
        found = scanner.scan(text)
        unread = [f for f in found if f.type == UNSCANNED and f.detector.startswith(UNREAD_WORDS)]
        language = detect_language(text, scanner.languages.identifier)
        read = language in READ_LANGUAGES or language == UNDETERMINED
        return cls([f for f in found if f not in unread], unread, read)


def decided(row: Labelled, formed: Formed, read: float, at: Thresholds) -> Met:
    named_at = 0.0 if formed.read else at.named_at
    return met_by(row, disclosed(formed.kept, formed.unread_words, read, at.private_at, named_at))


GRID = tuple(
    Thresholds(p, n) for p in (0.15, 0.2, 0.25, 0.3, 0.45, 0.6) for n in (0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6)
)
# A pair is chosen only if it keeps, of every private source, at most this much less than the
# scanner as it was: what fails closed today stays so unless the reader is sure.
GIVEN_UP = 0.02


def kept_by_source(rows: Sequence[Labelled], seen: Sequence[Met]) -> dict[str, float]:
    """The share of each private source's texts kept."""
    sources = sorted({r.source for r in rows if r.private})
    return {
        s: float(np.mean([seen[i].found for i, r in enumerate(rows) if r.private and r.source == s])) for s in sources
    }


def public_sent(rows: Sequence[Labelled], seen: Sequence[Met]) -> float:
    return float(np.mean([not seen[i].found for i, r in enumerate(rows) if not r.private and r.source in MARKED]))


def develop() -> None:
    rows = [r for r in texts() if r.fold != LOCKED]
    forms = PrivacyScanner(disclosure=always_private(SHIPPED.bits))
    formed = [Formed.of(forms, r.text) for r in rows]
    print("the scanner as it was (every unread word fails closed)")
    as_was = [met(forms, r) for r in rows]
    for line in system_lines(rows, as_was):
        print(line)
    floor = {s: kept - GIVEN_UP for s, kept in kept_by_source(rows, as_was).items()}
    for config in TRYING:
        reads: dict[int, float] = {}
        for k in sorted({r.fold for r in rows}):
            model = fit([r for r in rows if r.fold != k], config)
            reads.update({i: model.probability(r.text) for i, r in enumerate(rows) if r.fold == k})
        print(f"{config}: each pair of thresholds (private_at, named_at): private kept by source, public sent")
        best: tuple[float, Thresholds] | None = None
        for at in GRID:
            seen = [decided(r, formed[i], reads[i], at) for i, r in enumerate(rows)]
            kept, sent = kept_by_source(rows, seen), public_sent(rows, seen)
            shown = " ".join(f"{s} {k:6.1%}" for s, k in kept.items())
            print(f"  {at.private_at:.2f} {at.named_at:.2f}  {shown}  public {sent:6.1%}")
            if all(k >= floor[s] for s, k in kept.items()) and (best is None or sent > best[0]):
                best = (sent, at)
        if best is not None:
            at = best[1]
            print(f" chosen {at}")
            for line in system_lines(rows, [decided(r, formed[i], reads[i], at) for i, r in enumerate(rows)]):
                print(line)


def write() -> DisclosureModel:
    rows = [r for r in texts() if r.fold != LOCKED]
    model = fit(rows, SHIPPED, CHOSEN)
    model.save(MODEL_PATH)
    print(f"wrote {MODEL_PATH} ({SHIPPED}, {CHOSEN})")
    return model


def locked() -> None:
    rows = [r for r in texts() if r.fold == LOCKED]
    shipped = PrivacyScanner()
    forms = PrivacyScanner(disclosure=always_private(shipped.disclosure.bits))
    seen = [met(shipped, r) for r in rows]
    flagged = sum(s.found for s in seen)
    by_length = set(sorted(range(len(rows)), key=lambda i: -len(rows[i].text))[:flagged])
    by_chance = set(random.Random(0).sample(range(len(rows)), flagged))
    reader = [shipped.disclosure.probability(r.text) >= shipped.disclosure.private_at for r in rows]
    print(f"locked folds, {len(rows)} texts; configurations tried: {len(CONFIGURATIONS)} readers x {len(GRID)} pairs")
    print(f"the scanner with the reader ({SHIPPED}, {CHOSEN})")
    for line in system_lines(rows, seen):
        print(line)
    print("the scanner as it was (every unread word fails closed)")
    for line in system_lines(rows, [met(forms, r) for r in rows]):
        print(line)
    for name, flags in (
        ("the reader alone, from private_at", lambda i: reader[i]),
        (f"prompt length (the longest {flagged} flagged)", lambda i: i in by_length),
        (f"random ({flagged} flagged)", lambda i: i in by_chance),
    ):
        print(name)
        for line in shares(rows, flags):
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locked", action="store_true", help="measure the shipped model on the locked folds")
    parser.add_argument("--write", action="store_true", help="fit the shipped configuration on folds 1-4")
    args = parser.parse_args()
    if args.write:
        write()
    elif args.locked:
        locked()
    else:
        develop()


if __name__ == "__main__":
    main()
