"""Dependencies point one way, as docs/architecture.md draws them: this fails on an import between
edgeway's packages that the picture does not have. Research (training, cross-validation,
evaluation, their data) may import every package and is imported by none: it is not installed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = ("gateway", "router", "policies", "classifiers", "edge_runtime")
PACKAGES = (*INSTALLED, "research")
ALLOWED = {
    "gateway": {"router", "policies", "classifiers", "edge_runtime"},
    "router": {"policies", "classifiers", "edge_runtime"},
    "policies": {"classifiers"},
    "classifiers": set(),
    "edge_runtime": set(),
    # research keeps its test folds where `edgeway bench ladder` reads them (gateway/bench/folds.py)
    "research": {"gateway", "classifiers", "edge_runtime", "router", "policies"},
}


def imports() -> list[tuple[str, str, str]]:
    """(importing module, its package, imported package) for every import between packages."""
    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                found += [(module, package, n.split(".")[0]) for n in names if n.split(".")[0] in PACKAGES]
    return found


def test_every_import_between_packages_is_an_edge_of_the_picture():
    wrong = [
        f"{module} imports {target}"
        for module, package, target in imports()
        if target != package and target not in ALLOWED[package]
    ]
    assert wrong == []


def test_every_edge_of_the_picture_is_in_the_code():
    present = {(package, target) for _, package, target in imports() if target != package}
    drawn = {(package, target) for package, targets in ALLOWED.items() for target in targets}
    assert drawn == present


def test_the_installed_packages_are_what_setuptools_finds():
    """research/ stays out of the wheel: setuptools' package list names the runtime's alone."""
    import tomllib

    found = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    assert sorted(p.rstrip("*") for p in found["find"]["include"]) == sorted(INSTALLED)


# --- docs/architecture.md as a map that holds ------------------------------------------------
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _names(body: list[ast.stmt]) -> set[str]:
    """What a module's or a class's body defines: functions, classes and assigned names."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _definitions(path: Path) -> dict[str, set[str]]:
    """The module's names ("") and each of its classes' names (by the class's name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {"": _names(tree.body)}
    found.update({node.name: _names(node.body) for node in tree.body if isinstance(node, ast.ClassDef)})
    return found


def _defines(path: Path, name: str) -> bool:
    owner, _, member = name.rpartition(".") if "." in name else ("", "", name)
    return member in _definitions(path).get(owner, set())


def test_every_file_and_function_the_architecture_names_exists():
    """`path.py: Name` (or `Class.method`) is defined in that file; every `path.py` exists; a
    `Class.method` named alone is defined in one of the installed packages' classes of that name."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = re.findall(r"`((?:[\w]+/)+[\w]+\.py)(?:: ([A-Za-z_][\w.]*))?`", text)
    assert len(named) > 40  # the map names its files
    for path, name in named:
        assert (ROOT / path).is_file(), path
        if name:
            assert _defines(ROOT / path, name), f"{path} does not define {name}"
    classes: dict[str, list[Path]] = {}
    for package in INSTALLED:
        for path in (ROOT / package).rglob("*.py"):
            for owner in _definitions(path):
                if owner:
                    classes.setdefault(owner, []).append(path)
    alone = set(re.findall(r"`([A-Z]\w+)\.(_?[a-z]\w*)`", text))
    assert len(alone) > 10
    for owner, member in sorted(alone):
        assert any(_defines(path, f"{owner}.{member}") for path in classes.get(owner, [])), f"{owner}.{member}"


# --- no import cycle, hidden or not ------------------------------------------------------------
def _module_graph() -> dict[str, set[str]]:
    """Each installed module and the installed modules it imports: at the top, under
    `TYPE_CHECKING` and inside functions alike (a cycle hidden behind either is still a cycle). A
    compiled extension (`classifiers/_scan*.so`) is a module of its own, importing nothing."""
    paths: dict[str, Path | None] = {}
    for package in INSTALLED:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        for path in (ROOT / package).rglob("*.so"):
            parts = path.relative_to(ROOT).parts
            paths[".".join((*parts[:-1], path.name.split(".")[0]))] = None

    def resolved(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        if path is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in paths else node.module
                           for a in node.names]  # fmt: skip
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {found for t in targets if (found := resolved(t)) not in (None, name)}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_through_others_even_lazily():
    graph = _module_graph()
    assert len(graph) > 150 and "classifiers._scan" in graph
    assert _cycles(graph) == []


def test_the_cycle_check_sees_a_cycle_behind_type_checking_and_in_a_function():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from router.routing import Router\n"
                     "def f():\n    from gateway.app import Gateway\n")  # fmt: skip
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {"router.routing", "gateway.app"} <= imported  # ast.walk reaches both, as _module_graph reads them
