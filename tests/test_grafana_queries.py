"""Every query of the Grafana dashboard renders: a real Prometheus (Debian's `prometheus`) scrapes a
running gateway on loopback that has answered on the edge and in the cloud (the fake provider),
from its response cache and with a refusal, and each query of the dashboard, its variables filled
in as Grafana fills them, is evaluated through Prometheus' HTTP API and returns at least one
series. A query Prometheus cannot parse is a 400 with the parser's words, shown here.

Without `prometheus` installed this skips (under CI=true it fails)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from gateway.bench.ports import free_port
from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config
from tests.test_metrics_reference import CACHING, DASHBOARD, TIME_SERVER, call_a_tool

SCRAPE_S = 0.5  # Prometheus' shortest practical interval: two samples a second, for rate()
# Grafana's own variables, as a dashboard open on the last hour with this scrape interval has them
# ($__rate_interval is at least four scrape intervals: rate() needs two samples in its window).
BUILT_IN = {"__rate_interval": "5s", "__interval": "1s", "__range": "1h"}
VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}|\[\[(\w+)\]\]")
LABEL_VALUES = re.compile(r"^label_values\((?P<metric>[^,]+),\s*(?P<label>\w+)\)$")


def panels(listed: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside a row's `panels` too (a collapsed row keeps its own)."""
    for panel in listed:
        yield panel
        yield from panels(panel.get("panels", []))


def queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(the panel's title, its query) for every target of every panel that has one."""
    return [
        (panel.get("title", ""), target["expr"])
        for panel in panels(dashboard["panels"])
        for target in panel.get("targets", [])
        if target.get("expr")
    ]


def filled(query: str, values: dict[str, str]) -> str:
    """The query as Grafana sends it: each variable replaced by its value; one the dashboard does
    not define is an error here, as it would be an empty panel there."""

    def value(match: re.Match[str]) -> str:
        name = next(g for g in match.groups() if g)
        if name not in values:
            raise AssertionError(f"{query!r} names ${name}, which the dashboard does not define")
        return values[name]

    return VARIABLE.sub(value, query)


def variables(dashboard: dict[str, Any]) -> dict[str, str]:
    """The dashboard's variables at 'All' (their `allValue`), with Grafana's own."""
    values = dict(BUILT_IN)
    for variable in dashboard["templating"]["list"]:
        values[variable["name"]] = variable.get("allValue") or ".*"
    return values


class PrometheusServer:
    """A real Prometheus on a free loopback port, scraping `targets` every SCRAPE_S seconds, its
    data in a temporary folder."""

    def __init__(self, folder: Path, targets: list[str]) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            if os.environ.get("CI") == "true":
                pytest.fail("prometheus is not installed (apt-get install prometheus); CI must run this test")
            pytest.skip("prometheus is not installed (apt-get install prometheus)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = folder / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {
                        "scrape_interval": f"{SCRAPE_S * 1000:.0f}ms",
                        "scrape_timeout": f"{SCRAPE_S * 1000:.0f}ms",
                    },
                    "scrape_configs": [{"job_name": "edgeway", "static_configs": [{"targets": targets}]}],
                }
            )
        )
        self.log_path = folder / "prometheus.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 30) -> PrometheusServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/-/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"prometheus was not ready in {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The series an instant query returns now; AssertionError with Prometheus' words if it
        cannot evaluate it."""
        answer = httpx.get(self.url + "/api/v1/query", params={"query": promql}, timeout=5)
        body = answer.json()
        assert body["status"] == "success", f"{promql!r}: {body.get('errorType')}: {body.get('error')}"
        return list(body["data"]["result"])

    def label_values(self, metric: str, label: str) -> list[str]:
        answer = httpx.get(self.url + f"/api/v1/label/{label}/values", params={"match[]": metric}, timeout=5)
        return list(answer.json()["data"])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@pytest.fixture(scope="module")
def scraped(upstream, tmp_path_factory) -> Iterator[PrometheusServer]:
    """Prometheus scraping a gateway that has answered on the edge (alpha's plain rules), in the
    cloud through the fake provider (beta's policy: a miss, then a hit of its response cache),
    streamed once, refused a request for a model it does not have, and served an MCP tool call."""
    tmp = tmp_path_factory.mktemp("grafana")
    config = gateway_config(upstream.url, tmp, mcp={"servers": [TIME_SERVER]})
    (tmp / "beta.yaml").write_text("tools: {allow: [time.*]}\n" + CACHING)  # (over the one gateway_config writes)
    gateway = GatewayProcess(config, tmp)
    prometheus: PrometheusServer | None = None
    try:
        gateway.wait_ready()
        prometheus = PrometheusServer(tmp, [gateway.url.removeprefix("http://")]).wait_ready()
        alpha, beta = client_for(gateway, "alpha"), client_for(gateway, "beta")
        hi = [{"role": "user", "content": "Hi"}]
        alpha.chat.completions.create(model="auto", messages=hi, max_tokens=2)
        for _ in alpha.chat.completions.create(model="auto", messages=hi, max_tokens=2, stream=True):
            pass
        for _ in range(2):  # a miss, then a hit
            beta.chat.completions.create(model="auto", messages=hi, temperature=0)
        with pytest.raises(openai.NotFoundError):
            alpha.chat.completions.create(model="no-such-model", messages=hi)
        asyncio.run(call_a_tool(gateway.url, APP_KEYS["beta"]))  # the MCP panels' calls
        yield prometheus
    finally:
        if prometheus is not None:
            prometheus.stop()
        gateway.stop()


def test_every_query_of_the_grafana_dashboard_returns_a_series_from_a_real_prometheus(scraped):
    dashboard = json.loads(DASHBOARD.read_text())
    values = variables(dashboard)
    asked = [(title, filled(query, values)) for title, query in queries(dashboard)]
    assert len(asked) >= 23
    empty: list[tuple[str, str]] = asked
    deadline = time.monotonic() + 20  # a rate() has its two samples two scrapes after the traffic
    while empty and time.monotonic() < deadline:
        empty = [(title, query) for title, query in asked if not scraped.query(query)]
        if empty:
            time.sleep(SCRAPE_S)
    assert empty == [], f"no series for these panels' queries:\n{scraped.log()[-2000:]}"


def test_the_dashboard_variables_list_values_from_a_real_prometheus(scraped):
    for variable in json.loads(DASHBOARD.read_text())["templating"]["list"]:
        asked = LABEL_VALUES.match(variable["query"])
        assert asked is not None, f"{variable['name']}: {variable['query']!r} is not label_values(metric, label)"
        deadline = time.monotonic() + 10
        while not (found := scraped.label_values(asked["metric"], asked["label"])) and time.monotonic() < deadline:
            time.sleep(SCRAPE_S)
        assert {"alpha", "beta"} <= set(found)


def test_a_query_one_parenthesis_short_is_refused_with_the_parsers_words(scraped):
    """What the test above would say of a panel one `)` short, as 5 of the dashboard's once were."""
    with pytest.raises(AssertionError, match="bad_data"):
        scraped.query("histogram_quantile(0.5, sum by (le) (rate(edgeway_request_duration_seconds_bucket[5s]))")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is not installed (apt-get install prometheus); CI must run this test")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def test_promtool_parses_every_query_of_the_dashboard(tmp_path):
    """Each query, filled in, as a recording rule `promtool check rules` parses: the syntax alone,
    with no gateway or Prometheus running."""
    dashboard = json.loads(DASHBOARD.read_text())
    values = variables(dashboard)
    rules = [
        {"record": f"dashboard:query_{i}", "expr": filled(q, values)} for i, (_, q) in enumerate(queries(dashboard))
    ]
    (tmp_path / "queries.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run(
        [promtool(), "check", "rules", str(tmp_path / "queries.yml")], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_promtool_passes_the_deployments_prometheus_config():
    """compose's Prometheus config (configs/deploy/prometheus.yml), as `promtool` checks it."""
    checked = subprocess.run(
        [promtool(), "check", "config", "--syntax-only", str(DASHBOARD.parents[2] / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
