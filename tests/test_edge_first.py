"""Routing decided by the edge model that will answer, against a real gateway on loopback: the
bundled model reads each prompt of a `route: auto` rule first with its shipped probe, and either
answers from that prefill or hands the request to the (fake) cloud; `/v1/route` reads and stops;
`/v1/feedback` takes the app's word on its own routed requests; `edgeway router fit` installs a
router that ranks the app's later traffic better, and `--rollback` takes it back."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from edge_runtime.gguf import resolve_gguf
from edge_runtime.reading import BUNDLED_PROBES, Probe, ReadingKind, find_probe, gguf_digest
from gateway import fit as fit_command
from gateway.config import load_config
from policies.schema import DEFAULT_READING_TOKENS
from router.comparisons import Comparison, Comparisons
from router.documents import SqliteDocuments
from router.installed import InstalledRouters
from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config

POLICY = """
app: alpha
defaults: {{edge: smollm2, cloud: gpt-fake}}
router: {{edge_reading: always, threshold: {threshold}}}
rules:
  - name: private
    when: {{pii: any}}
    route: edge
    fallback: none
  - name: decide
    route: auto
"""
EASY, HARD = "Say hi.", "Prove that the square root of two is irrational, step by step, in detail."


def start(upstream, tmp: Path, threshold: float) -> GatewayProcess:
    (tmp / "alpha.yaml").write_text(POLICY.format(threshold=threshold))
    config = gateway_config(upstream.url, tmp, store=f"sqlite:///{tmp / 'ledger.db'}")
    config["apps"] = [{"name": "alpha", "key": APP_KEYS["alpha"], "policy": str(tmp / "alpha.yaml")}]
    return GatewayProcess(config, tmp).wait_ready()


@pytest.fixture(scope="module")
def deciding(upstream, tmp_path_factory):
    """A gateway whose threshold sits between the bundled probe's scores of an easy and a hard ask."""
    tmp = tmp_path_factory.mktemp("edge-first")
    process = start(upstream, tmp, 0.5)
    try:
        yield process, tmp
    finally:
        process.stop()


