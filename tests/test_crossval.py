"""The evaluation is honest by construction: no group (an MMLU subject, a prompt) is ever on both
sides of a fold, each source's test fold is never seen by a choice, and the metrics are RouteLLM's."""

from __future__ import annotations

import numpy as np

from gateway.bench.curves import bootstrap, measure, random_measure
from gateway.bench.folds import ALPACA_EVAL_EDGE, LABELS, LOCKED, RoutingRow, mmlu_folds, routing_rows
from research.protocol import Splits, apgr


def rows() -> list[RoutingRow]:
    made = []
    for subject in range(12):
        for q in range(5 + subject):
            made.append(RoutingRow(f"s{subject} q{q}", "mmlu", f"mmlu/s{subject}", q % 2, 1.0, float(q % 2 == 0)))
    made += [RoutingRow(f"g{q}", "gsm8k", f"g{q}", 0.0, 1.0, 1.0) for q in range(20)]
    return made


def test_every_subject_lies_in_one_fold_and_folds_are_balanced():
    mmlu = [r for r in rows() if r.kind == "mmlu"]
    folds = mmlu_folds(mmlu, 5)
    by_subject: dict[str, set[int]] = {}
    for row, fold in zip(mmlu, folds, strict=True):
        by_subject.setdefault(row.group, set()).add(fold)
    assert all(len(f) == 1 for f in by_subject.values())
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 16


def test_the_test_folds_are_never_trained_on_nor_chosen_by():
    splits = Splits.of(rows())
    locked = {id(r) for kind in ("mmlu", "gsm8k") for r in splits.locked(kind)}
    assert locked and not locked & {id(r) for r in splits.development()}
    seen: list[set[int]] = []

    def fit(train: list[RoutingRow]):
        seen.append({id(r) for r in train})
        return lambda scored: np.zeros(len(scored))

    mine, _ = splits.in_source("mmlu", fit)
    assert {splits.fold[id(r)] for r in mine} == {1, 2, 3, 4} and LOCKED == 0
    for trained in seen:
        assert not trained & locked
    held_groups = {r.group for r in mine}
    for trained, fold in zip(seen, sorted({splits.fold[id(r)] for r in mine}), strict=True):
        scored = {r.group for r in mine if splits.fold[id(r)] == fold}
        assert not scored & {r.group for r in rows() if id(r) in trained} or not held_groups
    _, _ = splits.leave_source_out("mmlu", fit)
    assert all(r.kind != "mmlu" for r in splits.rows if id(r) in seen[-1])
    _, _ = splits.test("gsm8k", fit, leave_source_out=True)
    assert all(r.kind != "gsm8k" for r in splits.rows if id(r) in seen[-1])


def test_a_subset_keeps_the_folds_its_rows_had_among_all():
    splits = Splits.of(rows())
    few = splits.restricted(lambda r: r.prompt.endswith("q0"))
    assert all(few.fold[id(r)] == splits.fold[id(r)] for r in few.rows if r.kind != "template")


def test_the_bootstrap_interval_holds_the_value_and_a_better_router_is_ahead_of_a_worse():
    rng = np.random.default_rng(2)
    made = [RoutingRow(f"p{i}", "gsm8k", f"p{i}", float(rng.random() < 0.5), 1.0, 0.0) for i in range(400)]
    weak = np.array([r.weak for r in made])
    good, coin = 1 - weak + rng.normal(0, 0.3, 400), rng.random(400)
    alone, paired = bootstrap(made, {"good": good, "coin": coin}, "coin", draws=300)
    assert alone["good"].low <= apgr(made, good) <= alone["good"].high
    assert paired["good"].low > 0 and paired["good"].excludes_zero()


def test_a_perfect_router_recovers_the_gap_first_and_random_is_one_half():
    weak = np.array([0, 0, 1, 1, 0, 1, 0, 1], dtype=float)
    strong = np.ones(8)
    perfect = measure(1 - weak, weak, strong)
    assert perfect.apgr > 0.7 and perfect.cpt50 <= 0.25
    assert abs(random_measure(weak, strong, seeds=400).apgr - 0.5) < 0.03


