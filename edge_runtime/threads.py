"""How many threads llama.cpp runs with."""

from __future__ import annotations

import os


def thread_count(configured: int | None) -> int:
    """The configured count, else the cores this process may run on.

    llama.cpp's own default of 4 threads oversubscribes small machines (26 tokens/s instead of 91
    on 2 cores). macOS has no sched_getaffinity; there every core counts."""
    if configured:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
