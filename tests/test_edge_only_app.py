"""An app whose policy keeps it off the cloud (`allow_cloud: false`), as its team and its operator
meet it: `/v1/models` lists only the models it may use, and it has no all-cloud counterfactual,
since it can never use a cloud model: its ledger rows have none, `/api/usage` reports no savings
for it (the dashboard's headline reads those totals), and `/metrics` counts no savings for it;
beside it, an app with the cloud keeps its counterfactual and its savings."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config

ADMIN = "admin-key-0123456789"
LOCAL_KEY = "local-key-0123456789"
LOCAL = """
app: local
allow_cloud: false
rules:
  - name: edge-only
    route: edge
    fallback: none
"""
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def gateway_with_a_local_app(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    """alpha (the plain rules: the edge first, the cloud its counterfactual) and local (edge only),
    each having answered on the edge."""
    tmp = tmp_path_factory.mktemp("edge-only")
    (tmp / "local.yaml").write_text(LOCAL)
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN)
    config["apps"] = [
        {"name": "alpha", "key": APP_KEYS["alpha"]},
        {"name": "local", "key": LOCAL_KEY, "policy": str(tmp / "local.yaml")},
    ]
    process = GatewayProcess(config, tmp)
    try:
        process.wait_ready()
        for client in (local_client(process), client_for(process, "alpha")):
            answered = client.chat.completions.with_raw_response.create(model="auto", messages=HI, max_tokens=2)
            assert answered.headers["x-edgeway-route"] == "edge"
        yield process
    finally:
        process.stop()


def local_client(gateway: GatewayProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=LOCAL_KEY, max_retries=0)


def usage(gateway: GatewayProcess, key: str, **params: str) -> dict:
    return httpx.get(gateway.url + "/api/usage", params=params, headers={"authorization": f"Bearer {key}"}).json()


def test_the_model_list_of_an_edge_only_app_has_only_what_it_may_use(gateway_with_a_local_app):
    local = local_client(gateway_with_a_local_app)
    assert {m.id: m.owned_by for m in local.models.list().data} == {
        "auto": "edgeway-router",
        "smollm2": "edgeway-edge",
    }
    assert local.models.retrieve("smollm2").owned_by == "edgeway-edge"
    with pytest.raises(openai.NotFoundError) as caught:
        local.models.retrieve("gpt-fake")
    assert caught.value.code == "model_not_found"
    # an app that may use the cloud still sees it all
    alpha = client_for(gateway_with_a_local_app, "alpha")
    assert {"gpt-fake", "claude-fake", "smollm2"} <= {m.id for m in alpha.models.list().data}
    assert alpha.models.retrieve("gpt-fake").owned_by == "edgeway-cloud"


def test_an_edge_only_app_has_no_counterfactual_and_saves_nothing_against_a_cloud_it_cannot_use(
    gateway_with_a_local_app,
):
    local = usage(gateway_with_a_local_app, LOCAL_KEY)
    (row,) = local["recent"]
    assert row["route"] == "edge" and row["counterfactual_usd"] is None
    totals = local["totals"]
    assert (totals["counterfactual_usd"], totals["savings_usd"], totals["savings_pct"]) == (None, None, None)
    # alpha's edge answer is counted against its cloud model, as before
    alpha = usage(gateway_with_a_local_app, APP_KEYS["alpha"])["totals"]
    assert alpha["counterfactual_usd"] > 0 and alpha["savings_pct"] == 100.0
    # the admin's view of both: the savings are alpha's alone
    both = usage(gateway_with_a_local_app, ADMIN, group_by="app")
    assert both["totals"]["counterfactual_usd"] == pytest.approx(alpha["counterfactual_usd"])
    assert {g["key"]: g["savings_usd"] for g in both["groups"]} == {"alpha": alpha["savings_usd"], "local": None}


def test_metrics_count_no_counterfactual_or_savings_for_an_edge_only_app(gateway_with_a_local_app):
    text = httpx.get(gateway_with_a_local_app.url + "/metrics").text
    counted: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        if family.name in ("edgeway_counterfactual_usd", "edgeway_savings_usd"):
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    key = (family.name, sample.labels["app"])
                    counted[key] = counted.get(key, 0.0) + sample.value
    assert counted[("edgeway_savings_usd", "alpha")] > 0
    assert counted.get(("edgeway_savings_usd", "local"), 0.0) == 0.0
    assert counted.get(("edgeway_counterfactual_usd", "local"), 0.0) == 0.0
