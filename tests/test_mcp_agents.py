"""Claude Code (`claude -p --mcp-config`) and Codex (`mcp_servers` in its config.toml) pointed at
the gateway twice, as docs/mcp.md configures them: their model calls at the gateway's APIs and
their tools at its `/mcp`. The fake provider plays the task, a call of the time server's tool as
the agent names it; the agent calls it through /mcp, and the call is in the ledger.

The agents come pinned from tests/node (`npm ci --prefix tests/node`); without them these tests
skip (under CI=true they fail).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GatewayProcess, gateway_config
from tests.fake_upstream import AgentScript, FakeUpstream
from tests.test_agent_clients import CLAUDE, CODEX, claude_env, installed, run, workspace

KEY = "mcp-agent-key-0123456789"
POLICY = "defaults: {cloud: gpt-fake}\ntools: {allow: [time.*]}\nrules:\n  - {name: all-cloud, route: cloud}\n"
TIME_SERVER = {"name": "time", "command": [sys.executable, "-m", "mcp_server_time"], "where": "local"}


@pytest.fixture(scope="module")
def gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("mcp-agents")
    (tmp / "agent.yaml").write_text(POLICY)
    config = gateway_config(upstream.url, tmp, store=f"sqlite:///{tmp / 'ledger.db'}", mcp={"servers": [TIME_SERVER]})
    config["server"] = {"max_body_bytes": 4 * 1024 * 1024}  # an agent's prompt, tools and all
    config["apps"] = [{"name": "agent", "key": KEY, "policy": str(tmp / "agent.yaml")}]
    process = GatewayProcess(config, tmp)
    process.ledger = tmp / "ledger.db"  # type: ignore[attr-defined]
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def tool_rows(gateway: GatewayProcess, since: float, timeout: float = 10) -> list[dict[str, Any]]:
    """The ledger's tool rows since `since`, once there is one (the store writes on a thread)."""
    deadline = time.monotonic() + timeout
    while True:
        with sqlite3.connect(gateway.ledger) as db:  # type: ignore[attr-defined]
            db.row_factory = sqlite3.Row
            rows = [dict(r) for r in db.execute("SELECT * FROM usage WHERE kind = 'tool' AND ts >= ?", (since,))]
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def offered(upstream: FakeUpstream) -> list[str]:
    """The names of the tools the agent's first model request offered the model, namespaces opened."""
    names = []
    for tool in upstream.requests[0].body.get("tools") or []:
        names.append(tool.get("name") or (tool.get("function") or {}).get("name") or "")
        names += [t.get("name", "") for t in tool.get("tools") or []]
    return names


def test_claude_code_calls_a_tool_through_mcp_and_the_call_is_in_the_ledger(
    gateway: GatewayProcess, upstream: FakeUpstream, tmp_path: Path
) -> None:
    claude = installed(CLAUDE, "npm ci --prefix tests/node")
    config = tmp_path / "edgeway-mcp.json"
    server = {"type": "http", "url": f"{gateway.url}/mcp", "headers": {"Authorization": "Bearer ${EDGEWAY_APP_KEY}"}}
    config.write_text(json.dumps({"mcpServers": {"edgeway": server}}))
    tool = "mcp__edgeway__time_get_current_time"  # Claude Code's name for it: a dot is no letter of its names
    upstream.script = AgentScript(tool, {"timezone": "UTC"}, "Done.")
    since = time.time()
    env = {**claude_env(gateway, "cloud", tmp_path), "ANTHROPIC_API_KEY": KEY, "EDGEWAY_APP_KEY": KEY}
    options = ["--mcp-config", str(config), "--allowedTools", tool, "--output-format", "json"]
    ran, _ = run([str(claude), "-p", "What time is it in UTC?", "--model", "auto", *options], workspace(tmp_path), env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert tool in offered(upstream), offered(upstream)
    assert json.loads(ran.stdout)["result"].strip() == "Done."
    rows = tool_rows(gateway, since)
    assert [(r["app"], r["model"], r["status"], r["route"]) for r in rows] == [
        ("agent", "time.get_current_time", 200, "edge")
    ]
    # the tool's result, as the time server wrote it, back to the model
    results = [m["content"] for m in upstream.requests[-1].body["messages"] if m["role"] == "tool"]
    assert results and "UTC" in results[0] and "is_dst" in results[0]


def test_codex_calls_a_tool_through_mcp_and_the_call_is_in_the_ledger(
    gateway: GatewayProcess, upstream: FakeUpstream, tmp_path: Path
) -> None:
    binary = installed(CODEX, "npm ci --prefix tests/node")
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "auto"\nmodel_provider = "edgeway"\n\n[model_providers.edgeway]\nname = "edgeway"\n'
        f'base_url = "{gateway.url}/v1"\nenv_key = "EDGEWAY_APP_KEY"\nwire_api = "responses"\n\n'
        f'[mcp_servers.edgeway]\nurl = "{gateway.url}/mcp"\nbearer_token_env_var = "EDGEWAY_APP_KEY"\n'
    )
    tool = "time_get_current_time"  # in the namespace mcp__edgeway: Codex names its MCP tools so
    upstream.script = AgentScript(tool, {"timezone": "UTC"}, "Done.")
    since = time.time()
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(home), "EDGEWAY_APP_KEY": KEY}
    command = [str(binary), "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", "What time is it in UTC?"]
    ran, _ = run(command, workspace(tmp_path), env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert tool in offered(upstream), offered(upstream)
    assert ran.stdout.strip().endswith("Done.")
    rows = tool_rows(gateway, since)
    assert [(r["app"], r["model"], r["status"]) for r in rows] == [("agent", "time.get_current_time", 200)]
    # the tool's result, as the time server wrote it, back to the model
    results = [i["output"] for i in upstream.requests[-1].body["input"] if i.get("type") == "function_call_output"]
    assert results and '"timezone":"UTC"' in results[0]
