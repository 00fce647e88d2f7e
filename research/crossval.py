"""Complexity, measured on prompts the model never saw, by group: no MMLU subject, GSM8K question
or AlpacaEval instruction is on both sides of a fold.

    python -m research.crossval [--no-litellm] [--folds 5] [--words-c C] [--alpaca-eval-weight W]

Each real source is scored out of fold, on its own: MMLU by subject (grouped k-fold: a fold's
subjects are absent from its training data), GSM8K and AlpacaEval by prompt. A fold trains on
every other row (the other sources, this source's other folds, and the template traffic, which
adds coverage and is never scored). The fold models give the words term's logit and the
edge-pieces term's score (trained on the fold's AlpacaEval rows); the weights of that term and of
the two length terms (the whole text, the ask) are then chosen on these held-out scores
(`PIECES_WEIGHTS`, `LENGTH_WEIGHTS`), and so is the shipped calibration. Baselines run in the same
process on the same prompts: each term alone, LiteLLM's `complexity_router`, prompt length, and a
random router (the mean of 200 seeds). The privacy tables
(`research.crossval_privacy`) follow.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from classifiers.complexity import ask_term, complexity_text, length_term
from classifiers.tokens import text_counts
from research import complexity_terms
from research.complexity_terms import Weights, complexity_pieces, complexity_words, edge_embedding
from research.fitting import logistic_regression
from research.folds import KINDS, RoutingRow, out_of_fold, routing_rows
from research.metrics import Measure, measure, pgr_curve, random_measure


# --- the model ----------------------------------------------------------------------------
def fit_words(train: list[RoutingRow]) -> Callable[[list[str]], np.ndarray]:
    """The words term as shipped (`research.complexity_terms.complexity_words`): logits."""
    pipeline = complexity_words(train)
    return lambda prompts: pipeline.decision_function([complexity_text(p) for p in prompts])


def fit_pieces(train: list[RoutingRow]) -> Callable[[list[str]], np.ndarray]:
    """The edge-pieces term as shipped (`research.complexity_terms.complexity_pieces`), trained on the
    AlpacaEval rows among `train`."""
    ridge = complexity_pieces(train)
    return lambda prompts: ridge.predict(np.stack([edge_embedding(complexity_text(p)) for p in prompts]))


# Each length term's weight is chosen from these on the validation folds, and the edge-pieces
# term's from `PIECES_WEIGHTS`: the three with the best mean APGR over the three real sources (each
# counts the same, whatever its size).
LENGTH_WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
PIECES_WEIGHTS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
# Weightings whose mean APGR is this close to the best are a tie, broken towards the smallest: far
# above one machine's rounding (the grid's top candidates once differed by 1e-6, and the argmax
# flipped between CPUs), far below a gain worth a heavier term.
TIED = 5e-4


@dataclass(frozen=True)
class OutOfFold:
    """Every real row's words logit from a model that never saw its group, and its length terms, by
    source."""

    rows: dict[str, list[RoutingRow]]
    words: dict[str, np.ndarray]
    lengths: dict[str, np.ndarray]
    asks: dict[str, np.ndarray]
    pieces: dict[str, np.ndarray]

    def scores(self, kind: str, weights: Weights) -> np.ndarray:
        lengths = weights.length * self.lengths[kind] + weights.ask * self.asks[kind]
        return self.words[kind] + lengths + weights.pieces * self.pieces[kind]

    def measure(self, kind: str, scores: np.ndarray) -> Measure:
        rows = self.rows[kind]
        return measure(scores, np.array([r.weak for r in rows]), np.array([r.strong for r in rows]))

    def mean_apgr(self, weights: Weights) -> float:
        return float(np.mean([self.measure(k, self.scores(k, weights)).apgr for k in KINDS]))

    def best_weights(self) -> Weights:
        """The weights with the best mean APGR; of those within `TIED` of it, the smallest."""
        grid = [Weights(n, a, p) for n in LENGTH_WEIGHTS for a in LENGTH_WEIGHTS for p in PIECES_WEIGHTS]
        scored = [(self.mean_apgr(w), w) for w in grid]
        best = max(score for score, _ in scored)
        tied = [w for score, w in scored if score >= best - TIED]
        return min(tied, key=lambda w: (w.length + w.ask + w.pieces, w.length, w.ask, w.pieces))


@cache
def out_of_fold_words(folds: int = 5) -> OutOfFold:
    """Computed once per process (about 40 s): the report and the training both read it."""
    rows = routing_rows()
    mine = {kind: [r for r in rows if r.kind == kind] for kind in KINDS}
    return OutOfFold(
        mine,
        {kind: out_of_fold(rows, kind, fit_words, folds) for kind in KINDS},
        {kind: np.array([length_term(text_counts(r.prompt)) for r in mine[kind]]) for kind in KINDS},
        {kind: np.array([ask_term(r.prompt) for r in mine[kind]]) for kind in KINDS},
        {kind: out_of_fold(rows, kind, fit_pieces, folds) for kind in KINDS},
    )


def weights_and_calibration() -> tuple[Weights, float, float]:
    """The length terms' weights, and a logistic calibration (scale, shift) of the weighed sum
    fitted on the held-out scores of all three sources against what routing buys: the shipped
    score is then a probability, and no source's ranking changes."""
    oof = out_of_fold_words()
    weight = oof.best_weights()
    x = np.concatenate([oof.scores(k, weight) for k in KINDS])[:, None]
    t = np.concatenate([[r.target for r in oof.rows[k]] for k in KINDS])
    model = logistic_regression(1e6)
    model.fit(np.vstack([x, x]), np.r_[np.ones(len(t)), np.zeros(len(t))], sample_weight=np.r_[t, 1 - t])
    scale, shift = round(float(model.coef_[0][0]), 6), round(float(model.intercept_[0]), 6)
    if scale <= 0:  # the sources' base rates would then have turned every source's ranking around
        raise AssertionError(f"the calibration's slope is {scale}")
    return weight, scale, shift


