"""The local models of this gateway, by name."""

from __future__ import annotations

import time

from edge_runtime.config import EdgeModelConfig
from edge_runtime.engine import EdgeEngine, EdgeState


class EdgePool:
    def __init__(self, configs: list[EdgeModelConfig]) -> None:
        self.engines = {c.name: EdgeEngine(c) for c in configs}
        self.load_seconds = 0.0

    def load(self) -> None:
        started = time.perf_counter()
        for engine in self.engines.values():
            engine.load()
        self.load_seconds = time.perf_counter() - started

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()

    def states(self) -> list[EdgeState]:
        return [engine.state() for engine in self.engines.values()]

    @property
    def ready(self) -> bool:
        return all(engine.loaded for engine in self.engines.values())
