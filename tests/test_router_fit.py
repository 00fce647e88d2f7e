"""A router fitted to this deployment: `edgeway router fit` on comparisons, and `shadow replay`.

The fit finds the largest complexity threshold that keeps the target quality, recovers one
planted in seeded comparisons, says how many more comparisons it needs when there are too few,
and with `--write` changes that one number in a commented policy file, every other byte kept.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
import yaml

from gateway import fit as fit_command
from gateway.cli import main
from gateway.config import load_config
from router.comparisons import Comparison, Comparisons
from router.documents import SqliteDocuments
from router.quality import fit, needed_for, wilson
from tests.conftest import gateway_config

POLICY = """\
# support-bot: tuned by hand, for now
app: alpha
defaults: {edge: smollm2, cloud: gpt-fake}   # the bundled model, the fake cloud

shadow: {sample: 1.0, judge: gpt-fake, daily_usd: 5}
rules:
  - name: private
    when: {pii: any}
    route: edge
    fallback: none        # never the cloud
  - name: hard
    when: {complexity: {gte: 0.8}}   # <- router fit moves this
    route: cloud
  - name: rest
    route: edge
    fallback: cloud
"""


def comparison(complexity: float, verdict: str, served: str = "edge") -> Comparison:
    return Comparison(
        request_id=f"r{random.random()}",
        app="alpha",
        rule="rest",
        complexity=complexity,
        served=served,
        edge_model="smollm2",
        cloud_model="gpt-fake",
        verdict=verdict,
        judge_model="gpt-fake",
    )


def planted(n: int = 400, at: float = 0.6, seed: int = 7) -> list[Comparison]:
    """The edge is as good below `at` and loses above it; a few are unjudged."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        c = rng.random()
        rows.append(
            comparison(c, "unjudged" if rng.random() < 0.05 else ("cloud" if c >= at else rng.choice(["edge", "tie"])))
        )
    return rows


def test_the_fit_recovers_a_planted_threshold_with_its_edge_share():
    found = fit(planted(), target=1.0)
    assert found.threshold is not None and 0.58 <= found.threshold <= 0.62
    assert found.quality.value == 1.0 and found.edge_share.low < 0.6 < found.edge_share.high
    looser = fit(planted(), target=0.9)
    assert looser.threshold is not None and looser.threshold > found.threshold  # quality traded for edge share
    assert looser.quality.value is not None and looser.quality.value >= 0.9


def test_the_fit_says_how_many_more_comparisons_it_needs():
    found = fit(planted(n=20), target=0.95)
    assert found.threshold is None and found.needed == needed_for(0.95) == 73
    assert found.more_needed == 73 - found.judged


def test_wilson_intervals_hold_at_the_edges():
    assert wilson(0, 0).low is None
    assert wilson(10, 10).high == 1.0 and 0.69 < wilson(10, 10).low < 0.73
    assert wilson(0, 10).low == 0.0


@pytest.fixture
def deployment(tmp_path: Path, upstream):
    (tmp_path / "alpha.yaml").write_text(POLICY)
    config = gateway_config(upstream.url, tmp_path, store=f"sqlite:///{tmp_path / 'ledger.db'}")
    # Replay and fit are not about timeouts: the shared config's 1 s read timeout once turned a
    # judge call on a busy CI machine into a 'failed' line.
    for model in config["cloud"]["models"]:
        model.update(timeout_s=30, read_timeout_s=30)
    config["apps"] = [{"name": "alpha", "key": "alpha-key-0123456789", "policy": str(tmp_path / "alpha.yaml")}]
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_fit_write_changes_only_the_threshold_in_a_commented_policy_file(deployment: Path):
    store = Comparisons(SqliteDocuments(str(deployment.parent / "ledger.db")))
    for row in planted():
        store.add(row)
    out = io.StringIO()
    config = load_config(str(deployment), secrets=False)
    assert fit_command.run(config, "alpha", fit_command.Target(1.0), write=True, out=out) == 0
    said = out.getvalue()
    assert "route to the edge below complexity 0.6" in said and "rule 'hard' has complexity gte 0.8" in said
    written = (deployment.parent / "alpha.yaml").read_text()
    before, after = POLICY.splitlines(), written.splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1 and after[changed[0]].startswith("    when: {complexity: {gte: 0.6")
    assert after[changed[0]].endswith("}}   # <- router fit moves this")


def test_fit_with_too_few_comparisons_writes_nothing(deployment: Path, capsys):
    assert main(["router", "fit", "--config", str(deployment), "--app", "alpha", "--write"]) == 1
    assert "73 more judged comparisons are needed" in capsys.readouterr().out
    assert (deployment.parent / "alpha.yaml").read_text() == POLICY


def test_shadow_replay_compares_a_file_of_prompts_resumes_and_feeds_the_fit(deployment: Path, upstream, capsys):
    prompts = deployment.parent / "prompts.jsonl"
    prompts.write_text(
        "\n".join(
            [
                json.dumps(
                    {"messages": [{"role": "user", "content": "Name a colour. [judge: cloud]"}], "max_tokens": 4}
                ),
                json.dumps({"prompt": "Name a fruit. [judge: edge]", "max_tokens": 4}),
                json.dumps("Name a tree."),
                "Name a river, in plain text.",
                json.dumps("Call me on +1 415 555 0134."),  # kept local by its rule: never compared
            ]
        )
    )
    assert main(["shadow", "replay", str(prompts), "--config", str(deployment), "--app", "alpha"]) == 0
    out = deployment.parent / "prompts.shadow.jsonl"
    outcomes = [json.loads(line) for line in out.read_text().splitlines()]
    assert [o["outcome"] for o in outcomes] == ["cloud", "edge", "tie", "tie", "skipped"], outcomes
    assert outcomes[-1]["why"] == "kept local" and not upstream.saw_text("555 0134")
    captured = capsys.readouterr()
    assert "5/5" in captured.err  # the progress bar
    upstream.reset()
    assert main(["shadow", "replay", str(prompts), "--config", str(deployment), "--app", "alpha"]) == 0
    assert len(out.read_text().splitlines()) == 5 and upstream.requests == []  # resumed: nothing left to do
    stored = Comparisons(SqliteDocuments(str(deployment.parent / "ledger.db"))).comparisons("alpha")
    assert sorted(c.verdict for c in stored) == ["cloud", "edge", "tie", "tie"]
    assert main(["router", "fit", "--config", str(deployment), "--app", "alpha", "--comparisons", str(out)]) == 1
    assert "69 more judged comparisons are needed" in capsys.readouterr().out
