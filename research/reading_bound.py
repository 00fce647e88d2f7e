"""How much of the edge's reading survives reading only the end of a prompt.

A request that climbs past the edge pays the edge's prefill before the cloud is asked. With
`router: {reading_tokens: N}` the edge reads only the last N tokens of the prompt as it would serve
it (its chat template applied: the end holds the ask and the assistant's turn opening), so the
reading costs at most N tokens of prefill. This measures what that does to the ranking, with the
router as shipped: the prior, the probe and their combination fitted on full readings of the
training rows (`research.probe.router_parts`), and the scored rows read at each bound.

    python -m research.reading_bound             # AlpacaEval's development folds: where N is chosen
    python -m research.reading_bound --locked    # its test fold, once per change, beside baselines

The gain kept by a bound is (APGR at N - APGR of prompt length) / (APGR of the full reading -
APGR of prompt length), on the same rows.
"""

from __future__ import annotations

import argparse
from functools import cache

import numpy as np

from gateway.bench.curves import bootstrap
from gateway.bench.folds import RoutingRow, routing_rows
from research.prior import BASELINES, SHIPPED, fit_prior
from research.probe import KIND, fit_read_always, logits_of, prompt_tokens
from research.protocol import Fit, Splits, apgr

BOUNDS = (64, 128, 256, 512)


@cache
def _tokens(prompts: tuple[str, ...]) -> dict[str, list[int]]:
    return dict(zip(prompts, prompt_tokens(list(prompts)), strict=True))


def _all_prompts() -> tuple[str, ...]:
    return tuple(sorted({r.prompt for r in routing_rows() if r.kind == KIND}))


@cache
def bounded_logits(bound: int) -> dict[str, np.ndarray]:
    """Each AlpacaEval prompt's reading from its last `bound` tokens (its whole, where shorter)."""
    prompts = _all_prompts()
    tokens = _tokens(prompts)
    longer = tuple(p for p in prompts if len(tokens[p]) > bound)
    return {**logits_of(prompts), **(logits_of(longer, bound=bound) if longer else {})}


def fit_read_bounded(bound: int) -> Fit:
    """The shipped router (fitted on full readings), scoring rows read from their last `bound` tokens."""

    def read(rows: list[RoutingRow]) -> np.ndarray:
        logits = bounded_logits(bound)
        return np.stack([logits[r.prompt] for r in rows])

    return lambda train: fit_read_always(train, read)


def configurations() -> dict[str, Fit]:
    return {
        "text prior (shipped)": fit_prior(SHIPPED),
        "full reading": fit_read_always,
        **{f"last {bound} tokens": fit_read_bounded(bound) for bound in BOUNDS},
    }


def _kept(value: float, full: float, length: float) -> str:
    return f"{(value - length) / (full - length):.0%}" if full != length else "-"


def lengths() -> str:
    tokens = _tokens(_all_prompts())
    counts = np.array([len(t) for t in tokens.values()])
    over = ", ".join(f"{(counts > b).mean():.0%} over {b}" for b in BOUNDS)
    return f"AlpacaEval prompts as the edge reads them: median {int(np.median(counts))} tokens; {over}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locked", action="store_true", help="the test fold, once per change")
    args = parser.parse_args()
    splits = Splits.of(routing_rows("small"))
    fits = {**configurations(), **BASELINES}
    print(lengths())
    if not args.locked:
        found = {name: apgr(*splits.in_source(KIND, fit)) for name, fit in fits.items()}
        full, length = found["full reading"], found["prompt length"]
        for name, value in found.items():
            print(f"{name}: development APGR {value:.3f}; gain over length kept {_kept(value, full, length)}")
        return
    rows, routers = splits.tests(KIND, fits)
    alone, paired = bootstrap(rows, routers, "prompt length")
    _, against_full = bootstrap(rows, routers, "full reading")
    full, length = alone["full reading"].value, alone["prompt length"].value
    print(f"AlpacaEval test fold ({len(rows)} instructions), 1B model vs GPT-4-turbo; APGR [90%]")
    print("| router | APGR [90%] | minus length [90%] | minus full reading [90%] | gain kept |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in routers:
        kept = _kept(alone[name].value, full, length)
        print(f"| {name} | {alone[name]} | {paired.get(name, '-')} | {against_full.get(name, '-')} | {kept} |")


if __name__ == "__main__":
    main()
