"""llama.cpp's own log, through Python's logging (`edgeway.llama_cpp`), at the levels llama.cpp
gives its lines.

llama-cpp-python's callback reads llama.cpp's levels by an older numbering (where WARN was 2 and is
now 3, ERROR's old number), so every warning reached stderr whatever its verbosity: a vocabulary
read without weights printed "n_ctx_seq (512) > n_ctx_train (0) -- possible training context
overflow" at every start. Here a warning is at DEBUG (nothing an operator can act on: the engine
raises what fails) and an error at ERROR.
"""

from __future__ import annotations

import ctypes
import logging

import llama_cpp

log = logging.getLogger("edgeway.llama_cpp")
# ggml's levels (ggml.h: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5: the line goes on)
LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.DEBUG, 3: logging.DEBUG, 4: logging.ERROR}
CONTINUED = 5
_last = [logging.DEBUG]


@llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
def _to_logging(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    at = _last[0] if level == CONTINUED else LEVELS.get(level, logging.DEBUG)
    _last[0] = at
    if log.isEnabledFor(at):
        log.log(at, "%s", text.decode("utf-8", "replace").rstrip("\n"))


def route_llama_log() -> None:
    """Send llama.cpp's log through `log` from now on (for every model this process loads)."""
    llama_cpp.llama_log_set(_to_logging, ctypes.c_void_p(0))
