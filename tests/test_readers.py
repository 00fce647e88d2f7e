"""A reader: an edge model loaded to read prompts for the apps whose router names it
(`router: {reader: NAME}`), never to answer. Here the reader is a second GGUF (the bundled model cut
to two layers) with a probe of its own, which finds every prompt equally hard: the app's router
orders the edge and the cloud by that reading, not by the answering model's, and the answering
model answers what the reading keeps on the edge from a prefill of its own."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest

from edge_runtime.reading import Probe, ReadingKind, gguf_digest
from policies.policy import Models, parse_policy
from policies.yaml_source import FileError
from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config

READING = 4.0  # what the reader's probe scores every prompt: sigmoid(4) = 0.982 with the combination below
POLICY = """
app: {app}
defaults: {{edge: smollm2, cloud: gpt-fake}}
router: {{edge_reading: always, reader: skim, threshold: {threshold}}}
rules:
  - name: decide
    route: auto
"""


@pytest.fixture(scope="module")
def reading(upstream, tmp_path_factory, routing_edge_gguf: Path):
    """alpha's threshold (0.5) is below the reader's score, so the cloud answers; beta's (0.99) is
    above it, so the edge does."""
    tmp = tmp_path_factory.mktemp("readers")
    probes = tmp / "probes"
    n_vocab = 49152
    combine = (0.0, 1.0, 0.0)  # the score is the reading's alone: the text prior is left out
    Probe(
        ReadingKind.LAST, np.zeros(n_vocab, np.float32), READING, gguf_digest(routing_edge_gguf), "small", combine
    ).save(probes)
    for app, threshold in (("alpha", 0.5), ("beta", 0.99)):
        (tmp / f"{app}-reads.yaml").write_text(POLICY.format(app=app, threshold=threshold))
    config = gateway_config(upstream.url, tmp)
    config["edge"]["models"].append({"name": "skim", "gguf": str(routing_edge_gguf), "n_ctx": 1024, "role": "reader"})
    config["edge"]["probes"] = str(probes)
    apps = ("alpha", "beta")
    config["apps"] = [{"name": a, "key": APP_KEYS[a], "policy": str(tmp / f"{a}-reads.yaml")} for a in apps]
    process = GatewayProcess(config, tmp).wait_ready()
    try:
        yield process
    finally:
        process.stop()


def route(gateway: GatewayProcess, app: str, text: str) -> dict:
    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
    answer = httpx.post(gateway.url + "/v1/route", json=body, headers={"authorization": f"Bearer {APP_KEYS[app]}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["decision"]


def test_the_reader_decides_and_route_names_it(reading, upstream):
    for app, first in (("alpha", "gpt-fake"), ("beta", "smollm2")):
        decision = route(reading, app, "Say hi.")
        assert decision["auto"]["reader"] == "skim" and decision["auto"]["reading"] == pytest.approx(READING)
        assert decision["targets"][0] == first
        assert any(r.startswith(f"reader skim reading {READING:.3f}") for r in decision["reasons"])
    assert upstream.requests == []  # a dry run reads on the edge and calls no cloud
    assert "edge model skim reads prompts first with its last probe" in reading.log()


def test_the_edge_answers_what_the_reading_keeps_and_the_cloud_the_rest(reading, upstream):
    for app, route_to, model in (("alpha", "cloud", "gpt-fake"), ("beta", "edge", "smollm2")):
        raw = client_for(reading, app).chat.completions.with_raw_response.create(
            model="auto", max_tokens=4, messages=[{"role": "user", "content": "Say hi."}]
        )
        assert (raw.headers["x-edgeway-route"], raw.headers["x-edgeway-model"]) == (route_to, model)
        assert float(raw.headers["x-edgeway-score"]) == pytest.approx(1 / (1 + np.exp(-READING)), abs=1e-3)
        assert raw.parse().choices[0].message.content is not None


def test_a_reader_answers_nothing(reading):
    client = client_for(reading)
    assert "skim" not in [m.id for m in client.models.list().data]
    answer = httpx.post(
        reading.url + "/v1/chat/completions",
        json={"model": "skim", "messages": [{"role": "user", "content": "Say hi."}]},
        headers={"authorization": f"Bearer {APP_KEYS['alpha']}"},
    )
    assert answer.status_code in (400, 404) and answer.json()["error"]["message"]


def test_a_policy_that_routes_to_a_reader_or_reads_with_an_unknown_model_is_refused():
    models = Models(edge=("smollm2",), cloud=("gpt-fake",), readers=("skim",))
    with pytest.raises(FileError, match="'skim' is a reader: it reads prompts and never answers"):
        parse_policy("rules:\n  - name: r\n    route: skim\n", models)
    with pytest.raises(FileError, match="unknown edge model 'gemma'"):
        parse_policy("router: {reader: gemma}\nrules:\n  - name: r\n    route: auto\n", models)
    parse_policy("router: {reader: skim}\nrules:\n  - name: r\n    route: auto\n", models)
    parse_policy("router: {reader: smollm2}\nrules:\n  - name: r\n    route: auto\n", models)


def test_what_a_reader_costs_is_benched_beside_routing_only(capsys):
    """`edgeway bench routing --reader GGUF` times a reader beside the bundled model; elsewhere the
    option is refused."""
    from gateway.cli import main

    assert main(["bench", "classify", "--reader", "bundled:smollm2-135m"]) == 2
    assert "--reader goes with routing" in capsys.readouterr().err


LADDER = """
app: t
router: {edge_reading: always, reader: skim}
rules:
  - name: climb
    route: auto
    ladder: [edge, mid, top]
    thresholds: [0.5, 0.5]
"""


@pytest.mark.parametrize(("reading", "served"), [(-4.0, "edge"), (4.0, "mid")])
def test_on_a_ladder_the_reader_decides_the_step_from_the_edge_and_the_edge_answers_from_its_own_prefill(
    reading, served
):
    """The reader reads and stops; its reading decides between the edge and the step above it (the
    rest of the climb by length: a short prompt stays on the cheaper cloud model)."""
    import asyncio

    from policies.policy import Models
    from router.caller import Caller
    from router.ledger import MemoryStore
    from router.policy_rules import PolicyRules
    from router.request import parse_chat_request
    from router.routing import Router
    from tests.fakes import FakeReader, FakeTier, FixedComplexity

    models = Models(("edge",), ("mid", "top"), ("skim",))
    policy = parse_policy(LADDER, models)
    skim = FakeReader("skim", reading=reading, combine=(0.0, 1.0, 0.0))
    tiers = {"edge": FakeTier("edge", "edge"), "mid": FakeTier("mid", "cloud"), "top": FakeTier("top", "cloud")}
    r = Router(tiers, FixedComplexity(0.5), store=MemoryStore(), readers={"skim": skim})
    ask = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": "Say hi."}]})
    routed = asyncio.run(r.complete(ask, Caller("t", PolicyRules(lambda: policy))))
    assert routed.model.name == served and skim.kept == [False]  # the reader never answers
    assert routed.decision.auto is not None and routed.decision.auto.reader == "skim"
    assert routed.decision.auto.reading == pytest.approx(reading)
    assert any(reason.startswith(f"reader skim reading {reading:.3f}") for reason in routed.decision.reasons)
