"""Local llama.cpp models: loading, scheduling, streaming."""

from edge_runtime.config import EdgeModelConfig
from edge_runtime.engine import EdgeEngine, EdgeState
from edge_runtime.errors import EdgeError, PromptTooLong
from edge_runtime.generation import Generation, Sampling
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
