"""Personal identifiers named and checked (`classifiers.privacy.checked`): every name in the
generated tables, with a value its format's own documentation gives as valid, is an ID_NUMBER;
the same value with a check digit broken is not; a name with no value after it is nothing."""

from __future__ import annotations

import importlib
import re

import pytest

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.checked import DETECTOR
from classifiers.privacy.tables import CHECKED_IDENTIFIERS

# `>>> validate('390.533.447-05')` followed by its result, not by an exception
_EXAMPLE = re.compile(r">>> validate\('([^']+)'\)\n(?!Traceback)")


def _examples(name: str) -> list[str]:
    module = importlib.import_module(f"stdnum.{name}")
    return [e.strip() for e in _EXAMPLE.findall(module.__doc__ or "") if module.is_valid(e)]


NAMED = sorted(
    (cue, example)
    for cue, formats in CHECKED_IDENTIFIERS.items()
    for example in {e for name in formats for e in _examples(name)[:1]}
)


@pytest.fixture(scope="module")
def scanner() -> PrivacyScanner:
    return PrivacyScanner()


def test_most_names_have_a_documented_example():
    assert len({cue for cue, _ in NAMED}) >= 0.8 * len(CHECKED_IDENTIFIERS)


@pytest.mark.parametrize(("cue", "example"), NAMED)
def test_a_named_value_that_checks_is_an_id_and_a_broken_one_is_not(scanner, cue, example):
    for text in (f"My {cue}: {example}, thanks.", f"{cue} {example}"):
        start = text.index(example)
        found = [
            f
            for f in scanner.scan(text)
            if f.type == "ID_NUMBER" and f.start <= start and f.end >= start + len(example)
        ]
        assert found, (text, scanner.scan(text))
    broken = _broken(cue, example)
    if broken is not None:  # not taken whole (a shorter run of it may be another format's: "DNI 54362310")
        text = f"My {cue}: {broken}, thanks."
        start = text.index(broken)
        whole = [f for f in scanner.scan(text) if f.detector == DETECTOR and f.end >= start + len(broken)]
        assert not whole, broken


def _broken(cue: str, example: str) -> str | None:
    """`example` with its last digit changed so that no format of `cue` takes it, if one does."""
    digits = [i for i, c in enumerate(example) if c.isdigit()]
    for d in "0123456789":
        broken = example[: digits[-1]] + d + example[digits[-1] + 1 :]
        if not any(importlib.import_module(f"stdnum.{n}").is_valid(broken) for n in CHECKED_IDENTIFIERS[cue]):
            return broken
    return None


@pytest.mark.parametrize(
    "text",
    ["The CPF rules changed in 2019.", "Enter your PIN 1234 at the machine.", "SIN and COS are functions.",
     "Aadhaar enrolment opened in 2010 for 1.3 billion people."],
)  # fmt: skip
def test_a_name_without_a_value_that_checks_is_nothing(scanner, text):
    assert not [f for f in scanner.scan(text) if f.detector == DETECTOR]