def litellm_router() -> Callable[[list[str]], np.ndarray] | None:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from litellm.router_strategy.complexity_router.complexity_router import ComplexityRouter
    except ImportError:
        return None
    router = ComplexityRouter("evaluation", ctx=None)
    return lambda prompts: np.array([router.classify(p)[1] for p in prompts])


EDGE_SHARES = (0.5, 0.6, 0.7, 0.8, 0.9)


def calibration(scores: np.ndarray, weak: np.ndarray, strong: np.ndarray) -> list[tuple[float, float, float]]:
    """(edge share, the complexity threshold that keeps it on the edge, the quality gap recovered
    there) for each of EDGE_SHARES: a policy's `when: {complexity: {gte: threshold}}` rule sends
    the rest to the cloud."""
    shares, pgr = pgr_curve(scores, weak, strong)
    ordered = np.sort(scores)
    out = []
    for edge in EDGE_SHARES:
        threshold = float(ordered[min(len(ordered) - 1, int(np.ceil(edge * len(ordered))))])
        out.append((edge, threshold, float(np.interp(1 - edge, shares, pgr))))
    return out


def calibration_report() -> list[str]:
    """Thresholds read on AlpacaEval's held-out scores (each from a model that never saw it),
    through the shipped calibration."""
    oof = out_of_fold_words()
    weight, scale, shift = weights_and_calibration()
    rows = oof.rows["alpaca_eval"]
    scores = 1 / (1 + np.exp(-(scale * oof.scores("alpaca_eval", weight) + shift)))
    weak, strong = np.array([r.weak for r in rows]), np.array([r.strong for r in rows])
    lines = [
        f"| edge share (of {len(rows)} held-out AlpacaEval instructions) | complexity threshold "
        "| quality gap recovered |",
        "| ---: | ---: | ---: |",
    ]
    for edge, threshold, recovered in calibration(scores, weak, strong):
        lines.append(f"| {edge:.0%} | {threshold:.3f} | {recovered:.1%} |")
    return lines


# The MMLU subjects a set outside the repo measures: the 16 that the training file lacks
OUTSIDE_SUBJECTS = 16
SUBJECT_DRAWS = 500


@dataclass(frozen=True)
class Spread:
    """APGR over draws of a few whole subjects: its mean and its 10th and 90th percentiles."""

    mean: float
    low: float
    high: float


def subject_draws(
    scores: np.ndarray, rows: Sequence[RoutingRow], subjects: int = OUTSIDE_SUBJECTS, draws: int = SUBJECT_DRAWS
) -> Spread:
    """APGR on `subjects` subjects at a time, their questions only: what a set of that many
    unseen subjects measures. Over all 41, a router also ranks whole subjects against each other,
    and a smaller set offers less of that: its APGR is lower on average and far more spread."""
    index = {group: i for i, group in enumerate(sorted({r.group for r in rows}))}
    of = np.array([index[r.group] for r in rows])
    weak, strong = np.array([r.weak for r in rows]), np.array([r.strong for r in rows])
    rng = np.random.default_rng(0)
    found = []
    for _ in range(draws):
        mask = np.isin(of, rng.choice(len(index), min(subjects, len(index)), replace=False))
        found.append(measure(scores[mask], weak[mask], strong[mask]).apgr)
    return Spread(float(np.mean(found)), float(np.percentile(found, 10)), float(np.percentile(found, 90)))


