"""Dependencies point one way, as docs/architecture.md draws them: this fails on an import between
edgeway's packages that the picture does not have. Research (training, cross-validation,
evaluation, their data) may import every package and is imported by none: it is not installed."""

from __future__ import annotations

import ast
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
    "research": {"classifiers", "edge_runtime", "router", "policies"},
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
