"""The ladder's cost against its quality, step by step, on rows no choice was made on: each
routing source's locked test fold (`gateway.bench.folds`; research/ chooses on the other four).

A step sends a request to its upper model when its scorer ranks the request above a cut. For each
scorer this prints its APGR with a 90% bootstrap interval and its paired difference from prompt
length (a gain inside that interval is not a gain), then, at the cuts that keep 90%, 95% and 99%
of the upper model's quality (its mean answer quality over the fold), the share of requests sent
up and what the step costs against sending every request up.

The steps the data can measure:

- **between two cloud models** (MMLU and GSM8K: Mixtral-8x7B's answers against GPT-4's, the
  labels of a mid-size model against a frontier one), priced as `gpt-4o-mini` against `gpt-4o` by
  LiteLLM's price map, as many tokens in as out;
- **from the edge to the cloud** (AlpacaEval: a 1B model's answers against GPT-4-turbo's), the
  edge free, as an edge model is by default.

The scorers: prompt length (what a cloud-to-cloud step ranks by until it is fitted), the text
prior (the edge-to-cloud step's), LiteLLM's complexity_router, the step fitted by `edgeway router
fit`'s own code from its cold scorer on 1,000 of the source's development rows (an app's verdicts;
all of them where there are fewer), the edge's reading with its shipped probe (with `--reading`:
the bundled model reads every prompt, its last 128 tokens as the policy's default bound, about 25
minutes on 2 cores), and random (the mean of 200 seeds) and the oracle beside them.
"""

from __future__ import annotations

import os
import random as randoms
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gateway.bench.classify import require_data
from gateway.bench.curves import bootstrap, cpt, pgr_curve
from gateway.bench.folds import KINDS, LOCKED, RoutingRow, folds_of, routing_rows

LEVELS = (0.90, 0.95, 0.99)  # shares of the upper model's quality a cut keeps
FITTED_ON = 1000  # development rows a fitted step learns from: an app's verdicts
SEEDS = 200  # random scorers averaged
CLOUD_PAIR = ("openai/gpt-4o-mini", "openai/gpt-4o")  # how a cloud-to-cloud step is priced here


@dataclass(frozen=True)
class Step:
    """One step of a ladder as a source's labels measure it."""

    source: str
    lower: str
    upper: str
    price_ratio: float  # the lower model's price per request over the upper's
    from_edge: bool  # an edge model's step to the cloud: the text prior is its cold scorer, else length


@dataclass(frozen=True)
class Point:
    """Where a scorer's cut keeps `level` of the upper model's quality."""

    level: float
    upper_share: float
    cost: float  # against every request sent up


def cloud_price_ratio() -> float:
    """The lower cloud model's price over the upper's, as many tokens in as out (LiteLLM's map,
    read as the ledger reads it)."""
    from router.cloud.config import CloudModelConfig
    from router.pricing import price_of

    lower, upper = (price_of(CloudModelConfig(name=m, provider_model=m)) for m in CLOUD_PAIR)
    return (lower.input_per_token + lower.output_per_token) / (upper.input_per_token + upper.output_per_token)


def steps() -> dict[str, Step]:
    ratio = cloud_price_ratio()
    return {
        "mmlu": Step("mmlu", "Mixtral-8x7B", "GPT-4", ratio, from_edge=False),
        "gsm8k": Step("gsm8k", "Mixtral-8x7B", "GPT-4", ratio, from_edge=False),
        "alpaca_eval": Step("alpaca_eval", "a 1B edge model", "GPT-4-turbo", 0.0, from_edge=True),
    }


def points(scores: np.ndarray, weak: np.ndarray, strong: np.ndarray, price_ratio: float) -> list[Point]:
    """The smallest share sent up that keeps each level of the upper model's quality."""
    shares, pgr = pgr_curve(scores, weak, strong)
    base, gap = float(weak.mean()), float(strong.mean() - weak.mean())
    found = []
    for level in LEVELS:
        wanted = level * float(strong.mean())
        share = 0.0 if wanted <= base else cpt(shares, pgr, (wanted - base) / gap)
        found.append(Point(level, share, share + (1 - share) * price_ratio))
    return found


def random_points(weak: np.ndarray, strong: np.ndarray, price_ratio: float) -> list[Point]:
    runs = [points(np.random.default_rng(seed).random(len(weak)), weak, strong, price_ratio) for seed in range(SEEDS)]
    return [
        Point(level, float(np.mean([r[i].upper_share for r in runs])), float(np.mean([r[i].cost for r in runs])))
        for i, level in enumerate(LEVELS)
    ]


@dataclass(frozen=True)
class Asked:
    """What the router knows of a row's prompt before any model answers."""

    prompt_tokens: int
    prior: float  # the text prior
    asks: list[float]


def asked(rows: Sequence[RoutingRow]) -> list[Asked]:
    from classifiers import Scorer
    from router.app_router import request_features
    from router.request import ChatRequest

    scorer = Scorer()
    out = []
    for r in rows:
        messages = [{"role": "user", "content": r.prompt}]
        signals = scorer.signals(messages)
        request = ChatRequest(body={"messages": messages}, model="auto", messages=messages)
        out.append(Asked(signals.prompt_tokens, signals.complexity, request_features(request)))
    return out


