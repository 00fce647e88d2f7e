"""Local llama.cpp models: loading, scheduling, streaming."""

from edge_runtime.config import EdgeModelConfig
from edge_runtime.engine import EdgeEngine, EdgeError, EdgeState, Generation, PromptTooLong, Sampling
from edge_runtime.pool import EdgePool

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
