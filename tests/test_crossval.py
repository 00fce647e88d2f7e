"""The evaluation is honest by construction: no group (an MMLU subject, a prompt) is ever on both
sides of a fold, and the metrics are RouteLLM's."""

from __future__ import annotations

import numpy as np

from classifiers.crossval import RoutingRow, calibration, measure, mmlu_folds, out_of_fold, random_measure


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


def test_a_threshold_keeps_its_share_on_the_edge_and_says_what_it_recovers():
    rng = np.random.default_rng(3)
    scores = rng.random(1000)
    weak, strong = (scores < 0.5).astype(float), np.ones(1000)  # the edge fails exactly the top half
    table = calibration(scores, weak, strong)
    for edge, threshold, recovered in table:
        assert abs(float((scores < threshold).mean()) - edge) < 0.002
        expected = 1.0 if edge <= 0.5 else (1 - edge) / 0.5  # the cloud's share of the hard half
        assert abs(recovered - expected) < 0.01


def test_the_length_weight_is_the_one_with_the_best_mean_apgr_over_the_sources():
    from classifiers.crossval import KINDS, LENGTH_WEIGHTS, OutOfFold

    rng = np.random.default_rng(0)
    made, words, lengths = {}, {}, {}
    for kind in KINDS:
        n = 200
        length = rng.random(n) * 5
        gain = (rng.random(n) < length / 5).astype(float)  # longer prompts gain more from the cloud
        made[kind] = [RoutingRow(f"{kind}{i}", kind, f"{kind}{i}", 1 - g, 1.0, g) for i, g in enumerate(gain)]
        words[kind] = rng.normal(size=n)  # a words term that knows nothing
        lengths[kind] = length
    oof = OutOfFold(made, words, lengths)
    mean = {w: np.mean([oof.measure(k, oof.scores(k, w)).apgr for k in KINDS]) for w in LENGTH_WEIGHTS}
    assert oof.best_length_weight() == max(mean, key=mean.__getitem__) == max(LENGTH_WEIGHTS)
    assert mean[0.0] < mean[max(LENGTH_WEIGHTS)]
