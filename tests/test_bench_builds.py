"""`edgeway bench classify --against SCAN_SO`: two builds of the compiled scan timed side by side,
alternating conversation by conversation in one process, so that a change to the scan is judged
against the build before it in the same minutes."""

from __future__ import annotations

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
    comparison = builds.compare(other, tokens=100, count=4, passes=2)
    assert len(comparison.ours_ms) == len(comparison.theirs_ms) == 8
    assert all(t > 0 for t in comparison.ours_ms + comparison.theirs_ms)
    assert comparison.mean_ratio > 0 and comparison.p50_ratio > 0
    # the other build read the texts on its turns, and the classifiers read this tree's build again after
    assert calls
    assert token_module._scan is _scan
    assert all(
        m._scan is _scan for name, m in sys.modules.items() if name.startswith("classifiers") and hasattr(m, "_scan")
    )


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
    assert "goes with classify" in capsys.readouterr().err


def test_contention_goes_with_the_edge_suite_and_at_least_one_busy_process(capsys):
    assert main(["bench", "classify", "--contention", "2"]) == 2
    assert main(["bench", "edge", "--contention", "0"]) == 2
    assert "--contention N" in capsys.readouterr().err
