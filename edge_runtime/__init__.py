"""Local llama.cpp models: loading, scheduling, streaming."""

from edge_runtime.config import EdgeModelConfig
from edge_runtime.engine import EdgeEngine, EdgeState
from edge_runtime.errors import EdgeError, PromptTooLong
from edge_runtime.generation import Generation
from edge_runtime.pool import EdgePool
from edge_runtime.sampling import Sampling

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
