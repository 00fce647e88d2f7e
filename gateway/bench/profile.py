"""Where a server's time goes: a py-spy profile of its process, read back as self time by function
(nothing, where py-spy is not installed)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path


def record(pid: int, seconds: int, out: Path) -> subprocess.Popen[bytes] | None:
    """Sample `pid` for `seconds` into `out`, in the background."""
    if shutil.which("py-spy") is None:
        return None
    return subprocess.Popen(
        [
            "py-spy",
            "record",
            "--nonblocking",
            "--format",
            "raw",
            "-d",
            str(seconds),
            "-r",
            "200",
            "-p",
            str(pid),
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def top_frames(raw: Path, count: int = 12) -> list[tuple[str, float]]:
    """Self time by function from py-spy's collapsed stacks."""
    totals: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        leaf = stack.split(";")[-1]  # "function (path/to/file.py:line)"
        function, _, where = leaf.partition(" (")
        totals[f"{function} ({where.rsplit('/', 1)[-1]}" if where else function] += int(samples)
    all_samples = sum(totals.values()) or 1
    return [(frame, n / all_samples) for frame, n in totals.most_common(count)]
