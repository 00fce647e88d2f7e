"""How llama.cpp's OpenMP threads wait for each other, set before its runtime loads.

Between the nodes of a step's graph, llama.cpp's CPU threads meet at barriers. libgomp's default
is to spin 300,000 times at each before sleeping: on a quiet machine the peer arrives within the
spin and nothing is lost, but on cores another process keeps busy the spinning thread holds a core
its descheduled peer needs, and a step takes many time slices instead of one (a short request's
first token beside a 2-process hog on 2 cores: up to 135x its quiet time). Spinning 3,000 times
keeps the quiet decode rate (the peer is usually there within it) and sleeps soon enough to share
the cores; 300 shared them as well but slept through a decode step's barriers, 40% of the quiet
decode rate lost on this machine's kernel; 30,000 held a busy core long enough for 21x: `edgeway
bench edge --contention 2` prints the figures of each setting.

libgomp spins less once it manages more threads than the machine has cores: each thread that calls
into llama.cpp has a team of its own, so a second edge model (a reader, a ladder's other step, a
draft model's engine) puts it there as soon as it has decoded once. That "throttled" spin is 100
unless `OMP_WAIT_POLICY=ACTIVE` is set, where it is 1,000 (the count set here still bounds both):
at 100 every model in the process decoded at 36 tokens a second instead of 90 here, from the
moment the second one first ran. So where llama.cpp links libgomp, the policy is set to ACTIVE too:
with a spin count given, it changes nothing but that (`edgeway bench edge` prints a model's decode
rate before and after a second one has run). Other OpenMP runtimes read ACTIVE as "never sleep"
(LLVM's libomp), so it is set only where the library names libgomp.

An operator's own `OMP_WAIT_POLICY` or `GOMP_SPINCOUNT` is left as it is. Imported first by
`edge_runtime`: libgomp reads its settings once, when llama.cpp's library loads it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path

SPINS = 3_000
GNU_OPENMP = b"libgomp.so"  # how a library that links GCC's OpenMP runtime names it


def links_libgomp() -> bool:
    """Whether llama.cpp's CPU library links GCC's OpenMP runtime, read from its file without
    loading it (its settings must be in place before it loads)."""
    spec = importlib.util.find_spec("llama_cpp")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for path in sorted(Path(folder, "lib").glob("libggml-cpu*")):
            with contextlib.suppress(OSError):
                if GNU_OPENMP in path.read_bytes():
                    return True
    return False


def wait_briefly() -> None:
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(SPINS)
        if links_libgomp():
            os.environ["OMP_WAIT_POLICY"] = "ACTIVE"


wait_briefly()
