"""`edgeway bench classify --against BUILD`: two builds of the classifiers timed side by side,
alternating conversation by conversation in one process, so that a change is judged against the
build before it in the same minutes. The other build is a compiled scan, or a whole checkout."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest

from classifiers import _scan
from classifiers import tokens as token_module
from gateway.bench import builds
from gateway.cli import main


def _counting_copy() -> tuple[types.ModuleType, list[str]]:
    """A stand-in for another build: this one's types and functions, its `counts` noting each call."""
    calls: list[str] = []
    other = types.ModuleType("_scan")
    other.__dict__.update({k: v for k, v in vars(_scan).items() if not k.startswith("__")})

    def counts(text: str, symbols: str) -> tuple[int, int, int, int, int, int]:
        calls.append(text)
        return _scan.counts(text, symbols)

    other.counts = counts  # type: ignore[attr-defined]
    return other, calls


def test_each_conversation_is_scored_by_both_builds_in_turn():
    other, calls = _counting_copy()
    comparison = builds.compare(builds.scan_builds(other, "a copy"), tokens=100, count=4, passes=2)
    assert len(comparison.ours_ms) == len(comparison.theirs_ms) == 8
    assert all(t > 0 for t in comparison.ours_ms + comparison.theirs_ms)
    assert comparison.mean_ratio > 0 and comparison.p50_ratio > 0 and comparison.p99_ratio > 0
    # the other build read the texts on its turns, and the classifiers read this tree's build again after
    assert calls
    assert token_module._scan is _scan
    assert all(
        m._scan is _scan for name, m in sys.modules.items() if name.startswith("classifiers") and hasattr(m, "_scan")
    )


def test_another_checkout_is_loaded_whole_beside_this_one(tmp_path):
    """A checkout's own classifiers run on its turns (here a copy whose scorer counts its calls),
    and this tree's package is the one imported again after."""
    package = Path(_scan.__file__).parent
    shutil.copytree(package, tmp_path / "classifiers", ignore=shutil.ignore_patterns("__pycache__"))
    with (tmp_path / "classifiers" / "__init__.py").open("a") as init:
        init.write("\nCALLS = []\n_signals = Scorer.signals\n"
                   "Scorer.signals = lambda self, *a, **k: CALLS.append(1) or _signals(self, *a, **k)\n")  # fmt: skip
    ours_before = {name: m for name, m in sys.modules.items() if name.startswith("classifiers")}
    ours, theirs = builds.load(tmp_path)
    comparison = builds.compare((ours, theirs), tokens=100, count=3, passes=2)
    assert len(comparison.theirs_ms) == 6
    assert type(theirs.scorer) is not type(ours.scorer)
    assert len(type(theirs.scorer).signals.__globals__["CALLS"]) == 6  # the copy's code ran, each turn
    # this tree's package is the one imported, once the run is over
    assert {name: m for name, m in sys.modules.items() if name.startswith("classifiers")} == ours_before


def test_a_checkout_without_classifiers_or_its_built_scan_is_refused(tmp_path):
    with pytest.raises(builds.BuildError, match="not a checkout"):
        builds.load(tmp_path)
    (tmp_path / "classifiers").mkdir()
    (tmp_path / "classifiers" / "__init__.py").write_text("")
    with pytest.raises(builds.BuildError, match="not built"):
        builds.load(tmp_path)


def test_a_path_that_is_no_build_of_the_scan_is_refused(tmp_path):
    with pytest.raises(builds.BuildError, match="no such file"):
        builds.load_build(tmp_path / "missing.so")
    fake = tmp_path / "_scan.cpython-311-x86_64-linux-gnu.so"
    fake.write_text("not a shared object")
    with pytest.raises(builds.BuildError, match="cannot load"):
        builds.load_build(fake)
    assert builds.load_build(Path(_scan.__file__)).Scanner is not None


def test_the_command_refuses_a_missing_build_and_other_suites(tmp_path, capsys):
    assert main(["bench", "classify", "--against", str(tmp_path / "missing.so")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["bench", "tail", "--against", str(tmp_path / "missing.so")]) == 2
    assert "goes with classify or overhead" in capsys.readouterr().err
    assert main(["bench", "overhead", "--against", str(tmp_path)]) == 2
    assert "not a checkout" in capsys.readouterr().err


def test_contention_goes_with_the_edge_suite_and_at_least_one_busy_process(capsys):
    assert main(["bench", "classify", "--contention", "2"]) == 2
    assert main(["bench", "edge", "--contention", "0"]) == 2
    assert "--contention N" in capsys.readouterr().err
