"""A ladder learns each step from the app's own traffic: a shadow sample of a request a ladder
routed sets the model of the step next to the one that served beside it (up, or down from the
top) and the judge compares the two; `edgeway router fit` fits each step between two cloud models
on those comparisons, installs it only when it ranks later comparisons better than the step's
router in use, and the climb then scores that step with it. Fake tiers and a deterministic judge."""

from __future__ import annotations

import asyncio
import io
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from gateway import fit as fit_command
from gateway.cli import main
from gateway.config import load_config
from policies.policy import Models, parse_policy
from router.caller import Caller
from router.comparisons import Comparisons, StepComparison
from router.decision import StepScorer
from router.documents import SqliteDocuments
from router.installed import InstalledRouters
from router.ladder import step_key
from router.ledger import MemoryStore, UsageRow, open_store
from router.policy_rules import PolicyRules
from router.pricing import Price
from router.request import parse_chat_request
from router.routing import Router
from router.served import ServedRequest, ShadowPolicy
from router.shadow import Shadower
from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config
from tests.fakes import FakeTier, FixedComplexity
from tests.test_shadow import CLOUD_SAYS, EDGE_SAYS, Judge

LADDER = """
app: t
defaults: {edge: edge, cloud: small}
router: {edge_reading: never}
rules:
  - name: climb
    route: auto
    ladder: [edge, small, large]
"""
SHADOW = ShadowPolicy(sample=1.0, judge="judge", daily_usd=5.0, edge="edge", cloud="small")


def shadowed(served_by: str, question: str) -> Shadower:
    """A request the ladder routed, answered by `served_by`, shadowed: the large model answers
    as the judge's "cloud" does, the small one as its other."""
    models = {
        "edge": FakeTier("edge", "edge", text=EDGE_SAYS),
        "small": FakeTier("small", "cloud", text=EDGE_SAYS),
        "large": FakeTier("large", "cloud", text=CLOUD_SAYS),
        "judge": Judge(),
    }
    prices = {"small": Price(1e-7, 1e-7), "large": Price(1e-6, 2e-6), "judge": Price(1e-5, 1e-5)}
    store = MemoryStore()
    router = Router(models, FixedComplexity(0.9), prices, store)  # type: ignore[arg-type]
    policy = parse_policy(LADDER, Models(("edge",), ("small", "large")))
    request = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": question}]})
    signals, decision = router.decide(request, Caller("t", PolicyRules(lambda: policy)))
    answer = CLOUD_SAYS if served_by == "large" else EDGE_SAYS
    served = ServedRequest("req-1", "t", request, signals, decision, "cloud", served_by, answer)
    shadower = Shadower(router, Comparisons(), store, draw=lambda: 0.0)

    async def go() -> None:
        shadower.consider(served, SHADOW)
        await shadower.drain()

    asyncio.run(go())
    return shadower


def test_a_shadow_sets_the_next_model_up_beside_the_one_that_served():
    shadower = shadowed("small", "What is the capital of France? [judge: cloud]")
    (step,) = shadower.comparisons.steps()
    assert (step.lower, step.upper, step.served, step.verdict) == ("small", "large", "small", "upper")
    assert step.prompt_tokens > 0 and step.judge_model == "judge" and step.shadow_usd > 0
    assert shadower.comparisons.comparisons() == []  # no edge-cloud comparison was made of it


def test_at_the_top_of_the_ladder_the_shadow_is_the_model_below():
    shadower = shadowed("large", "What is the capital of France? [judge: edge]")
    (step,) = shadower.comparisons.steps()
    # the pair in the ladder's order, whichever served; the judge preferred the small one's answer
    assert (step.lower, step.upper, step.served, step.verdict) == ("small", "large", "large", "lower")


# --- fitting a step ---------------------------------------------------------------------------
STEP_POLICY = """
app: alpha
defaults: {edge: smollm2, cloud: gpt-fake}
router: {edge_reading: never}
rules:
  - name: climb
    route: auto
    ladder: [smollm2, gpt-fake, claude-fake]
"""


