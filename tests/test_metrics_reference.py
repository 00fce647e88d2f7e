"""What `/metrics` exports, docs/metrics.md says, and the Grafana dashboard queries are one set: a
running gateway's metrics are each documented, and every query of the dashboard names a metric it
exports; compose runs Prometheus and Grafana with that dashboard provisioned."""

from __future__ import annotations

import asyncio
import json
import re
import sys

import httpx
import httpx2
import openai
import pytest
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import APP_KEYS, ROOT, GatewayProcess, client_for, gateway_config

DEPLOY = ROOT / "configs" / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "edgeway.json"
METRIC = re.compile(r"\b(?:edgeway|process)_[a-z0-9_]+")


CACHING = "app: beta\ndefaults: {cloud: gpt-fake}\ncache: {ttl_s: 60}\nrules:\n  - {name: to-cloud, route: cloud}\n"
TIME_SERVER = {"name": "time", "command": [sys.executable, "-m", "mcp_server_time"], "where": "local"}


async def call_a_tool(url: str, key: str) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client,
    ):
        await client.call_tool("time.get_current_time", {"timezone": "UTC"})


@pytest.fixture(scope="module")
def exported(upstream, tmp_path_factory) -> set[str]:
    """The series names a gateway exports once it has answered on both routes, from its response
    cache, refused a request and served an MCP tool call."""
    tmp = tmp_path_factory.mktemp("metrics")
    config = gateway_config(upstream.url, tmp, mcp={"servers": [TIME_SERVER]})
    (tmp / "beta.yaml").write_text("tools: {allow: [time.*]}\n" + CACHING)  # (over the one gateway_config writes)
    process = GatewayProcess(config, tmp)
    try:
        process.wait_ready()
        alpha, beta = client_for(process, "alpha"), client_for(process, "beta")
        alpha.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
        for _ in range(2):  # a miss, then a hit
            beta.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], temperature=0)
        with pytest.raises(openai.NotFoundError):
            alpha.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "Hi"}])
        asyncio.run(call_a_tool(process.url, APP_KEYS["beta"]))
        text = httpx.get(process.url + "/metrics").text
    finally:
        process.stop()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line.startswith(("edgeway_", "process_"))}


def families(names: set[str]) -> set[str]:
    """Series names as their documented names: a histogram's `_bucket`, `_sum` and `_count` are it."""
    return {re.sub(r"_(bucket|sum|count|created)$", "", n) for n in names}


def test_every_exported_metric_is_in_the_reference(exported):
    documented = set(METRIC.findall((ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")))
    missing = sorted(f for f in families(exported) if f not in documented and f"{f}_total" not in documented)
    assert missing == []


def test_the_process_says_its_resident_memory_cpu_time_and_open_file_descriptors(exported):
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"} <= exported


def test_every_query_of_the_grafana_dashboard_names_an_exported_metric(exported):
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    queries += [v["query"] for v in dashboard["templating"]["list"]]
    named = {m for q in queries for m in METRIC.findall(q)}
    assert named and sorted(named - exported) == []
    assert all(p["datasource"]["uid"] == "prometheus" for p in dashboard["panels"])


def test_compose_provisions_prometheus_and_grafana_with_the_dashboard():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    scraped = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())["scrape_configs"][0]["static_configs"][0][
        "targets"
    ]
    assert {t.split(":")[0] for t in scraped} == {"gateway-1", "gateway-2", "edgeway-edge"} <= set(services)
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in services["prometheus"]["volumes"]
    grafana = services["grafana"]["volumes"]
    assert "./grafana/dashboards:/var/lib/grafana/dashboards:ro" in grafana
    source = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yaml").read_text())
    assert source["datasources"][0]["uid"] == "prometheus"
    assert source["datasources"][0]["url"] == "http://prometheus:9090"
