"""The scan's C code (`classifiers/scan/*.c`) parses every byte a client sends, so it is held to C's
standards: it compiles without a single warning under `-Wall -Wextra -Werror`, and it is fuzzed
with AddressSanitizer and UndefinedBehaviorSanitizer watching every read and every operation.

The fuzzing runs `EDGEWAY_FUZZ_S` seconds (5 by default, what the suite affords; a scheduled job
sets more): hypothesis generates texts that stress the scan (digit runs with every separator and
digit script, addresses, encoded runs, long words, control and combining characters, astral
planes, lone surrogates) and calls the module's functions with edge-case arguments too.

The edge runtime's abort callback (`edge_runtime/_interrupt.c`) compiles under the same flags.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(str(p) for p in (ROOT / "classifiers" / "scan").glob("*.c"))
ABORT_CALLBACK = str(ROOT / "edge_runtime" / "_interrupt.c")  # llama.cpp calls it between graph nodes
INCLUDE = sysconfig.get_paths()["include"]
STRICT = ["-Wall", "-Wextra", "-Werror"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]


def compiler() -> str:
    found = shutil.which(os.environ.get("CC", "cc"))
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no C compiler: CI must build the scan")
        pytest.skip("no C compiler on this machine")
    return found


@pytest.mark.parametrize("source", [*SOURCES, ABORT_CALLBACK], ids=[Path(s).name for s in [*SOURCES, ABORT_CALLBACK]])
def test_the_scan_compiles_without_a_warning(source, tmp_path):
    built = subprocess.run(
        [compiler(), *STRICT, "-O2", "-fPIC", f"-I{INCLUDE}", "-c", source, "-o", str(tmp_path / "scan.o")],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr


HARNESS = textwrap.dedent(
    """
    import importlib.util, sys, time
    spec = importlib.util.spec_from_file_location("classifiers._scan", sys.argv[1])
    scan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scan)
    sys.modules["classifiers._scan"] = scan  # every user of the scan gets the sanitized build

    from hypothesis import HealthCheck, Phase, given, settings, strategies as st
    from classifiers import Scorer

    assert Scorer.__module__ and sys.modules["classifiers._scan"] is scan
    scorer = Scorer()
    digits = st.sampled_from("0123456789٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹०१२३४५६७८९０１２３４５６７８９")
    separators = st.sampled_from(" -./\\t\\n\\r_,:()+#&;x")
    number = st.lists(st.one_of(digits, separators), min_size=1, max_size=80).map("".join)
    pieces = st.one_of(
        number,
        st.text(max_size=60),
        st.sampled_from(["@", "example.com", "jane.roe", "&#52;", "&#x34;", "%34", "0x", "data:", "base64,",
                         "SSN", "card", "one two three", "\\u200b", "\\u0301", "\\U0001f600", "\\ud800", "\\x00"]),
        st.from_regex(r"[A-Za-z0-9+/=]{8,120}", fullmatch=True),
        st.from_regex(r"[0-9a-fA-F]{8,120}", fullmatch=True),
        st.text(alphabet=st.characters(min_codepoint=0x300, max_codepoint=0x36F), max_size=20),
    )
    texts = st.lists(pieces, max_size=40).map("".join)
    edge_ints = st.one_of(st.integers(-3, 3), st.integers(-(2**31), 2**31), st.sampled_from([2**63 - 1, -(2**63)]))

    # Rounds of fresh examples until the time is up: a sanitizer ends the process at the first fault,
    # so there is nothing to shrink.
    @settings(
        max_examples=50, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
    )
    @given(texts, texts, edge_ints, edge_ints)
    def scanned(first, second, a, b):
        for text in (first, second, first + second):
            try:
                scorer.signals([{"role": "user", "content": text}, {"role": "user", "content": second}])
            except UnicodeEncodeError:
                pass  # a lone surrogate: refused before the scan, as the gateway's JSON reader never makes one
        for call in (
            lambda: scan.counts(first, second),
            lambda: scan.any_in(first, ((a, b), (b, a))),
            lambda: scan.reading_cues(first),
            lambda: scan.windows(first, (second, second, a, b, a, b)),
        ):
            try:
                call()
            except (TypeError, ValueError, OverflowError, UnicodeError, SystemError):
                pass  # refused arguments are fine; a crash or a sanitizer report is not

    stop = time.monotonic() + float(sys.argv[2])
    rounds = 0
    while time.monotonic() < stop:
        scanned()
        rounds += 1
    print("fuzzed", rounds, "rounds")
    """
)


def test_the_scan_survives_fuzzing_under_address_and_undefined_behavior_sanitizers(tmp_path):
    cc = compiler()
    library = tmp_path / f"_scan{sysconfig.get_config_var('EXT_SUFFIX')}"
    built = subprocess.run(
        [cc, *STRICT, "-O1", "-g", *SANITIZERS, "-shared", "-fPIC", f"-I{INCLUDE}", *SOURCES, "-o", str(library)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    runtime = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    assert Path(runtime).exists(), f"no AddressSanitizer runtime beside {cc}"
    # C++'s runtime right after it: a library the scorer loads throws C++ exceptions (the secrets'
    # rule set's matcher), and the sanitizer finds the real `__cxa_throw` only if it is loaded at start
    cxx = subprocess.run([cc, "-print-file-name=libstdc++.so.6"], capture_output=True, text=True).stdout.strip()
    env = {
        **os.environ,
        # the interpreter is not instrumented: the runtime must come first
        "LD_PRELOAD": " ".join([runtime, *([cxx] if Path(cxx).is_absolute() and Path(cxx).exists() else [])]),
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "PYTHONPATH": str(ROOT),
    }
    seconds = os.environ.get("EDGEWAY_FUZZ_S", "5")  # longer by hand: EDGEWAY_FUZZ_S=600
    fuzzed = subprocess.run(
        [sys.executable, "-c", HARNESS, str(library), seconds],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=float(seconds) + 300,
    )
    report = fuzzed.stdout + fuzzed.stderr
    assert fuzzed.returncode == 0, report[-4000:]
    assert "Sanitizer" not in report and "runtime error" not in report, report[-4000:]
    assert "fuzzed" in fuzzed.stdout