@pytest.fixture
def deployment(tmp_path: Path, upstream) -> Path:
    (tmp_path / "alpha.yaml").write_text(STEP_POLICY)
    config = gateway_config(upstream.url, tmp_path, store=f"sqlite:///{tmp_path / 'ledger.db'}")
    config["apps"] = [{"name": "alpha", "key": "alpha-key-0123456789", "policy": str(tmp_path / "alpha.yaml")}]
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def short_prompts_need_the_large_model(n: int = 400, seed: int = 3) -> list[StepComparison]:
    """Labels the length prior ranks backwards: the upper model wins on short prompts only."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        tokens = rng.randint(10, 2000)
        wins = rng.random() < (0.9 if tokens < 800 else 0.2)
        rows.append(
            StepComparison(
                request_id=f"r{i}",
                app="alpha",
                rule="climb",
                lower="gpt-fake",
                upper="claude-fake",
                served="gpt-fake",
                verdict="upper" if wins else rng.choice(["lower", "tie", "tie"]),
                prompt_tokens=tokens,
                judge_model="gpt-fake",
                ts=1_000_000 + i,
            )
        )
    return rows


def test_a_step_is_fitted_installed_and_then_scores_the_climb(deployment: Path):
    documents = SqliteDocuments(str(deployment.parent / "ledger.db"))
    store = Comparisons(documents)
    for row in short_prompts_need_the_large_model():
        store.add_step(row)
    out = io.StringIO()
    config = load_config(str(deployment), secrets=False)
    assert fit_command.run(config, "alpha", fit_command.Target(0.9), write=True, out=out) == 0, out.getvalue()
    said = out.getvalue()
    assert "alpha: step gpt-fake -> claude-fake: fitted on the earlier 280" in said
    assert "installed as version 1" in said
    # the cost-quality curve: more of the upper model's quality kept, fewer requests on the lower one
    curve = [line for line in said.splitlines() if line.startswith("the curve")][-1]
    points = [(int(q), float(share)) for q, _, share in re.findall(r"(\d+)%: ([\d.]+), ([\d.]+)%", curve)]
    assert [q for q, _ in points] == [80, 90, 95, 99, 100]
    assert all(a[1] >= b[1] for a, b in zip(points, points[1:], strict=False)) and points[0][1] > points[-1][1]
    installed = InstalledRouters(documents)
    step = installed.active(step_key("alpha", "gpt-fake", "claude-fake"))
    assert step is not None and step.version == 1 and step.threshold is not None
    # the climb now scores that step with the fitted router: a short prompt climbs to the top
    models = {
        "smollm2": FakeTier("smollm2", "edge"),
        "gpt-fake": FakeTier("gpt-fake", "cloud"),
        "claude-fake": FakeTier("claude-fake", "cloud"),
    }
    router = Router(models, FixedComplexity(0.9), store=MemoryStore(), routers=installed)
    policy = parse_policy(STEP_POLICY, Models(("smollm2",), ("gpt-fake", "claude-fake")))
    request = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": "Name a colour."}]})
    _, decision = router.decide(request, Caller("alpha", PolicyRules(lambda: policy)))
    last = decision.auto.climb[-1]
    assert (last.scorer, last.router_version) == (StepScorer.PROMPT_LENGTH, 1)
    assert decision.targets[0] == "claude-fake", decision.reasons
    # and rolled back, the step is the prompt's length again
    args = [
        "router",
        "fit",
        "--config",
        str(deployment),
        "--app",
        "alpha",
        "--rollback",
        "--step",
        "gpt-fake:claude-fake",
    ]
    assert main(args) == 0
    assert installed.active(step_key("alpha", "gpt-fake", "claude-fake")) is None
    assert main(args[:-2] + ["--step", "gpt-fake"]) == 2 and main(args[:-3] + ["--step", "a:b"]) == 2


def test_the_curve_prices_each_point_and_a_cost_target_puts_the_threshold(deployment: Path):
    """Each model is priced at its mean cost of an answered request in the app's ledger (its own
    requests and shadow answers; a cache hit, free, left out): the curve says what 1,000 requests
    cost at each point, and `--cost-per-1k` takes the most quality within that cost."""
    store = Comparisons(SqliteDocuments(str(deployment.parent / "ledger.db")))
    for row in short_prompts_need_the_large_model():
        store.add_step(row)
    config = load_config(str(deployment), secrets=False)
    ledger = open_store(config.store)
    for i in range(4):
        ledger.append(UsageRow(f"lower{i}", "alpha", route="cloud", model="gpt-fake", cost_usd=0.001))
        ledger.append(UsageRow(f"upper{i}", "alpha", route="cloud", model="claude-fake", cost_usd=0.01, kind="shadow"))
    ledger.append(UsageRow("hit", "alpha", route="cloud", model="claude-fake", cost_usd=0.0, cache="hit"))
    ledger.flush()
    ledger.close()

    def fitted(target: fit_command.Target) -> str:
        out = io.StringIO()
        assert fit_command.run(config, "alpha", target, write=False, out=out) == 0, out.getvalue()
        return out.getvalue()

    said = fitted(fit_command.Target(0.9))
    curve = [line for line in said.splitlines() if line.startswith("the curve")][-1]
    points = [
        (int(q), float(share) / 100, float(usd))
        for q, share, usd in re.findall(r"(\d+)%: [\d.]+, ([\d.]+)%, \$([\d.]+)", curve)
    ]
    assert [q for q, _, _ in points] == [80, 90, 95, 99, 100]
    for _, share, usd in points:  # $1 per 1,000 all on gpt-fake, $10 all on claude-fake
        assert usd == pytest.approx(1000 * (share * 0.001 + (1 - share) * 0.01), abs=0.01)

    budget = (points[0][2] + points[-1][2]) / 2
    said = fitted(fit_command.Target(usd_per_1k=budget))
    kept = r"keeps ([\d.]+)% of claude-fake-quality answers \(target \$[\d.]+ per 1,000\)"
    chosen = re.search(kept + r" with [\d.]+% of these requests on gpt-fake, \$([\d.]+) per 1,000", said)
    assert chosen is not None, said
    quality, usd = float(chosen.group(1)), float(chosen.group(2))
    assert usd <= budget + 0.001  # (printed to 4 digits)
    assert all(quality >= q for q, _, cost in points if cost <= budget)
    said = fitted(fit_command.Target(usd_per_1k=0.5))  # less than all of it on the lower model costs
    assert "nothing on this step costs as little as $0.5 per 1,000" in said
    assert "100.0% of these requests on gpt-fake" in said
    refused = ["router", "fit", "--config", str(deployment), "--app", "alpha", "--cost-per-1k", "-1"]
    assert main(refused) == 2


def test_a_step_with_too_few_comparisons_is_not_fitted(deployment: Path):
    store = Comparisons(SqliteDocuments(str(deployment.parent / "ledger.db")))
    for row in short_prompts_need_the_large_model(20):
        store.add_step(row)
    out = io.StringIO()
    config = load_config(str(deployment), secrets=False)
    assert fit_command.run(config, "alpha", fit_command.Target(0.9), write=True, out=out) == 1
    assert "step gpt-fake -> claude-fake: not enough yet" in out.getvalue()


# --- on a running gateway ----------------------------------------------------------------------
SHADOWED = """
app: alpha
defaults: {edge: smollm2, cloud: gpt-fake}
router: {edge_reading: never}
shadow: {sample: 1.0, judge: gpt-fake, daily_usd: 5}
rules:
  - name: climb
    route: auto
    ladder: [smollm2, gpt-fake, gpt-large]
    thresholds: [0.0, 0.99]
