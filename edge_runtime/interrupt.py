"""Cutting a decode step short: a short request that arrives while a long prompt is being read does
not wait for the chunk in flight.

llama.cpp calls a context's abort callback between the nodes of a step's graph; when it answers
true, `llama_decode` returns 2 and removes from the cache every position the step wrote, so the
step is as if it never ran (the scheduler undoes its own bookkeeping and plans again). The callback
is C (`edge_runtime._interrupt`) and reads two flags that live here: whether the step in flight may
be cut (`arm`, set by the worker for a step that reads a long prompt) and whether a request that
should cut it has arrived (`request`, set by the thread that queues it). Between nodes is a few
milliseconds on a small model: the step's work so far is lost, and the short request's own step
runs next.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections import deque
from typing import Any

from edge_runtime._interrupt import CALLBACK

CUT = 2  # what llama_decode returns for a step its abort callback ended
WAITS_KEPT = 64  # the cuts whose waits `median_wait_ms` reads


class StepInterrupt:
    """The abort flags of one llama.cpp context. `request` is safe from any thread; `arm` and
    `clear` belong to the thread that decodes."""

    def __init__(self, lib: Any, ctx: Any) -> None:
        self._flags = (ctypes.c_int * 2)()  # [0] armed, [1] requested: the layout the C side reads
        self._callback = lib.ggml_abort_callback(CALLBACK)  # kept alive as long as the context
        lib.llama_set_abort_callback(ctx, self._callback, ctypes.cast(self._flags, ctypes.c_void_p))
        self.cuts = 0  # steps cut short
        self._asked_at: float | None = None  # when the first request since the last clear asked
        self.waits: deque[float] = deque(maxlen=WAITS_KEPT)  # seconds from the asking to the cut, recent ones

    def request(self) -> None:
        """A request that should not wait for the step in flight has been queued."""
        if self._asked_at is None:
            self._asked_at = time.monotonic()
        self._flags[1] = 1

    def clear(self) -> None:
        """The worker is about to take every queued request: what asked for a cut is served."""
        self._flags[1] = 0
        self._asked_at = None

    def landed(self) -> None:
        """A step was cut: how long after the asking (the graph node in flight, and the way out)."""
        self.cuts += 1
        if self._asked_at is not None:
            self.waits.append(time.monotonic() - self._asked_at)

    def median_wait_ms(self) -> float | None:
        return statistics.median(self.waits) * 1000 if self.waits else None

    def arm(self, cuttable: bool) -> None:
        """Whether the step about to run may be cut."""
        self._flags[0] = 1 if cuttable else 0