def within_subjects(scores: np.ndarray, rows: Sequence[RoutingRow]) -> float:
    """The mean APGR inside one subject (over the subjects where the cloud buys anything): how
    well a router tells a subject's hard questions from its easy ones."""
    weak, strong = np.array([r.weak for r in rows]), np.array([r.strong for r in rows])
    found = []
    for group in sorted({r.group for r in rows}):
        mask = np.array([r.group == group for r in rows])
        if (strong[mask] - weak[mask]).sum() > 0:
            found.append(measure(scores[mask], weak[mask], strong[mask]).apgr)
    return float(np.mean(found))


def _subject_lines(routers: dict[str, np.ndarray], rows: Sequence[RoutingRow]) -> list[str]:
    lines = [
        f"| MMLU router | {OUTSIDE_SUBJECTS} unseen subjects at a time ({SUBJECT_DRAWS} draws): mean APGR "
        "| 10th percentile | 90th percentile | within one subject (mean APGR) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, scores in routers.items():
        spread = subject_draws(scores, rows)
        lines.append(
            f"| {name} | {spread.mean:.3f} | {spread.low:.3f} | {spread.high:.3f} "
            f"| {within_subjects(scores, rows):.3f} |"
        )
    return lines


def report(with_litellm: bool = True, folds: int = 5) -> list[str]:
    oof = out_of_fold_words(folds)
    weight = oof.best_weights()
    litellm = litellm_router() if with_litellm else None
    lines = [
        f"weights chosen on the validation folds (each of {', '.join(f'{w:g}' for w in LENGTH_WEIGHTS)}): "
        f"{weight.length:g} for log words of the whole text, {weight.ask:g} for those of the ask's first line; "
        f"(each of {', '.join(f'{w:g}' for w in PIECES_WEIGHTS)}) {weight.pieces:g} for the edge-pieces term",
        "",
        "| source | prompts | router | APGR | CPT(50%) | CPT(80%) |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    subject_lines: list[str] = []
    for kind in KINDS:
        mine = oof.rows[kind]
        weak, strong = np.array([r.weak for r in mine]), np.array([r.strong for r in mine])
        prompts = [r.prompt for r in mine]
        routers: dict[str, np.ndarray] = {
            "edgeway, out of fold": oof.scores(kind, weight),
            "its words term alone, out of fold": oof.words[kind],
            "its edge-pieces term alone, out of fold": oof.pieces[kind],
            "its length terms alone": oof.scores(kind, Weights(weight.length, weight.ask)) - oof.words[kind],
            "prompt length (characters)": np.array([len(p) for p in prompts], dtype=float),
        }
        if litellm is not None:
            routers["LiteLLM complexity_router"] = litellm(prompts)
        measures = {name: measure(s, weak, strong) for name, s in routers.items()}
        measures["random (mean of 200 seeds)"] = random_measure(weak, strong)
        for name, m in measures.items():
            lines.append(f"| {kind} | {len(mine)} | {name} | {m.apgr:.3f} | {m.cpt50:.1%} | {m.cpt80:.1%} |")
        if kind == "mmlu":
            coin = np.random.default_rng(0).random(len(mine))
            subject_lines = _subject_lines({**routers, "random (one seed)": coin}, mine)
    return lines + [""] + subject_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-litellm", action="store_true", help="skip LiteLLM's complexity_router")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--words-c", type=float, help="the words term's regularization, to compare (default: the shipped one)"
    )
    parser.add_argument(
        "--alpaca-eval-weight", type=float, help="what an AlpacaEval row counts in the words term, to compare"
    )
    args = parser.parse_args()
    from research import crossval_privacy

    if args.words_c is not None:
        complexity_terms.COMPLEXITY_C = args.words_c
    if args.alpaca_eval_weight is not None:
        complexity_terms.ALPACA_EVAL_WEIGHT = args.alpaca_eval_weight

    tables = report(not args.no_litellm, args.folds) + [""] + calibration_report() + [""] + crossval_privacy.report()
    print("\n".join(tables))


if __name__ == "__main__":
    main()
