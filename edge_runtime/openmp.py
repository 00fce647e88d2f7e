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

An operator's own `OMP_WAIT_POLICY` or `GOMP_SPINCOUNT` is left as it is. Imported first by
`edge_runtime`: libgomp reads its settings once, when llama.cpp's library loads it.
"""

from __future__ import annotations

import os

SPINS = 3_000


def wait_briefly() -> None:
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(SPINS)


wait_briefly()
