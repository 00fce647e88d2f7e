"""The API description at /openapi.json, fuzzed with schemathesis: no 5xx, every error in its documented shape."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.conftest import APP_KEYS, GatewayProcess, gateway_config

FUZZ_POLICY = """
app: alpha
rules:
  - name: cloud
    route: cloud
"""


@pytest.fixture(scope="module")
def fuzz_gateway(upstream, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "alpha.yaml").write_text(FUZZ_POLICY)  # generated bodies go to the fast fake cloud
    config = gateway_config(upstream.url, tmp)
    config["apps"][0]["policy"] = str(tmp / "alpha.yaml")
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


@pytest.fixture(scope="module")
def api(fuzz_gateway):
    return schemathesis.openapi.from_url(fuzz_gateway.url + "/openapi.json")


schema = schemathesis.pytest.from_fixture("api")


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_gets_a_server_error_and_every_error_is_openai_shaped(case, fuzz_gateway):
    response = case.call(headers={"authorization": f"Bearer {APP_KEYS['alpha']}"}, timeout=30)
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        documented = case.operation.definition.raw["responses"].get(str(response.status_code), {}).get("content", {})
        if "text/html" in documented:  # a page for a browser (the dashboard's key page)
            assert response.headers["content-type"][0].startswith("text/html") and "<form" in response.text
            return
        if case.path.startswith("/v1/messages"):  # Anthropic's API, Anthropic's error shape
            body = response.json()
            assert body["type"] == "error" and set(body["error"]) == {"type", "message"} and body["error"]["message"]
            return
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["message"]
