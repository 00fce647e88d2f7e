"""The shipped reading router, measured as it runs: the edge's real next-token logits at each
prompt's last position (`edge_runtime.reading.read_last_logits`, what the scheduler scores), the
probe and its combination with the text prior fitted by the gateway's own code
(`router.probe_fit`), on the probe set of an edge class (`research.probe_set`).

    python -m research.probe [--locked]        # the small class, on AlpacaEval's 1B label
    python -m research.probe --gguf PATH       # another model's reading (a `role: reader`'s)

Development: AlpacaEval's four development folds, each scored by a router fitted on the other
three. `--locked`: its test fold, scored by a router fitted on every development row, beside the
text prior and the baselines; the edge reads every prompt (`edge_reading: always`) and only those
inside the band (`band`), as the policy's `router` key says.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Callable
from functools import cache

import numpy as np

from edge_runtime import EdgeEngine, EdgeModelConfig
from edge_runtime.config import ModelRole
from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import gguf_digest, read_last_logits
from gateway.bench.curves import bootstrap
from gateway.bench.folds import RoutingRow, routing_rows
from policies.schema import DEFAULT_BAND, DEFAULT_READING_TOKENS
from research.layer_readings import Pool, layer_readings, layers_probe
from research.prior import ANCHORS, BASELINES, SHIPPED, fit_prior, fitted_prior, matrix
from research.protocol import Fit, Scorer, Splits, apgr
from research.readings import CACHE
from router.app_router import sigmoid
from router.probe_fit import Labelled, fit_probe, read_combination

GGUF = "bundled:smollm2-135m"
reader = GGUF  # the model whose reading is measured (`--gguf`)
KIND = "alpaca_eval"  # the small class's own label


def prompt_tokens(prompts: list[str], gguf: str = GGUF) -> list[list[int]]:
    """As the gateway tokenizes a prompt it reads: with the model's chat template, or a base model's
    text alone (`edge_runtime.engine.PLAIN_TEXT`)."""
    engine = EdgeEngine(EdgeModelConfig(gguf=gguf, n_ctx=8192, role=ModelRole.READER))
    engine.load()
    try:
        return [engine.tokenize_chat([{"role": "user", "content": p}]) for p in prompts]
    finally:
        engine.close()


@cache
def logits_of(prompts: tuple[str, ...], gguf: str = GGUF, bound: int | None = None) -> dict[str, np.ndarray]:
    """Each prompt's reading; with `bound`, read from its last `bound` tokens only."""
    path = resolve_gguf(gguf)
    key = hashlib.sha256("\x00".join(prompts).encode()).hexdigest()[:16]
    last = "" if bound is None else f"-last{bound}"
    cached = CACHE / f"logits-{gguf_digest(path)[:16]}{last}-{key}.npy"
    if cached.exists():
        found = np.load(cached)
    else:
        CACHE.mkdir(exist_ok=True)
        tokens = prompt_tokens(list(prompts), gguf)
        found = read_last_logits(path, [t if bound is None else t[-bound:] for t in tokens])
        np.save(cached, found)
    return {p: found[i] for i, p in enumerate(prompts)}


def readings(rows: list[RoutingRow]) -> np.ndarray:
    found = logits_of(tuple(sorted({r.prompt for r in routing_rows() if r.kind == KIND})), reader)
    return np.stack([found[r.prompt] for r in rows])


@cache
def _layer_means() -> dict[str, np.ndarray]:
    """Every layer's output averaged over each prompt's last 128 tokens, as the reader reads it."""
    prompts = sorted({r.prompt for r in routing_rows() if r.kind == KIND})
    found = layer_readings(prompts, reader, DEFAULT_READING_TOKENS)
    return {p: found.mean[i] for i, p in enumerate(prompts)}


def labelled(rows: list[RoutingRow]) -> list[Labelled]:
    return [Labelled(r.kind, r.target, r.group) for r in rows]


def fit_probe_alone(train: list[RoutingRow]) -> Scorer:
    mine = [r for r in train if r.kind == KIND]
    weights, bias = fit_probe(readings(mine), labelled(mine))
    return lambda rows: readings(rows) @ weights + bias


def router_parts(
    train: list[RoutingRow], read: Callable[[list[RoutingRow]], np.ndarray] = readings
) -> tuple[Scorer, Scorer, tuple[float, float, float]]:
    """The prior's logit, the probe's score and their combination, fitted on `train` (on full
    readings); the probe scores what `read` gives of the rows scored."""
    coef, prior_bias = fitted_prior(SHIPPED, train, ANCHORS["small"])
    columns = SHIPPED.columns()

    def prior(rows: list[RoutingRow]) -> np.ndarray:
        return matrix(rows)[:, columns] @ coef + prior_bias

    mine = [r for r in train if r.kind == KIND]
    weights, bias = fit_probe(readings(mine), labelled(mine))

    def probe(rows: list[RoutingRow]) -> np.ndarray:
        return read(rows) @ weights + bias

    return prior, probe, read_combination(labelled(mine))


def fit_read_always(train: list[RoutingRow], read: Callable[[list[RoutingRow]], np.ndarray] = readings) -> Scorer:
    prior, probe, (w_prior, w_read, bias) = router_parts(train, read)
    return lambda rows: w_prior * prior(rows) + w_read * probe(rows) + bias


def fit_read_in_band(band: tuple[float, float] = DEFAULT_BAND) -> Fit:
    """The edge reads only the prompts whose text score is inside `band`; the rest keep it."""

    def fit(train: list[RoutingRow]) -> Scorer:
        prior, probe, (w_prior, w_read, bias) = router_parts(train)

        def score(rows: list[RoutingRow]) -> np.ndarray:
            text = np.array([sigmoid(z) for z in prior(rows)])
            read = np.array([sigmoid(z) for z in w_prior * prior(rows) + w_read * probe(rows) + bias])
            inside = (text >= band[0]) & (text <= band[1])
            return np.where(inside, read, text)

        return score

    return fit


CONFIGURATIONS: dict[str, Fit] = {
    "text prior (shipped)": fit_prior(SHIPPED),
    "probe alone": fit_probe_alone,
    "prior + probe, the edge reads every prompt": fit_read_always,
    "prior + probe, the edge reads inside the band": fit_read_in_band(),
    "probe on every layer's mean state, concatenated": layers_probe(_layer_means, (KIND,), Pool.CONCAT),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test fold, once per change")
    parser.add_argument("--gguf", default=GGUF, help="the reader: a GGUF's path, or bundled:NAME")
    args = parser.parse_args()
    global reader
    reader = args.gguf
    splits = Splits.of(routing_rows("small"))
    fits = {**CONFIGURATIONS, **BASELINES}
    if not args.locked:
        for name, fit in fits.items():
            print(f"{name}: development APGR {apgr(*splits.in_source(KIND, fit)):.3f}", flush=True)
        return
    rows, routers = splits.tests(KIND, fits)
    alone, paired = bootstrap(rows, routers, "prompt length")
    _, against_prior = bootstrap(rows, routers, "text prior (shipped)")
    print(f"AlpacaEval test fold ({len(rows)} instructions), 1B model vs GPT-4-turbo; APGR [90%]")
    for name in routers:
        versus = f"minus length {paired.get(name, '-')}; minus prior {against_prior.get(name, '-')}"
        print(f"  {name}: {alone[name]}; {versus}")


if __name__ == "__main__":
    main()
