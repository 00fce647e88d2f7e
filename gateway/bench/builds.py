"""Two builds of the compiled scan side by side: all signals of the same cold conversations, one
build's and the other's, alternating conversation by conversation in one process.

Separate runs of `edgeway bench classify` on this kind of host differ by a tenth from one minute
to the next, more than most changes to the scan are worth; alternating in one process, two copies
of one build read 1.000x. Build the other tree (`python setup.py build_ext --inplace` there) and
pass its `classifiers/_scan*.so`.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

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


def compare(other: ModuleType, tokens: int = 1_000, count: int = 60, passes: int = 6) -> Comparison:
    """Each conversation scored by a Scorer built on this tree's scan and by one built on `other`,
    in turn (which goes first alternates), the modules pointed at the build in use each time."""
    users = _users()
    ours = {m: getattr(m, "_scan") for m in users}  # noqa: B009 (a module's global, read by name)

    def point(build: ModuleType | None) -> None:
        for m in users:
            setattr(m, "_scan", ours[m] if build is None else build)  # noqa: B010

    try:
        point(other)
        theirs_scorer = Scorer()
        point(None)
        ours_scorer = Scorer()
        samples = conversations(tokens, count, ours_scorer.tokens.estimate)
        sides = ((None, ours_scorer), (other, theirs_scorer))
        times: tuple[list[float], list[float]] = ([], [])
        for n in range(passes):
            for i, messages in enumerate(samples):
                order = (0, 1) if (n + i) % 2 else (1, 0)
                for side in order:
                    build, scorer = sides[side]
                    point(build)
                    scorer.seen.clear()
                    started = time.perf_counter()
                    _ = scorer.signals(messages, max_tokens=256).complexity
                    times[side].append((time.perf_counter() - started) * 1e3)
        return Comparison(times[0], times[1])
    finally:
        point(None)


def run_loaded(other: ModuleType, name: str, repeat: int = 6) -> None:
    comparison = compare(other, passes=repeat)
    print(f"all signals of cold 1,000-token conversations, this build and {name} alternating in one process")
    print(f"{'':>12} {'mean ms':>8} {'p50 ms':>8}")
    for name, times in (("this build", comparison.ours_ms), ("the other", comparison.theirs_ms)):
        print(f"{name:>12} {statistics.fmean(times):>8.3f} {statistics.median(times):>8.3f}")
    print(f"this / other: mean {comparison.mean_ratio:.3f}x, p50 {comparison.p50_ratio:.3f}x")
