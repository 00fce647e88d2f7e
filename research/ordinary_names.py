"""The span model's names in texts written in Latin letters besides English, with and without the
ordinary words (`classifiers.privacy.ordinary`): how many of the names in private sentences are
found, and how many ordinary requests are flagged, in eight languages (`research.latin_sentences`,
each private sentence filled with five of Faker's names of its locale).

The test fold (half of each language's sentences, by a hash of the sentence as written) was locked
before anything was chosen; the development fold is the other half.

    python -m research.ordinary_names            # the development fold
    python -m research.ordinary_names --locked   # the test fold, once per change
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.findings import Finding
from gateway.bench.folds import hashed_fold
from research.latin_sentences import LANGUAGES

FILLS = 5  # names per private sentence
_SLOT = re.compile(r"\{(NAME|FIRST|LAST)\}")


@dataclass(frozen=True)
class Sentence:
    language: str
    text: str
    name: tuple[int, int] | None  # where the name is; None: a public sentence
    locked: bool


def sentences() -> list[Sentence]:
    from faker import Faker

    found = []
    for language, spec in LANGUAGES.items():
        fake = Faker(spec.locale)
        for template in spec.private:
            locked = hashed_fold(template, 2) == 0
            fake.seed_instance(hashed_fold(template, 1 << 30))
            for _ in range(FILLS):
                slot = _SLOT.search(template)
                assert slot is not None
                kind = slot.group(1)
                name = fake.name() if kind == "NAME" else fake.first_name() if kind == "FIRST" else fake.last_name()
                text = template[: slot.start()] + name + template[slot.end() :]
                found.append(Sentence(language, text, (slot.start(), slot.start() + len(name)), locked))
        found += [Sentence(language, t, None, hashed_fold(t, 2) == 0) for t in spec.public]
    return found


def share(values: list[bool], rng: random.Random, draws: int = 1000) -> str:
    """The share of `values` that hold, with its 90% bootstrap interval."""
    if not values:
        return "-"
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(draws))
    return f"{sum(values) / len(values):.1%} [{means[draws // 20]:.1%}, {means[-draws // 20]:.1%}]"


def found_name(findings: tuple[Finding, ...], name: tuple[int, int]) -> bool:
    return any(f.type == "PERSON" and f.start < name[1] and name[0] < f.end for f in findings)


def measure(scan: Callable[[str], tuple[Finding, ...]], rows: list[Sentence]) -> tuple[list[bool], list[bool]]:
    """Whether each private sentence's name was found, and whether each public sentence was flagged."""
    private = [found_name(scan(s.text), s.name) for s in rows if s.name is not None]
    public = [bool(scan(s.text)) for s in rows if s.name is None]
    return private, public


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test fold, once per change")
    args = parser.parse_args()
    rows = [s for s in sentences() if s.locked == args.locked]
    shipped = PrivacyScanner()
    without = PrivacyScanner()
    without.ordinary.names = lambda text, found, detector: list(found)  # type: ignore[method-assign]
    without.ordinary.places = lambda text, found: list(found)  # type: ignore[method-assign]
    fold = "test" if args.locked else "development"
    print(f"{fold} fold: {sum(s.name is not None for s in rows)} names, {sum(s.name is None for s in rows)} requests")
    print("| scanner | language | names found [90%] | requests flagged [90%] |\n| --- | --- | ---: | ---: |")
    rng = random.Random(0)
    for label, scanner in (("without ordinary words", without), ("with ordinary words", shipped)):
        for language in (*LANGUAGES, "all"):
            mine = [s for s in rows if language in ("all", s.language)]
            private, public = measure(scanner.scan, mine)
            print(f"| {label} | {language} | {share(private, rng)} | {share(public, rng)} |")


if __name__ == "__main__":
    main()
