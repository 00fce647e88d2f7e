"""The `edgeway` command as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
import openai

from tests.conftest import ROOT


def edgeway(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_with_no_config_it_serves_the_bundled_model_without_keys_on_loopback(open_gateway):
    client = openai.OpenAI(base_url=open_gateway.url + "/v1", api_key="anything", max_retries=0)
    assert [m.id for m in client.models.list().data] == ["auto", "smollm2"]
    answer = client.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=4)
    assert answer.choices[0].message.content
    log = open_gateway.log()
    assert "serving WITHOUT authentication, on 127.0.0.1 only" in log
    assert re.search(r"edgeway ready in \d+\.\d\d s", log)


def test_without_apps_it_refuses_to_listen_beyond_loopback():
    result = edgeway("serve", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0" in result.stderr


def test_a_broken_config_names_the_file_and_line(tmp_path):
    config = tmp_path / "gw.yaml"
    config.write_text("edge:\n  models:\n    - name: smollm2\n      n_ctx: lots\n")
    result = edgeway("serve", "--config", str(config))
    assert result.returncode == 2
    assert f"{config}:4:14: edge.models[0].n_ctx" in result.stderr


def test_explain_prints_signals_and_decision_without_calling_a_model():
    result = edgeway("explain", "What is 2 + 2?")
    assert result.returncode == 0, result.stderr
    explained = json.loads(result.stdout)
    assert explained["decision"]["targets"] == ["smollm2"]
    assert explained["decision"]["rule"] == "default-edge"
    assert explained["signals"]["prompt_tokens"] > 5


def test_readiness_reports_time_to_ready(open_gateway):
    assert httpx.get(open_gateway.url + "/readyz").json()["ready_seconds"] > 0
