"""`edgeway router probe --edge NAME`: fit the probe of a configured edge model's GGUF.

Reads the probe set that ships with edgeway (router/data/probe_set.jsonl: prompts labelled for each
edge class) through the model, as its scheduler reads a prompt (the chat template applied, the
logits at the last position), fits the probe (router/probe_fit.py) and saves it in `edge.probes`
under the GGUF's hash, where a gateway finds it at start-up. The edge class is the model's
`edge_class`, or its size's. A progress bar counts the prompts read.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from classifiers.complexity import EdgeClass
from edge_runtime import EdgeEngine
from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import gguf_digest
from gateway.config import GatewayConfig
from gateway.probes import DIGESTS
from router.probe_fit import fit_for_gguf, probe_set

BAR = 30


class Progress:
    """A bar on a terminal line: done / total, the rate, what is left."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.out, self.started = total, out, time.monotonic()

    def __call__(self, done: int) -> None:
        elapsed = time.monotonic() - self.started
        filled = BAR * done // max(1, self.total)
        left = elapsed / done * (self.total - done) if done else 0.0
        end = "\n" if done == self.total else ""
        print(
            f"\r[{'#' * filled}{'.' * (BAR - filled)}] {done}/{self.total} prompts, {left:.0f} s left",
            end=end,
            file=self.out,
        )
        self.out.flush()


def run(config: GatewayConfig, edge: str, limit: int | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    model = next((m for m in config.edge.models if m.name == edge), None)
    if model is None:
        print(f"no edge model named {edge!r}; edge models: {[m.name for m in config.edge.models]}", file=out)
        return 2
    path = resolve_gguf(model.gguf)
    probes = config.resolve(config.edge.probes)
    digest = gguf_digest(path, probes / DIGESTS)
    engine = EdgeEngine(model.model_copy(update={"n_ctx": 8192, "parallel": 1}))
    engine.load()  # its tokenizer and chat template: the tokens the scheduler would read
    try:
        edge_class = EdgeClass(model.edge_class) if model.edge_class != "auto" else EdgeClass.of_size(engine.parameters)
        prompts = probe_set(str(edge_class), limit)
        tokens = [engine.tokenize_chat([{"role": "user", "content": p.prompt}]) for p in prompts]
    finally:
        engine.close()
    print(f"{edge} ({path.name}, GGUF {digest}): the {edge_class} class; reading {len(prompts)} prompts", file=out)
    probe = fit_for_gguf(path, str(edge_class), prompts, tokens, digest, Progress(len(prompts), out))
    saved = probe.save(probes)
    print(f"saved {saved}; a gateway serving this GGUF reads prompts first with it from its next start", file=out)
    return 0
