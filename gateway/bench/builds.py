"""Two builds of the classifiers side by side: all signals of the same cold conversations, one
build's and the other's, alternating conversation by conversation in one process.

Separate runs of `edgeway bench classify` on this kind of host differ by a tenth from one minute
to the next, more than most changes to the scan are worth; alternating in one process, two copies
of one build read 1.000x. The other build is either a compiled scan (another tree's
`classifiers/_scan*.so`, built there with `python setup.py build_ext --inplace`), timed with this
tree's Python, or a whole checkout, whose own `classifiers` package (Python and its built scan) is
loaded beside this one's.
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from classifiers import Scorer
from gateway.bench.classify import conversations


class BuildError(ValueError):
    """The other build cannot be loaded."""


@dataclass(frozen=True)
class Comparison:
    ours_ms: list[float]  # each conversation's time with this build
    theirs_ms: list[float]  # and with the other, the same conversations in turn

    @property
    def mean_ratio(self) -> float:
        """This build's mean time over the other's: below 1, this build is faster."""
        return statistics.fmean(self.ours_ms) / statistics.fmean(self.theirs_ms)

    @property
    def p50_ratio(self) -> float:
        return statistics.median(self.ours_ms) / statistics.median(self.theirs_ms)

    @property
    def p99_ratio(self) -> float:
        return p99(self.ours_ms) / p99(self.theirs_ms)


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98]


@dataclass(frozen=True)
class Build:
    """A build to time: its Scorer, and what to do around each call so that its code runs."""

    name: str
    scorer: Any  # a classifiers.Scorer, of this tree or of the other
    using: Callable[[], Any]  # a context manager: the build's modules in place while it runs


def load_build(path: Path) -> ModuleType:
    """The compiled scan at `path`, loaded beside this tree's without replacing it."""
    if not path.is_file():
        raise BuildError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location("_scan", path)
    if spec is None or spec.loader is None:
        raise BuildError(f"not an extension module: {path}")
    try:
        module = importlib.util.module_from_spec(spec)  # an extension module is opened here
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise BuildError(f"cannot load {path}: {exc}") from None
    if not hasattr(module, "Scanner"):
        raise BuildError(f"not a build of classifiers._scan: {path}")
    return module


def _users() -> list[ModuleType]:
    """The classifiers' modules that read the compiled scan at call time (`_scan.counts`, ...)."""
    return [m for name, m in list(sys.modules.items()) if name.startswith("classifiers") and hasattr(m, "_scan")]


def scan_builds(other: ModuleType, name: str) -> tuple[Build, Build]:
    """This tree with its own compiled scan, and with `other`: the modules that read the scan at
    call time are pointed at the build in use."""
    users = _users()
    ours = {m: getattr(m, "_scan") for m in users}  # noqa: B009 (a module's global, read by name)

    @contextmanager
    def pointed(build: ModuleType | None) -> Iterator[None]:
        for m in users:
            setattr(m, "_scan", ours[m] if build is None else build)  # noqa: B010
        try:
            yield
        finally:
            for m in users:
                setattr(m, "_scan", ours[m])  # noqa: B010

    with pointed(other):
        theirs = Scorer()
    return Build("this build", Scorer(), lambda: pointed(None)), Build(name, theirs, lambda: pointed(other))


def _package(name: str) -> bool:
    return name == "classifiers" or name.startswith("classifiers.")


def tree_builds(root: Path) -> tuple[Build, Build]:
    """This tree's classifiers and the checkout at `root`'s, each package whole (its Python and
    its built scan). Both stay loaded; while one runs, its modules are the ones `sys.modules` names,
    for what a function imports when called."""
    if not (root / "classifiers" / "__init__.py").is_file():
        raise BuildError(f"not a checkout of edgeway (no classifiers package): {root}")
    if not list((root / "classifiers").glob("_scan*.so")):
        raise BuildError(f"{root}'s scan is not built: run `python setup.py build_ext --inplace` there")
    ours = {name: m for name, m in sys.modules.items() if _package(name)}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        theirs_scorer = importlib.import_module("classifiers").Scorer()
        theirs = {name: m for name, m in sys.modules.items() if _package(name)}
    except Exception as exc:  # another tree's code: whatever it raises, it cannot be timed
        raise BuildError(f"cannot load the classifiers of {root}: {exc!r}") from None
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if _package(n)]:
            del sys.modules[name]
        sys.modules.update(ours)

    @contextmanager
    def named(modules: dict[str, ModuleType]) -> Iterator[None]:
        sys.modules.update(modules)
        try:
            yield
        finally:
            sys.modules.update(ours)

    return Build("this build", Scorer(), lambda: named(ours)), Build(str(root), theirs_scorer, lambda: named(theirs))


def compare(builds: tuple[Build, Build], tokens: int = 1_000, count: int = 60, passes: int = 6) -> Comparison:
    """Each conversation scored by both builds in turn (which goes first alternates)."""
    samples = conversations(tokens, count, builds[0].scorer.tokens.estimate)
    times: tuple[list[float], list[float]] = ([], [])
    for n in range(passes):
        for i, messages in enumerate(samples):
            order = (0, 1) if (n + i) % 2 else (1, 0)
            for side in order:
                build = builds[side]
                with build.using():
                    build.scorer.seen.clear()
                    started = time.perf_counter()
                    _ = build.scorer.signals(messages, max_tokens=256).complexity
                    times[side].append((time.perf_counter() - started) * 1e3)
    return Comparison(times[0], times[1])


def load(path: Path) -> tuple[Build, Build]:
    """This build and the one at `path`: a checkout's directory, or a compiled scan's file."""
    return tree_builds(path) if path.is_dir() else scan_builds(load_build(path), str(path))


def run_loaded(builds: tuple[Build, Build], repeat: int = 6) -> None:
    comparison = compare(builds, passes=repeat)
    print(f"all signals of cold 1,000-token conversations, this build and {builds[1].name} alternating in one process")
    print(f"{'':>12} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for name, times in (("this build", comparison.ours_ms), ("the other", comparison.theirs_ms)):
        print(f"{name:>12} {statistics.fmean(times):>8.3f} {statistics.median(times):>8.3f} {p99(times):>8.3f}")
    print(
        f"this / other: mean {comparison.mean_ratio:.3f}x, p50 {comparison.p50_ratio:.3f}x, "
        f"p99 {comparison.p99_ratio:.3f}x"
    )