def dry_run(gateway: GatewayProcess, text: str) -> dict:
    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
    answer = httpx.post(gateway.url + "/v1/route", json=body, headers={"authorization": f"Bearer {APP_KEYS['alpha']}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["decision"]


def test_the_bundled_model_ships_its_probe_and_the_gateway_reads_with_it(deciding):
    gateway, _ = deciding
    probe = find_probe(gguf_digest(resolve_gguf("bundled:smollm2-135m")), [])
    assert probe is not None and probe.kind is ReadingKind.LAST and probe.label == "small"
    assert "reads prompts first with its last probe" in gateway.log()


def test_the_dry_run_reads_the_prompt_on_the_edge_and_calls_no_cloud(deciding, upstream):
    gateway, _ = deciding
    decision = dry_run(gateway, HARD)
    assert decision["auto"]["read_first"] and decision["auto"]["reading"] is not None
    assert decision["auto"]["reading_tokens"] == DEFAULT_READING_TOKENS  # at most the prompt's last 128
    assert 0 < decision["score"] < 1 and any("edge reading" in r for r in decision["reasons"])
    assert upstream.requests == []


def test_explain_decides_as_the_dry_run_does_the_edge_reading_included(deciding, upstream):
    """`edgeway explain` runs the stages POST /v1/route runs: the same prompt and policy give the
    same order, score and reading, the edge having read the prompt in both."""
    gateway, tmp = deciding
    (config,) = tmp.glob(f"gateway-{gateway.port}.yaml")
    for text in (EASY, HARD):
        routed = dry_run(gateway, text)
        command = [sys.executable, "-m", "gateway.cli", "explain", "--config", str(config), "--app", "alpha", text]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        explained = json.loads(result.stdout)["decision"]
        assert explained["auto"]["reading"] is not None and any("edge reading" in r for r in explained["reasons"])
        for field in ("rule", "targets", "reasons"):
            assert explained[field] == routed[field], (text, field)
        assert explained["score"] == pytest.approx(routed["score"], abs=1e-6)
    assert upstream.requests == []


def test_each_request_is_answered_where_its_reading_puts_it(deciding, upstream):
    gateway, _ = deciding
    client = client_for(gateway)
    for text in (EASY, HARD):
        score = dry_run(gateway, text)["score"]
        raw = client.chat.completions.with_raw_response.create(
            model="auto", max_tokens=8, messages=[{"role": "user", "content": text}]
        )
        route = raw.headers["x-edgeway-route"]
        assert route == ("cloud" if score >= 0.5 else "edge"), (text, score)
        assert float(raw.headers["x-edgeway-score"]) == pytest.approx(score, abs=1e-3)
        stream = client.chat.completions.with_raw_response.create(
            model="auto", max_tokens=8, stream=True, messages=[{"role": "user", "content": text}]
        )
        assert stream.headers["x-edgeway-route"] == route
        assert "".join(c.choices[0].delta.content or "" for c in stream.parse() if c.choices) or route == "edge"


def test_at_the_extremes_of_the_threshold_everything_goes_one_way(upstream, tmp_path):
    for threshold, route in ((0.0, "cloud"), (1.0, "edge")):
        gateway = start(upstream, tmp_path, threshold)
        try:
            raw = client_for(gateway).chat.completions.with_raw_response.create(
                model="auto", max_tokens=4, messages=[{"role": "user", "content": EASY}]
            )
            assert raw.headers["x-edgeway-route"] == route
        finally:
            gateway.stop()


def test_feedback_is_taken_for_the_apps_own_routed_requests_only(deciding):
    gateway, tmp = deciding
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="auto", max_tokens=4, messages=[{"role": "user", "content": EASY}]
    )
    request_id = raw.headers["x-edgeway-request-id"]
    headers = {"authorization": f"Bearer {APP_KEYS['alpha']}"}
    for _ in range(50):  # the routing record is written off the request's path
        said = httpx.post(gateway.url + "/v1/feedback", json={"request_id": request_id, "score": 0.0}, headers=headers)
        if said.status_code != 404:
            break
    assert said.status_code == 200 and said.json()["recorded"] is True
    unknown = httpx.post(
        gateway.url + "/v1/feedback", json={"request_id": "nope", "preferred": "cloud"}, headers=headers
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "request_id"
    bad = httpx.post(gateway.url + "/v1/feedback", json={"request_id": request_id, "score": 2}, headers=headers)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "score"
    nobody = httpx.post(gateway.url + "/v1/feedback", json={"request_id": request_id, "score": 1})
    assert nobody.status_code == 401
    feedback = SqliteDocuments(str(tmp / "ledger.db")).find("feedback", "alpha")
    assert [d.key for d in feedback] == [request_id]


def test_router_fit_installs_a_router_that_ranks_later_traffic_better_and_rolls_it_back(deciding):
    gateway, tmp = deciding
    store = Comparisons(SqliteDocuments(str(tmp / "ledger.db")))
    for i in range(1200):  # the cloud wins exactly the requests that ask for code (what the prior misses)
        code = i % 3 == 0
        asks = [0.0] * 15
        asks[5] = 1.0 if code else 0.0
        verdict = "cloud" if code else "tie"
        store.add(
            Comparison(
                f"c{i}", "alpha", "decide", 0.5, "edge", "smollm2", "gpt-fake", verdict, "gpt-fake", ts=i, asks=asks
            )
        )
    config = load_config(str(tmp / next(p.name for p in tmp.glob("gateway-*.yaml"))), secrets=False)
    out = io.StringIO()
    assert fit_command.run(config, "alpha", fit_command.Target(0.95), write=True, out=out) == 0, out.getvalue()
    said = out.getvalue()
    assert "installed as version 1" in said and "APGR" in said
    installed = InstalledRouters(SqliteDocuments(str(tmp / "ledger.db")), refresh_s=0)
    assert installed.active("alpha").text.asks["code"] > 0
    out = io.StringIO()
    assert fit_command.rollback(config, "alpha", out) == 0 and "cold-start router" in out.getvalue()
    assert installed.active("alpha") is None


def test_router_probe_fits_and_saves_a_probe_for_a_configured_gguf(tmp_path, upstream):
    config = gateway_config(upstream.url, tmp_path)
    config["edge"]["probes"] = str(tmp_path / "probes")
    path = tmp_path / "gateway.yaml"
    path.write_text(json.dumps(config))
    from gateway.cli import main

    out = io.StringIO()
    from contextlib import redirect_stdout

    with redirect_stdout(out):
        assert main(["router", "probe", "--config", str(path), "--edge", "smollm2", "--limit", "20"]) == 0
    digest = gguf_digest(resolve_gguf("bundled:smollm2-135m"))
    saved = Probe.load(tmp_path / "probes" / f"{digest}.npz")
    assert saved.kind is ReadingKind.LAST and saved.label == "small" and saved.weights.shape == (49152,)
    assert "20/20 prompts" in out.getvalue() and saved.combine[1] > 0
    assert (BUNDLED_PROBES / f"{digest}.npz").exists()
