"""YAML files validated with pydantic, with errors that point at file, line and column.

Both the gateway config and the policy files are read through here, so an error in either reads
the same: `configs/app.yaml:12:5: rules[2].route: expected 'edge' or 'cloud', found 'clowd'`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

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
        raise FileError([_yaml_problem(filename, exc)]) from None
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
        raise FileError([_problem(filename, node, err, model) for err in exc.errors()]) from None


def _yaml_problem(filename: str, exc: yaml.YAMLError) -> Problem:
    """Where YAML went wrong: where what it could not close began (a quote left open on line 11 is
    noticed only at the file's end), else where it noticed."""
    problem, context = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    mark = context or problem
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    said = f"not valid YAML: {getattr(exc, 'problem', None) or exc}"
    if context is not None and getattr(exc, "context", None):
        said += f" {exc.context}"  # type: ignore[attr-defined]  # (a MarkedYAMLError's)
        if problem is not None and problem.line != context.line:
            said += f" (noticed at {problem.line + 1}:{problem.column + 1})"
    return Problem(filename, line, col, "", said)


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


# pydantic's words before a validator's own message, which say nothing to the file's author
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def _problem(filename: str, root: yaml.Node, err: ErrorDetails, model: type[BaseModel]) -> Problem:
    loc = tuple(err["loc"])
    node = _locate(root, loc)
    found = err.get("input")
    message = err["msg"]
    for prefix in _PYDANTIC_PREFIXES:
        message = message.removeprefix(prefix)
    if err["type"] == "extra_forbidden":
        message = _unknown_key(loc, model)
    elif err["type"] != "missing" and not isinstance(found, (dict, list)):
        message = f"{message}; found {found!r}"
    return Problem(filename, node.start_mark.line + 1, node.start_mark.column + 1, _dotted(loc), message)


def _unknown_key(loc: Loc, model: type[BaseModel]) -> str:
    """An unknown key's message: the key it was likely meant to be, and the keys allowed there."""
    keys = _keys_at(model, loc[:-1])
    if not keys:
        return "unknown key"
    close = difflib.get_close_matches(str(loc[-1]), keys, n=1, cutoff=0.6)
    meant = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key; {meant}expected one of {', '.join(keys)}"


def _keys_at(model: Any, loc: Loc) -> list[str]:
    """The keys the mapping at `loc` of a document of `model` may have (none where unknown)."""
    current: Any = model
    for part in loc:
        current = _inner(current, part)
        if current is None:
            return []
    current = _model_of(current)
    if current is None:
        return []
    return [field.alias or name for name, field in current.model_fields.items()]


def _inner(annotation: Any, part: str | int) -> Any:
    """The type of `annotation`'s item `part` (a field's, a list's item, a mapping's value)."""
    model = _model_of(annotation)
    if model is not None:
        if not isinstance(part, str):
            return None
        field = model.model_fields.get(part) or next((f for f in model.model_fields.values() if f.alias == part), None)
        return None if field is None else field.annotation
    args = [a for a in get_args(annotation) if a is not type(None)]
    origin = get_origin(annotation)
    if origin in (list, tuple) and isinstance(part, int) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    if origin in (Union, UnionType):  # an optional field, or one of some types: the first that has it
        return next((inner for a in args if (inner := _inner(a, part)) is not None), None)
    return None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """`annotation`'s model, where it is one (or an optional one)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, UnionType):
        models = [m for a in get_args(annotation) if (m := _model_of(a)) is not None]
        return models[0] if len(models) == 1 else None
    return None


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
