"""Changing one number of a policy file in place, every other byte as it was.

`edgeway router fit --write` sets the complexity threshold of the rule that sends hard requests
to the cloud: the first rule routed to the cloud whose own `when` tests `complexity` with `gte`
or `gt`. The YAML is composed to find that scalar's position and only its characters are
replaced, so comments, order and layout stay; the result is validated before it is written,
and written by a rename, so the watcher that hot-reloads policies never reads half a file.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from policies.policy import Models, parse_policy
from policies.schema import PolicyFile
from policies.yaml_source import parse_with_nodes

TIERS = ("edge", "cloud")


class NoThreshold(ValueError):
    """The policy has no rule whose complexity threshold sends requests to the cloud."""


@dataclass(frozen=True)
class Threshold:
    rule: str
    test: str  # gte or gt
    value: float
    start: int  # the scalar's character offsets in the file
    end: int


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                found: yaml.Node = v
                return found
    return None


def find_threshold(text: str, models: Models) -> Threshold:
    spec, root = parse_with_nodes(text, PolicyFile)
    rules = _child(root, "rules")
    assert isinstance(rules, yaml.SequenceNode)  # the schema requires a list of rules
    for rule, node in zip(spec.rules, rules.value, strict=True):
        to_cloud = rule.route == "cloud" or rule.route in models.cloud
        test = rule.when.complexity if rule.when is not None else None
        if not to_cloud or test is None:
            continue
        for name in ("gte", "gt"):
            value = getattr(test, name)
            when = _child(node, "when")
            complexity = _child(when, "complexity") if when is not None else None
            scalar = _child(complexity, name) if complexity is not None else None
            if value is not None and isinstance(scalar, yaml.ScalarNode):
                return Threshold(rule.name, name, float(value), scalar.start_mark.index, scalar.end_mark.index)
    raise NoThreshold(
        "no rule routes to the cloud on `when: {complexity: {gte: X}}`; add one above the rule that routes "
        "to the edge, e.g. `- {name: hard, when: {complexity: {gte: 0.5}}, route: cloud}`"
    )


def with_threshold(text: str, models: Models, value: float) -> tuple[str, Threshold]:
    """The file's text with the threshold set to `value`, validated; and the threshold as it was."""
    found = find_threshold(text, models)
    changed = text[: found.start] + f"{value:g}" + text[found.end :]
    parse_policy(changed, models)  # raises FileError if the change broke anything
    return changed, found


def write_threshold(path: Path, models: Models, value: float) -> Threshold:
    """Set the threshold in the file at `path`; the threshold as it was."""
    changed, found = with_threshold(path.read_text(encoding="utf-8"), models, value)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(changed)
    os.chmod(temporary, path.stat().st_mode)
    os.replace(temporary, path)
    return found
