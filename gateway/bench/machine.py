"""The machine a benchmark ran on, printed above its figures: they mean little without it."""

from __future__ import annotations

import os
import platform
from importlib import metadata


def describe() -> str:
    """One line: processor, the cores this process may use, memory, GPU offload, and the versions
    that decide the figures."""
    memory = _memory_gib()
    parts = [
        f"{_processor()}, {_cores()} cores usable",
        f"{memory:.0f} GiB memory" if memory else "memory unknown",
        "llama.cpp with GPU offload" if _gpu_offload() else "llama.cpp on the CPU only",
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}",
        f"llama-cpp-python {_version('llama-cpp-python')}",
    ]
    return "machine: " + "; ".join(parts)


def _processor() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def _memory_gib() -> float:
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def _gpu_offload() -> bool:
    try:
        import llama_cpp
    except ImportError:
        return False
    return bool(llama_cpp.llama_supports_gpu_offload())


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"