"""


@pytest.fixture(scope="module")
def shadowing(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("ladder-shadow")
    (tmp / "alpha.yaml").write_text(SHADOWED)
    config = gateway_config(upstream.url, tmp)
    large = {"name": "gpt-large", "provider_model": "openai/gpt-4o", "api_key": "sk-fake",
             "api_base": upstream.url + "/v1", "timeout_s": 30}  # fmt: skip
    config["cloud"]["models"].append(large)
    config["apps"] = [{"name": "alpha", "key": APP_KEYS["alpha"], "policy": str(tmp / "alpha.yaml")}]
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def test_a_served_request_is_compared_with_the_next_model_up_and_reported_by_step(shadowing, upstream):
    upstream.reset()
    answer = client_for(shadowing).chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": "Name three primary colours."}], max_tokens=8
    )
    assert answer.headers["x-edgeway-model"] == "gpt-fake"
    headers = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
    deadline = time.monotonic() + 30
    while True:
        steps = httpx.get(shadowing.url + "/api/quality", headers=headers).json()["steps"]
        if steps or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    (step,) = steps
    assert (step["lower"], step["upper"], step["comparisons"]) == ("gpt-fake", "gpt-large", 1)
    assert step["router"]["version"] == 0 and step["shadow_usd"] >= 0
    sent = [r.body["model"] for r in upstream.requests]
    assert "gpt-4o" in sent  # the next model up answered the same request, in the shadow
