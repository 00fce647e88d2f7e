"""The docs hold: every relative link in the README, CONTRIBUTING, docs/ and configs/ reaches a
file (and a heading, where it names one), and every whole policy and gateway config the docs show
passes the checks `edgeway policy check` and `edgeway serve` make, against the shipped config's
models."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
import yaml

from gateway.cli import command
from gateway.config import GatewayConfig
from policies.policy import Models, parse_policy
from policies.yaml_source import parse_model
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINKED = [*PAGES, *sorted((ROOT / "configs").rglob("*.yaml")), *sorted((ROOT / "configs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```ya?ml\n(.*?)```", re.S)


def anchors(page: Path) -> set[str]:
    """The anchors a Markdown page's headings make, as GitHub makes them."""
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower())
            found.add(title.replace(" ", "-"))
    return found


def links() -> list[tuple[str, str]]:
    found = []
    for page in LINKED:
        for link in LINK.finditer(page.read_text(encoding="utf-8")):
            if not link.group(1).startswith(("http://", "https://", "mailto:")):
                found.append((str(page.relative_to(ROOT)), link.group(1)))
    return found


@pytest.mark.parametrize("page, target", links())
def test_every_relative_link_reaches_its_file_and_heading(page, target):
    path, _, anchor = target.partition("#")
    destination = (ROOT / page).parent / path if path else ROOT / page
    assert destination.exists(), f"{page} links to {target}, which is not there"
    if anchor and destination.suffix == ".md":
        assert anchor in anchors(destination), f"{page} links to {target}, a heading {destination.name} lacks"


def shipped_models() -> Models:
    config = parse_model((ROOT / "configs" / "edgeway.yaml").read_text(), GatewayConfig, env=_AnyValue())
    return Models(tuple(m.name for m in config.edge.models), tuple(m.name for m in config.cloud.models))


class _AnyValue(dict[str, str]):
    """The environment a docs example is read in: every ${VARIABLE} set."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> str:
        return f"{key.lower()}-0123456789abcdef"

    def get(self, key: str, default: object = None) -> str:  # type: ignore[override]
        return self[key]


def examples() -> list[tuple[str, int, str]]:
    """Every fenced YAML block of the docs that is a whole policy (it has `rules`) or a whole
    gateway config (it has `edge`, `cloud` or `apps`), with its page and position."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            try:
                document = yaml.safe_load(block.group(1))
            except yaml.YAMLError:
                continue  # a fragment with a `...`: not a whole document
            if not isinstance(document, dict) or _abridged(document):
                continue
            if {"rules"} & set(document) or {"edge", "cloud", "apps"} & set(document):
                found.append((str(page.relative_to(ROOT)), text[: block.start()].count("\n") + 1, block.group(1)))
    return found


def _abridged(value: object) -> bool:
    """Whether an example leaves a part out (`...`): a sketch, not a whole document."""
    if isinstance(value, dict):
        return any(_abridged(v) for v in value.values())
    if isinstance(value, list):
        return any(_abridged(v) for v in value)
    return value in ("...", Ellipsis)


@pytest.mark.parametrize("page, line, example", examples(), ids=lambda v: str(v) if isinstance(v, (str, int)) else "")
def test_every_whole_policy_and_config_in_the_docs_passes_the_checks(page, line, example):
    where = f"{page}:{line}"
    if "rules" in yaml.safe_load(example):
        parse_policy(example, shipped_models(), filename=where)
    else:
        parse_model(example, GatewayConfig, filename=where, env=_AnyValue())


def test_the_cli_reference_names_every_verb_and_option():
    """docs/cli.md against the command itself: a verb or option added to it is one the reference
    must say."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if f"edgeway {' '.join((*words, name))}" not in page:
                        missing.append(" ".join((*words, name)))
                    walk(sub, (*words, name))
            options = [o for o in action.option_strings if o.startswith("--") and o != "--help"]
            missing.extend(f"{' '.join(words)} {o}".strip() for o in options if f"`{o}" not in page)

    walk(command(), ())
    assert missing == []