def verdicts(development: Sequence[RoutingRow]) -> list[RoutingRow]:
    """`FITTED_ON` of a source's development rows, in a seeded order: an app's verdicts, oldest first."""
    chosen = list(development)
    randoms.Random(0).shuffle(chosen)
    return chosen[:FITTED_ON]


def fitted_scores(
    step: Step, chosen: Sequence[RoutingRow], locked: Sequence[RoutingRow], known: dict[str, Asked]
) -> np.ndarray:
    """A step fitted as `edgeway router fit` fits one, on `chosen` (`verdicts`), from the step's
    cold scorer (the text prior from the edge, else prompt length), scoring the locked rows."""
    from router.app_router import AppRouter
    from router.fitting import fit, scores, weighs_asks
    from router.ladder import length_score
    from router.routings import Example

    def example(r: RoutingRow, ts: float) -> Example:
        a = known[r.prompt]
        prior = a.prior if step.from_edge else length_score(a.prompt_tokens)
        return Example(prior, None, a.asks, r.target, r.weak, r.strong, ts)

    current = AppRouter()
    router = fit([example(r, i) for i, r in enumerate(chosen)], current, asks=weighs_asks(len(chosen), current))
    return scores(router, [example(r, 0.0) for r in locked])


def litellm_scorer() -> Callable[[str], float] | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price map fetched
    try:
        from litellm.router_strategy.complexity_router.complexity_router import ComplexityRouter
    except ImportError:
        return None
    router = ComplexityRouter("bench", ctx=None)
    return lambda prompt: float(router.classify(prompt)[1])


def reading_scores(rows: Sequence[RoutingRow], bound: int) -> np.ndarray:
    """The bundled model's reading of each prompt's last `bound` tokens, scored by its shipped probe."""
    from edge_runtime import EdgeEngine, EdgeModelConfig
    from edge_runtime.gguf import resolve_gguf
    from edge_runtime.reading import BUNDLED_PROBES, find_probe, gguf_digest, read_last_logits

    gguf = resolve_gguf("bundled:smollm2-135m")
    probe = find_probe(gguf_digest(gguf), [BUNDLED_PROBES])
    assert probe is not None, "the bundled model ships its probe"
    engine = EdgeEngine(EdgeModelConfig(gguf=str(gguf), n_ctx=8192))
    engine.load()
    try:
        tokens = [engine.tokenize_chat([{"role": "user", "content": r.prompt}])[-bound:] for r in rows]
    finally:
        engine.close()
    return np.array([probe.score(logits) for logits in read_last_logits(gguf, tokens)])


def report(step: Step, rows: Sequence[RoutingRow], scorers: dict[str, np.ndarray]) -> list[str]:
    weak, strong = np.array([r.weak for r in rows]), np.array([r.strong for r in rows])
    alone, paired = bootstrap(rows, scorers, "prompt length")
    cells = " | ".join(f"{level:.0%}: up, cost" for level in LEVELS)
    lines = [
        "",
        f"{step.source} test fold ({len(rows)} prompts): {step.lower} -> {step.upper}, "
        f"lower priced at {step.price_ratio:.3f} of upper; upper quality {strong.mean():.3f}, lower {weak.mean():.3f}",
        "",
        f"| scorer | APGR [90%] | minus length [90%] | {cells} |",
        "| --- | ---: | ---: |" + " ---: |" * len(LEVELS),
    ]

    def row(name: str, apgr: str, minus: str, found: list[Point]) -> str:
        shown = " | ".join(f"{p.upper_share:.0%}, {p.cost:.2f}" for p in found)
        return f"| {name} | {apgr} | {minus} | {shown} |"

    for name, scores in scorers.items():
        minus = str(paired[name]) if name in paired else "-"
        lines.append(row(name, str(alone[name]), minus, points(scores, weak, strong, step.price_ratio)))
    lines.append(row("random (mean of 200 seeds)", "0.500", "-", random_points(weak, strong, step.price_ratio)))
    lines.append(row("oracle", "-", "-", points(strong - weak, weak, strong, step.price_ratio)))
    return lines


def run(reading: bool = False) -> None:
    from policies.schema import DEFAULT_READING_TOKENS

    require_data()
    rows = routing_rows()
    fold = folds_of(rows)
    litellm = litellm_scorer()
    measured = steps()
    print(
        "the ladder's steps on each source's locked test fold: the share of requests sent up and the "
        "step's cost against all sent up, at the cut that keeps each share of the upper model's quality"
    )
    for kind in KINDS:
        step = measured[kind]
        mine = [r for r in rows if r.kind == kind]
        locked = [r for r in mine if fold[id(r)] == LOCKED]
        chosen = verdicts([r for r in mine if fold[id(r)] != LOCKED])
        known = {r.prompt: a for r, a in zip(locked + chosen, asked(locked + chosen), strict=True)}
        scorers: dict[str, np.ndarray] = {
            "prompt length": np.array([known[r.prompt].prompt_tokens for r in locked], dtype=float),
            "text prior": np.array([known[r.prompt].prior for r in locked]),
        }
        if litellm is not None:
            scorers["LiteLLM complexity_router"] = np.array([litellm(r.prompt) for r in locked])
        scorers[f"fitted on {len(chosen):,} verdicts"] = fitted_scores(step, chosen, locked, known)
        if reading:
            scorers["the edge's reading (shipped probe)"] = reading_scores(locked, DEFAULT_READING_TOKENS)
        print("\n".join(report(step, locked, scorers)), flush=True)
