"""`edgeway bench ladder`: what its figures mean, on folds small enough to work out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.bench.folds import RoutingRow
from gateway.bench.ladder import LEVELS, Step, points, random_points, report
from gateway.cli import main


def test_a_cut_keeping_a_share_of_the_upper_models_quality_sends_the_least_up_and_prices_the_rest():
    # the lower model answers half the prompts as well as the upper one: the upper one's quality is
    # 1, the lower's 0.5; keeping 90% of it recovers 80% of the gap, two rows of four that gain
    weak, strong = np.array([0.0, 0.0, 1.0, 1.0]), np.ones(4)
    oracle = points(strong - weak, weak, strong, price_ratio=0.1)
    assert [p.level for p in oracle] == list(LEVELS)
    assert oracle[0].upper_share == pytest.approx(0.4)  # 0.8 of the way through the two that gain
    assert oracle[0].cost == pytest.approx(0.4 + 0.6 * 0.1)
    backwards = points(weak - strong, weak, strong, price_ratio=0.1)  # the two that gain last
    assert backwards[0].upper_share == pytest.approx(0.9)
    many_weak, many_strong = np.tile(weak, 100), np.tile(strong, 100)  # random: 80% of the gap at about 80% up
    assert random_points(many_weak, many_strong, 0.1)[0].upper_share == pytest.approx(0.8, abs=0.02)


def test_a_level_the_lower_model_already_keeps_sends_nothing_up():
    weak, strong = np.array([1.0, 1.0, 1.0, 0.0]), np.ones(4)  # the lower model keeps 75% alone
    kept = points(np.zeros(4), weak, strong, price_ratio=0.25)
    assert kept[0].level == 0.90 and kept[0].upper_share > 0
    assert points(np.zeros(4), weak, strong * 0.8, price_ratio=0.25)[0].upper_share == 0.0  # 0.75 >= 0.9 * 0.8
    assert points(np.zeros(4), weak, strong * 0.8, price_ratio=0.25)[0].cost == 0.25


def test_the_report_sets_each_scorer_beside_length_random_and_the_oracle():
    rows = [RoutingRow(f"q{i}", "gsm8k", f"q{i}", float(i % 3 == 0), 1.0, float(i % 3 != 0)) for i in range(30)]
    lengths = np.arange(30, dtype=float)
    step = Step("gsm8k", "mid", "top", 0.06, from_edge=False)
    lines = report(step, rows, {"prompt length": lengths, "knows": -lengths % 3})
    table = [line for line in lines if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in table[1:]] == [
        "| ---",
        "| prompt length",
        "| knows",
        "| random (mean of 200 seeds)",
        "| oracle",
    ]
    knows = next(line for line in table if line.startswith("| knows"))
    # it sends up only prompts the lower model misses: 90% of the upper one's quality (85% of the
    # gap) at 17 of 30 sent up, the other 13 at 0.06 of the price
    assert "| 57%, 0.59 |" in knows


def test_the_ladder_bench_takes_only_its_own_options(capsys):
    assert main(["bench", "ladder", "--repeat", "2"]) == 2
    assert "takes no --repeat" in capsys.readouterr().err
    assert main(["bench", "edge", "--reading"]) == 2
    assert "--reading goes with ladder" in capsys.readouterr().err


def test_the_benchs_reading_is_the_score_the_edge_computes_when_it_reads_first():
    """`--reading` scores the same bounded reading that a request read first is scored on."""
    import asyncio

    from edge_runtime import EdgeEngine, EdgeModelConfig, Sampling
    from edge_runtime.reading import BUNDLED_PROBES, Gate, find_probe, gguf_digest
    from gateway.bench.ladder import reading_scores

    long = (  # its last 128 tokens read apart from the rest: 0.34 bounded, 0.15 read whole
        "Prove, step by step and rigorously, the following theorem about prime numbers and their "
        "distribution. " + "Some background notes follow. " * 40 + "Thanks!"
    )
    prompts = ["What is 2 + 2?", long, "Prove that there are infinitely many primes."]
    rows = [RoutingRow(p, "alpaca_eval", p, 0.0, 0.5, 0.5) for p in prompts]
    bench = reading_scores(rows, bound=128)
    engine = EdgeEngine(EdgeModelConfig(n_ctx=2048))
    engine.load()
    try:
        probe = find_probe(gguf_digest(engine.gguf_path), [BUNDLED_PROBES])
        assert probe is not None

        async def served(prompt: str) -> float | None:
            tokens = engine.tokenize_chat([{"role": "user", "content": prompt}])[-128:]
            generation = engine.submit_tokens(
                tokens, Sampling(max_tokens=1, temperature=0), gate=Gate(probe, lambda _: False)
            )
            return await generation.reading()

        gateway = [asyncio.run(served(p)) for p in prompts]
    finally:
        engine.close()
    assert len(set(np.round(bench, 6))) == 3  # three prompts, three readings
    # llama.cpp's kernels round differently with a step's size (a prompt read in one step or in
    # chunks, the pacer's choice): over 40 AlpacaEval instructions the served score differed from
    # the one-step reading by 0.007 (sd; 0.03 at most), where the scores spread with sd 0.21
    assert bench == pytest.approx(gateway, abs=0.05)
