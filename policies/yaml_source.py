"""YAML files validated with pydantic, with errors that point at file, line and column.

Both the gateway config and the policy files are read through here, so an error in either reads
the same: `configs/app.yaml:12:5: rules[2].route: expected 'edge' or 'cloud', found 'clowd'`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

Model = TypeVar("Model", bound=BaseModel)
Loc = tuple[str | int, ...]  # a path into a document: keys and list positions
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    column: int
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.key or '(top level)'}: {self.message}"


class FileError(Exception):
    """A YAML file that cannot be used; `problems` lists every error found in it."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def load_model(path: str | Path, model: type[Model], *, env: dict[str, str] | None = None) -> Model:
    text = Path(path).read_text(encoding="utf-8")
    return parse_model(text, model, filename=str(path), env=env)


def parse_model(
    text: str, model: type[Model], *, filename: str = "<string>", env: dict[str, str] | None = None
) -> Model:
    return parse_with_nodes(text, model, filename=filename, env=env)[0]


def parse_with_nodes(
    text: str, model: type[Model], *, filename: str = "<string>", env: dict[str, str] | None = None
) -> tuple[Model, yaml.Node]:
    """The validated model and the YAML node tree, for checks that pydantic cannot make alone."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise FileError([Problem(filename, line, col, "", f"not valid YAML: {getattr(exc, 'problem', exc)}")]) from None
    if node is None:
        raise FileError([Problem(filename, 1, 1, "", "the file is empty")])
    environment = os.environ if env is None else env
    problems: list[Problem] = []
    data = _to_python(node, (), environment, filename, problems)
    if problems:
        raise FileError(problems)
    try:
        return model.model_validate(data), node
    except ValidationError as exc:
        raise FileError([_problem(filename, node, err) for err in exc.errors()]) from None


def problem_at(filename: str, root: yaml.Node, loc: Loc, message: str) -> Problem:
    node = _locate(root, loc)
    return Problem(filename, node.start_mark.line + 1, node.start_mark.column + 1, _dotted(loc), message)


def _to_python(node: yaml.Node, path: Loc, env: Mapping[str, str], filename: str, problems: list[Problem]) -> Any:
    if isinstance(node, yaml.MappingNode):
        return {k.value: _to_python(v, path + (k.value,), env, filename, problems) for k, v in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(v, path + (i,), env, filename, problems) for i, v in enumerate(node.value)]
    assert isinstance(node, yaml.ScalarNode)  # the only other kind of node
    value = _scalar(node)
    if isinstance(value, str) and "${" in value:

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return str(env[name])
            if default is not None:
                return str(default)
            problems.append(
                Problem(
                    filename,
                    node.start_mark.line + 1,
                    node.start_mark.column + 1,
                    _dotted(path),
                    f"environment variable {name} is not set",
                )
            )
            return ""

        value = _ENV.sub(substitute, value)
    return value


def _scalar(node: yaml.ScalarNode) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _problem(filename: str, root: yaml.Node, err: ErrorDetails) -> Problem:
    loc = tuple(err["loc"])
    node = _locate(root, loc)
    found = err.get("input")
    message = err["msg"]
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    elif err["type"] != "missing" and not isinstance(found, (dict, list)):
        message = f"{message}; found {found!r}"
    return Problem(filename, node.start_mark.line + 1, node.start_mark.column + 1, _dotted(loc), message)


def _locate(node: yaml.Node, loc: Loc) -> yaml.Node:
    """The deepest YAML node on `loc` (the parent mapping, for a key that is missing)."""
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    node = value
                    break
            else:
                return node
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return node
    return node


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
