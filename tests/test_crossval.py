"""The evaluation is honest by construction: no group (an MMLU subject, a prompt) is ever on both
sides of a fold, and the metrics are RouteLLM's."""

from __future__ import annotations

import numpy as np

from research.crossval import calibration
from research.folds import ALPACA_EVAL_EDGE, RoutingRow, mmlu_folds, out_of_fold, routing_rows
from research.metrics import measure, random_measure


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


def test_a_fold_never_trains_on_the_groups_it_scores():
    data = rows()
    seen_groups: list[set[str]] = []

    def fit(train: list[RoutingRow]):
        trained = {r.group for r in train}
        seen_groups.append(trained)
        return lambda prompts: np.array(
            [1.0 if p.split()[0] in {g.split("/")[-1] for g in trained} else 0.0 for p in prompts]
        )

    scores = out_of_fold(data, "mmlu", fit, 5)
    assert len(seen_groups) == 5 and scores.max() == 0.0  # no scored prompt's subject was trained on


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


def test_a_threshold_keeps_its_share_on_the_edge_and_says_what_it_recovers():
    rng = np.random.default_rng(3)
    scores = rng.random(1000)
    weak, strong = (scores < 0.5).astype(float), np.ones(1000)  # the edge fails exactly the top half
    table = calibration(scores, weak, strong)
    for edge, threshold, recovered in table:
        assert abs(float((scores < threshold).mean()) - edge) < 0.002
        expected = 1.0 if edge <= 0.5 else (1 - edge) / 0.5  # the cloud's share of the hard half
        assert abs(recovered - expected) < 0.01


def test_the_terms_weights_are_the_smallest_of_those_tied_for_the_best_mean_apgr():
    from research.crossval import LENGTH_WEIGHTS, PIECES_WEIGHTS, TIED, OutOfFold, Weights
    from research.folds import KINDS

    rng = np.random.default_rng(0)
    made, words, lengths, asks, pieces = {}, {}, {}, {}, {}
    for kind in KINDS:
        n = 200
        ask = rng.random(n) * 5
        gain = (rng.random(n) < ask / 5).astype(float)  # longer asks gain more from the cloud
        made[kind] = [RoutingRow(f"{kind}{i}", kind, f"{kind}{i}", 1 - g, 1.0, g) for i, g in enumerate(gain)]
        words[kind] = rng.normal(size=n)  # a words term that knows nothing
        lengths[kind] = rng.random(n) * 5  # nor does the whole text's length here
        asks[kind] = ask
        pieces[kind] = gain - 0.5 if kind == "alpaca_eval" else rng.normal(size=n)  # it knows one source
    oof = OutOfFold(made, words, lengths, asks, pieces)
    grid = [Weights(n, a, p) for n in LENGTH_WEIGHTS for a in LENGTH_WEIGHTS for p in PIECES_WEIGHTS]
    mean = {w: np.mean([oof.measure(k, oof.scores(k, w)).apgr for k in KINDS]) for w in grid}
    best = oof.best_weights()
    top = max(mean.values())
    assert mean[best] >= top - TIED
    size = {w: w.length + w.ask + w.pieces for w in grid}
    assert all(size[w] >= size[best] for w in grid if mean[w] >= top - TIED)
    assert best.ask == max(LENGTH_WEIGHTS) and best.length < best.ask
    assert 0 < best.pieces < max(PIECES_WEIGHTS)  # it helps one source and costs the two others
    assert mean[Weights(0.0, 0.0)] < mean[Weights(best.length, best.ask)] < mean[best]


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


def test_an_alpaca_eval_instruction_counts_more_than_an_exam_question_in_the_words_term():
    """The open-ended instructions are few among the exam questions: each counts
    `ALPACA_EVAL_WEIGHT` times, so where an instruction and a question share their words and
    disagree, the instruction's target wins."""
    from research import complexity_terms as train

    question = RoutingRow("please explain the theory of relativity", "mmlu", "mmlu/physics", 1.0, 1.0, 0.0)
    instruction = RoutingRow("please explain the theory of relativity", "alpaca_eval", "x", 0.0, 0.5, 1.0)
    other = [RoutingRow(f"filler question {i}", "mmlu", "mmlu/misc", 1.0, 1.0, float(i % 2)) for i in range(20)]
    model = train.complexity_words([question, instruction, *other])
    logit = model.decision_function(["please explain the theory of relativity"])[0]
    assert train.ALPACA_EVAL_WEIGHT > 1
    assert logit > 1.0  # at an even count the two would cancel near 0


def test_a_router_that_only_ranks_subjects_scores_well_pooled_and_like_a_coin_inside_each():
    """Pooled over many subjects, a score that is each subject's hardness ranks well; inside a
    subject it is a coin, and on a few subjects at a time (as a set of 16 unseen subjects is) it
    keeps only what those few subjects differ by."""
    from research.crossval import subject_draws, within_subjects

    made = []
    for subject in range(30):
        hardness = subject / 29  # the share of this subject's questions the edge gets wrong
        for q in range(40):
            made.append(RoutingRow(f"s{subject} q{q}", "mmlu", f"mmlu/s{subject}", float(q >= 40 * hardness), 1.0, 0.0))
    weak, strong = np.array([r.weak for r in made]), np.array([r.strong for r in made])
    by_subject = np.array([int(r.group.removeprefix("mmlu/s")) for r in made], dtype=float)
    pooled = measure(by_subject, weak, strong).apgr
    few = subject_draws(by_subject, made, subjects=3, draws=200)
    assert pooled > 0.6
    assert abs(within_subjects(by_subject, made) - 0.5) < 1e-9  # every question of a subject ties
    assert few.low < few.mean < pooled and few.low < few.high
    everything = subject_draws(by_subject, made, subjects=30, draws=3)
    assert everything.mean == everything.low == everything.high == pooled
