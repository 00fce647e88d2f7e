"""Work that grows with a request's size (scanning, templating, tokenizing megabytes), run on
worker threads at a lower CPU priority than the event loop.

Off the loop, such work no longer blocks other requests; at a lower priority, it also does not
take the cores from the loop when the machine is busy (on 2 cores, two bulk threads at the same
priority delayed /healthz by up to 200 ms; niced, it answered within 100 ms)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
NICENESS = 10


def _lower_priority() -> None:
    if sys.platform == "linux":  # Linux gives each thread its own niceness; elsewhere keep the default
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        except OSError:
            pass


_EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix="edgeway-bulk", initializer=_lower_priority)


async def off_loop(work: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_EXECUTOR, work)
