"""Local llama.cpp models: loading, scheduling, streaming."""

import edge_runtime.openmp  # noqa: F401  (first: OpenMP's wait is read once, when llama.cpp loads)

# isort: split
from edge_runtime.config import EdgeModelConfig
from edge_runtime.engine import EdgeEngine, EdgeState
from edge_runtime.errors import EdgeError, PromptTooLong
from edge_runtime.generation import Generation
from edge_runtime.llama_log import route_llama_log
from edge_runtime.pool import EdgePool
from edge_runtime.sampling import Sampling

route_llama_log()  # llama.cpp's own lines, at their own levels (edge_runtime/llama_log.py)

__all__ = [
    "EdgeEngine",
    "EdgeError",
    "EdgeModelConfig",
    "EdgePool",
    "EdgeState",
    "Generation",
    "PromptTooLong",
    "Sampling",
]
