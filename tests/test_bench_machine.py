"""Every `edgeway bench` prints the machine it ran on above its figures."""

from __future__ import annotations

import os

from gateway.bench.machine import describe


def test_the_machine_line_names_the_cores_memory_and_what_llama_cpp_runs_on():
    line = describe()
    assert line.startswith("machine: ")
    assert f"{len(os.sched_getaffinity(0))} cores usable" in line
    assert "GiB memory" in line
    assert "llama.cpp on the CPU only" in line or "llama.cpp with GPU offload" in line
    assert "llama-cpp-python 0.3.36" in line  # the version pinned in pyproject.toml
