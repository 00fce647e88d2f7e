"""At start-up, once the edge models are loaded: each one's probe, and the text prior's edge class.

A probe is applied only to the GGUF it was fitted for (found by the file's hash, among the fitted
probes in `edge.probes` and those bundled with edgeway). An edge model without one is said so in
the start-up log, with the command that fits one; its `route: auto` rules then decide on the text
alone, as `edge_reading: never` does. The text prior follows the first answering edge model's class
(its `edge_class`, or its size); a `role: reader` model's probe is fitted for the class of the models
it reads for (set its `edge_class` to theirs).
"""

from __future__ import annotations

import logging
from pathlib import Path

from classifiers.complexity import EdgeClass
from classifiers.privacy.known import Known
from edge_runtime import EdgePool
from edge_runtime.config import ModelRole
from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import find_probe, gguf_digest
from router.edge import EdgeModel
from router.routing import Router
from router.tier import Tier

log = logging.getLogger("edgeway")
DIGESTS = "digests.json"  # in the probes folder: each GGUF's hash, by path, size and time


def edge_class_of(pool: EdgePool, name: str) -> EdgeClass:
    engine = pool.engines[name]
    configured = engine.config.edge_class
    return EdgeClass(configured) if configured != "auto" else EdgeClass.of_size(engine.parameters)


def attach_probes(pool: EdgePool, router: Router, probes: Path) -> None:
    """Each loaded edge model's probe (the answering ones' and the readers'), and the text prior's class."""
    scorer, models = router.scorer, router.models | router.readers
    first = next((n for n, e in pool.engines.items() if e.config.role is ModelRole.ANSWER), None)
    if first is not None:
        scorer.use_edge_class(edge_class_of(pool, first))
    for name, engine in pool.engines.items():
        edge = next((m for m in _locals(models) if m.engine is engine), None)
        if edge is None:
            continue
        digest = gguf_digest(resolve_gguf(engine.config.gguf), probes / DIGESTS)
        probe = find_probe(digest, [probes])
        wanted = edge_class_of(pool, name)
        if probe is not None and probe.label not in ("", str(wanted)):
            log.warning(
                "edge model %s: its probe was fitted for the %s class, not %s; reading with it anyway",
                Known(name),
                Known(probe.label),
                Known(wanted),
            )
        edge.probe = probe
        if probe is None:
            log.warning(
                "edge model %s (GGUF %s) has no probe: its `route: auto` rules decide on the text alone "
                "(as edge_reading: never); fit one with `edgeway router probe --edge %s`",
                Known(name),
                Known(digest),
                Known(name),
            )
        else:
            log.info(
                "edge model %s reads prompts first with its %s probe (GGUF %s)",
                Known(name),
                Known(probe.kind),
                Known(digest),
            )


def _locals(models: dict[str, Tier]) -> list[EdgeModel]:
    found = []
    for model in models.values():
        local = getattr(model, "local", model)  # an edge group's own machine
        if isinstance(local, EdgeModel):
            found.append(local)
    return found