def _exact_measure(scores: np.ndarray, weak: np.ndarray, strong: np.ndarray) -> tuple[float, float, float]:
    """APGR, CPT(50%) and CPT(80%) by their definitions, in rational arithmetic (0/1 labels)."""
    from fractions import Fraction

    n, order = len(scores), np.argsort(-scores, kind="stable")
    ordered = scores[order]
    gap = Fraction(int(strong.sum() - weak.sum()), n)
    shares, pgr, i = [Fraction(0)], [Fraction(0)], 0
    while i < n:  # a run of tied scores is one cut
        j = i
        while j < n and ordered[j] == ordered[i]:
            j += 1
        shares.append(Fraction(j, n))
        pgr.append(pgr[-1] + Fraction(int(sum(strong[order[i:j]] - weak[order[i:j]])), n) / gap)
        i = j

    def cpt(target: Fraction) -> float:
        k = next(k for k in range(1, len(pgr)) if pgr[k] >= target)
        if pgr[k] == pgr[k - 1]:
            return float(shares[k])
        return float(shares[k - 1] + (target - pgr[k - 1]) / (pgr[k] - pgr[k - 1]) * (shares[k] - shares[k - 1]))

    area = sum((shares[k] - shares[k - 1]) * (pgr[k] + pgr[k - 1]) / 2 for k in range(1, len(pgr)))
    return float(area), cpt(Fraction(1, 2)), cpt(Fraction(4, 5))


def test_the_measures_are_what_exact_arithmetic_gives_ties_and_all():
    """A PGR that lands on the target exactly (80% of 80 gains is 64) reaches it: read with no
    margin, GSM8K's CPT(80%) moved by 0.9 points with the order in which a sum was taken."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(5, 400))
        scores = np.round(rng.random(n), int(rng.integers(1, 3)))  # many ties
        weak = (rng.random(n) < 0.6).astype(float)
        strong = np.maximum(weak, (rng.random(n) < 0.8).astype(float))
        if strong.sum() == weak.sum():
            continue
        found = measure(scores, weak, strong)
        assert np.allclose((found.apgr, found.cpt50, found.cpt80), _exact_measure(scores, weak, strong), atol=1e-9)


def test_alpaca_eval_is_labeled_by_what_the_cloud_buys_over_the_edge():
    """GPT-4-turbo preferred over the edge's answer: one minus the edge model's preference."""
    import json

    from research.data import DATA

    wins = {}
    for line in (DATA / "alpaca_eval_dev.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        wins[r["prompt"]] = r["win_vs_gpt4"][ALPACA_EVAL_EDGE]
    alpaca = [r for r in routing_rows() if r.kind == "alpaca_eval"]
    assert len(alpaca) == 404
    assert all(r.weak == wins[r.prompt] and r.strong == 0.5 and r.target == 1.0 - r.weak for r in alpaca)


def test_the_mid_class_labels_alpaca_eval_by_the_7b_to_14b_models():
    import json

    from research.data import DATA

    first = json.loads((DATA / "alpaca_eval_dev.jsonl").read_text(encoding="utf-8").splitlines()[0])
    mid = next(r for r in routing_rows("mid") if r.kind == "alpaca_eval" and r.prompt == first["prompt"])
    expected = sum(first["win_vs_gpt4"][m] for m in LABELS["mid"]) / len(LABELS["mid"])
    assert mid.weak == expected and mid.target == 1 - expected and ALPACA_EVAL_EDGE not in LABELS["mid"]


def test_the_prior_learns_what_makes_a_prompt_harder_than_others_of_its_kind():
    """Two sources whose base rates run against length (the longer source gains less from the
    cloud), while within each a longer ask gains more: one intercept per source learns what
    carries (longer is harder); a shared one would learn the contrast (longer is easier)."""
    from research.prior import SHIPPED, fitted_prior

    rng = np.random.default_rng(4)
    made = []
    for kind, base, words in (("mmlu", -2.0, 80), ("alpaca_eval", 1.0, 8)):
        for i in range(600):
            n = int(rng.integers(words // 2, words * 4))
            p = 1 / (1 + np.exp(-(base + 2.0 * (np.log1p(n) - np.log1p(words)))))
            gain = float(rng.random() < p)
            made.append(RoutingRow(" ".join(["word"] * n), kind, f"{kind}{i}", 1 - gain, 1.0, gain))
    weights, _ = fitted_prior(SHIPPED, made)
    assert min(weights) >= 0 < max(weights)  # words, ask words: longer is harder
    pooled = np.corrcoef([np.log1p(len(r.prompt.split())) for r in made], [r.target for r in made])[0, 1]
    assert pooled < 0  # what a shared intercept would have learned
