"""The MCP gateway (`/mcp`), with the MCP SDK's client against a gateway on loopback that serves
real servers: `mcp-server-time` and `mcp-server-git` (started by the gateway, `where: local`),
`@modelcontextprotocol/server-filesystem` (npm, local) and a remote CRM of the suite's own
(tests/mcp_recorder.py, Streamable HTTP and SSE) that records every call that reaches it; the
same server started over stdio (`vault`) shows a started server's credentials from the config.

Apps: `agent` masks private values (its tools: time, git's read-only ones, files but writing,
crm), `private` keeps them on the premises, `narrow` may call one tool twice a minute, and
`plain` has a policy without `tools:` (deny by default).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from classifiers import Scorer
from gateway.bench.ports import free_port
from gateway.mcp.privacy import Refusal, Refused, read_arguments
from policies.policy import Models, parse_policy
from policies.tools import ToolRules
from policies.yaml_source import FileError
from tests.conftest import APP_KEYS, GatewayProcess, gateway_config
from tests.test_privacy_invariant import SPELLINGS, TELLS

HERE = Path(__file__).resolve().parent
FILESYSTEM = HERE / "node" / "node_modules" / ".bin" / "mcp-server-filesystem"
ADMIN = "admin-key-mcp-0123456789"
KEYS = {app: f"{app}-key-0123456789" for app in ("agent", "private", "narrow", "plain")}
CRM_TOKEN = "crm-token-from-the-config-42"
EMAIL = "zq.hollander77@proton.me"
MANAGER_EMAIL = "dana.whitfield@northwind-example.com"
CONVERSION = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}

POLICIES = {
    "agent": """
tools:
  allow: [time.*, git.git_status, git.git_log, files.*, crm.*, crm_sse.*, vault.token]
  deny: [files.write_file, files.edit_file, files.move_file, files.create_directory]
rules:
  - {name: mask-private, when: {pii: any}, route: cloud, redact: true}
  - {name: default, route: cloud}
""",
    "private": """
tools:
  allow: [crm.*, time.*]
rules:
  - {name: private-stays-local, when: {pii: any}, route: edge, fallback: none}
  - {name: default, route: edge, fallback: cloud}
""",
    "narrow": """
tools:
  allow: [time.get_current_time]
  calls_per_minute: {time: 2}
rules:
  - {name: default, route: edge}
""",
    "plain": "rules:\n  - {name: default, route: edge}\n",
}


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the recorder exited with {process.returncode}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("the recorder did not start")


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The remote CRM, over Streamable HTTP and over SSE, each recording into its own file."""
    folder = tmp_path_factory.mktemp("crm")
    servers: dict[str, Any] = {}
    processes = []
    try:
        for transport in ("streamable-http", "sse"):
            port, record = free_port(), folder / f"{transport}.jsonl"
            record.touch()
            command = [sys.executable, "-m", "tests.mcp_recorder", "--port", str(port), "--record", str(record)]
            process = subprocess.Popen([*command, "--transport", transport], cwd=HERE.parent)
            processes.append(process)
            _wait_for_port(port, process)
            path = "/sse" if transport == "sse" else "/mcp"
            servers[transport] = {"url": f"http://127.0.0.1:{port}{path}", "record": record}
        yield servers
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)


def received(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit: what the git and filesystem servers are given."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("repo")
    (repo / "notes.txt").write_text("the release is on Thursday\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["init", "-q"], ["add", "notes.txt"], ["commit", "-q", "-m", "Add the notes"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    return repo


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, recorder: dict[str, Any], workspace: Path
) -> Iterator[GatewayProcess]:
    if not FILESYSTEM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("the filesystem MCP server is not installed (npm ci --prefix tests/node)")
        pytest.skip("the filesystem MCP server is not installed (npm ci --prefix tests/node)")
    tmp = tmp_path_factory.mktemp("mcp-gateway")
    for app, text in POLICIES.items():
        (tmp / f"{app}.yaml").write_text(text)
    servers = [
        {"name": "time", "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]},
        {"name": "git", "command": [sys.executable, "-m", "mcp_server_git", "--repository", str(workspace)]},
        {"name": "files", "command": [str(FILESYSTEM), str(workspace)]},
    ]
    servers = [{**s, "where": "local"} for s in servers]
    headers = {"Authorization": "Bearer ${CRM_TOKEN}"}
    servers.append({"name": "crm", "url": recorder["streamable-http"]["url"], "where": "remote", "headers": headers})
    servers.append({"name": "crm_sse", "url": recorder["sse"]["url"], "where": "remote", "headers": headers})
    vault = [sys.executable, "-m", "tests.mcp_recorder", "--transport", "stdio", "--record", str(tmp / "vault.jsonl")]
    servers.append({"name": "vault", "command": vault, "where": "local", "env": {"VAULT_TOKEN": "${CRM_TOKEN}"}})
    config = {
        "edge": {"models": []},
        "store": f"sqlite:///{tmp / 'ledger.db'}",
        "admin_key": ADMIN,
        "apps": [{"name": app, "key": key, "policy": str(tmp / f"{app}.yaml")} for app, key in KEYS.items()],
        "mcp": {"servers": servers},
    }
    (tmp / "edgeway.yaml").write_text(yaml.safe_dump(config))  # the same, for `edgeway mcp tools`
    process = GatewayProcess(config, tmp, env={"CRM_TOKEN": CRM_TOKEN})
    process.policies = tmp  # type: ignore[attr-defined]
    try:
        yield process.wait_ready()
    finally:
        process.stop()


@asynccontextmanager
async def connected(gateway: GatewayProcess, key: str | None, mode: str = "legacy") -> AsyncIterator[Client]:
    """The MCP SDK's client on the gateway's /mcp, the app's key as its bearer token."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(f"{gateway.url}/mcp", http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:  # type: ignore[arg-type]
            yield client


async def names(gateway: GatewayProcess, app: str) -> set[str]:
    async with connected(gateway, KEYS[app]) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def metrics(gateway: GatewayProcess) -> str:
    return httpx.get(f"{gateway.url}/metrics", timeout=10).text


def audit(gateway: GatewayProcess, app: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{gateway.url}/api/audit", params={"app": app}, headers={"Authorization": f"Bearer {ADMIN}"})
    answer.raise_for_status()
    return answer.json()["records"]


def ledger_rows(gateway: GatewayProcess, model: str, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    """The ledger's tool rows of `model` once `count` are written (the store writes on a thread)."""
    import sqlite3

    path = gateway.policies / "ledger.db"  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        if path.exists():
            with sqlite3.connect(path) as db:
                db.row_factory = sqlite3.Row
                rows = [dict(r) for r in db.execute("SELECT * FROM usage WHERE kind = 'tool' AND model = ?", (model,))]
            if len(rows) >= count:
                return rows
        time.sleep(0.1)
    return rows


# --- what an app sees, and what it may call


async def test_an_app_sees_exactly_the_tools_its_policy_allows(gateway: GatewayProcess) -> None:
    agent = await names(gateway, "agent")
    assert {"time.get_current_time", "time.convert_time", "git.git_status", "git.git_log"} <= agent
    assert {"crm.lookup_orders", "crm.echo", "crm_sse.lookup_orders", "files.read_text_file"} <= agent
    # denied by a glob, or matched by none
    assert not {"files.write_file", "files.edit_file", "git.git_commit", "git.git_add"} & agent
    assert await names(gateway, "narrow") == {"time.get_current_time"}
    assert await names(gateway, "plain") == set()  # no `tools:`: deny by default
    assert await names(gateway, "private") == {
        "crm.lookup_orders", "crm.echo", "crm.token", "time.get_current_time", "time.convert_time"
    }  # fmt: skip


async def test_the_modern_protocol_sees_the_same_tools(gateway: GatewayProcess) -> None:
    async with connected(gateway, KEYS["narrow"], mode="auto") as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"time.get_current_time"}
        result = await client.call_tool("time.get_current_time", {"timezone": "Europe/Paris"})
        assert "Europe/Paris" in text_of(result) + json.dumps(result.structured_content)


async def test_a_call_outside_the_apps_tools_is_refused_and_never_reaches_the_server(
    gateway: GatewayProcess, recorder: dict[str, Any]
) -> None:
    record = recorder["streamable-http"]["record"]
    before = len(received(record))
    async with connected(gateway, KEYS["narrow"]) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("crm.echo", {"text": "hello"})
        assert "crm.echo" in refused.value.message and "tools.allow" in refused.value.message
    async with connected(gateway, KEYS["agent"]) as client:
        with pytest.raises(MCPError, match="no such tool"):
            await client.call_tool("crm.no_such_tool", {})
        with pytest.raises(MCPError, match="no such tool"):
            await client.call_tool("nowhere.at_all", {})
        with pytest.raises(MCPError, match="tools.deny"):
            await client.call_tool("files.write_file", {"path": "x.txt", "content": "x"})
    assert len(received(record)) == before
    rows = ledger_rows(gateway, "crm.echo", 1)
    assert [(r["app"], r["status"], r["error"], r["route"]) for r in rows if r["app"] == "narrow"] == [
        ("narrow", 403, "not_allowed", "none")
    ]
    text = metrics(gateway)
    assert 'edgeway_mcp_calls_total{app="narrow",outcome="not_allowed",server="crm",tool="crm.echo"} 1.0' in text
    # a name no server has is counted without it: a client may send any
    assert 'edgeway_mcp_calls_total{app="agent",outcome="not_allowed",server="unknown",tool="unknown"} 1.0' in text
    assert 'edgeway_mcp_calls_total{app="agent",outcome="not_allowed",server="crm",tool="unknown"} 1.0' in text


async def test_without_a_key_mcp_answers_401(gateway: GatewayProcess) -> None:
    answer = httpx.post(f"{gateway.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code == 401
    assert answer.json()["error"]["message"].startswith("Missing API key")
    with pytest.raises(Exception):  # noqa: B017  (the SDK raises its transport's error)
        async with connected(gateway, "not-a-key-0123456789") as client:
            await client.list_tools()


def test_what_mcp_does_not_serve_is_a_clear_error(gateway: GatewayProcess) -> None:
    headers = {"Authorization": f"Bearer {KEYS['agent']}", "Accept": "application/json, text/event-stream"}
    stream = httpx.get(f"{gateway.url}/mcp", headers=headers, timeout=10)
    assert stream.status_code == 405 and stream.headers["allow"] == "POST"  # no stream of the server's own
    json_headers = {**headers, "Content-Type": "application/json"}
    broken = httpx.post(f"{gateway.url}/mcp", headers=json_headers, content=b"{nope", timeout=10)
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700


# --- local servers


async def test_local_servers_answer_through_the_gateway(gateway: GatewayProcess, workspace: Path) -> None:
    async with connected(gateway, KEYS["agent"]) as client:
        now = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
        assert not now.is_error and "UTC" in text_of(now) + json.dumps(now.structured_content)
        status = await client.call_tool("git.git_status", {"repo_path": str(workspace)})
        assert not status.is_error and "Repository status" in text_of(status)
        log = await client.call_tool("git.git_log", {"repo_path": str(workspace)})
        assert "Add the notes" in text_of(log)
        notes = await client.call_tool("files.read_text_file", {"path": str(workspace / "notes.txt")})
        assert "the release is on Thursday" in text_of(notes)
        wrong = await client.call_tool("time.get_current_time", {"timezone": "Mars/Olympus"})
        assert wrong.is_error  # the tool's own error, as the server said it
    rows = ledger_rows(gateway, "git.git_status", 1)
    assert rows[0]["app"] == "agent" and rows[0]["status"] == 200 and rows[0]["route"] == "edge"
    assert rows[0]["latency_ms"] > 0
    text = metrics(gateway)
    assert 'edgeway_mcp_calls_total{app="agent",outcome="ok",server="git",tool="git.git_status"} 1.0' in text
    assert 'edgeway_mcp_calls_total{app="agent",outcome="tool_error",server="time",tool="time.get_current_time"}' in (
        text
    )
    assert 'edgeway_mcp_call_duration_seconds_count{app="agent",outcome="ok",server="files"' in text
    # a local server is not egress: nothing of these calls is in the audit
    assert not [r for r in audit(gateway, "agent") if r["model"] in ("time", "git", "files")]


# --- a remote server, read by the app's privacy rules


async def test_a_masking_app_sends_the_remote_server_placeholders_and_gets_the_values_back(
    gateway: GatewayProcess, recorder: dict[str, Any]
) -> None:
    record = recorder["streamable-http"]["record"]
    async with connected(gateway, KEYS["agent"]) as client:
        result = await client.call_tool("crm.lookup_orders", {"email": EMAIL})
    arrived = received(record)[-1]
    assert arrived["tool"] == "lookup_orders" and arrived["arguments"] == {"email": "[EMAIL_1]"}
    text = text_of(result)
    assert f"Orders of {EMAIL}" in text  # restored
    # what the server sent back that the client did not send, masked as the app's rule masks
    assert MANAGER_EMAIL not in text and "[EMAIL_1]" in text and "#4411" in text
    records = [r for r in audit(gateway, "agent") if r["model"] == "crm"]
    assert records, "the call is in the egress audit"
    last = records[-1]
    assert (last["provider"], last["provider_model"], last["purpose"], last["rule"]) == (
        "mcp", "lookup_orders", "tool", "mask-private"
    )  # fmt: skip
    assert last["body"] == {"name": "lookup_orders", "arguments": {"email": "[EMAIL_1]"}}
    assert {"type": "EMAIL", "where": "arguments.email", "left": "masked"} in last["findings"]
    assert EMAIL not in json.dumps(records)
    rows = ledger_rows(gateway, "crm.lookup_orders", 1)
    assert any(r["app"] == "agent" and r["status"] == 200 and r["route"] == "cloud" for r in rows)


async def test_a_long_argument_and_result_are_read_beside_the_event_loop(
    gateway: GatewayProcess, recorder: dict[str, Any]
) -> None:
    """200 KB each way, scanned on a worker thread (as a long prompt is): masked as it leaves,
    restored as it comes back."""
    text = "the quarterly numbers are attached; " * 5_600 + f"reply to {EMAIL}"
    async with connected(gateway, KEYS["agent"]) as client:
        result = await client.call_tool("crm.echo", {"text": text})
    arrived = received(recorder["streamable-http"]["record"])[-1]["arguments"]["text"]
    assert EMAIL not in arrived and arrived.endswith("reply to [EMAIL_1]")
    assert text_of(result) == text


async def test_credentials_come_from_the_config_never_from_the_client(
    gateway: GatewayProcess, recorder: dict[str, Any]
) -> None:
    record = recorder["streamable-http"]["record"]
    async with connected(gateway, KEYS["agent"]) as client:
        await client.call_tool("crm.echo", {"text": "nothing private here"})
    arrived = received(record)[-1]
    assert arrived == {
        "tool": "echo", "arguments": {"text": "nothing private here"}, "authorization": f"Bearer {CRM_TOKEN}"
    }  # fmt: skip
    assert KEYS["agent"] not in record.read_text()
    last = [r for r in audit(gateway, "agent") if r["provider_model"] == "echo"][-1]
    assert (last["rule"], last["findings"]) == ("default", [])


async def test_a_started_servers_credentials_come_from_the_configs_env(gateway: GatewayProcess) -> None:
    async with connected(gateway, KEYS["agent"]) as client:
        assert text_of(await client.call_tool("vault.token", {})) == CRM_TOKEN  # `${CRM_TOKEN}` in its env


async def test_an_older_sse_server_is_read_the_same(gateway: GatewayProcess, recorder: dict[str, Any]) -> None:
    record = recorder["sse"]["record"]
    async with connected(gateway, KEYS["agent"]) as client:
        result = await client.call_tool("crm_sse.lookup_orders", {"email": EMAIL})
    assert received(record)[-1]["arguments"] == {"email": "[EMAIL_1]"}
    assert received(record)[-1]["authorization"] == f"Bearer {CRM_TOKEN}"
    assert f"Orders of {EMAIL}" in text_of(result) and MANAGER_EMAIL not in text_of(result)


async def test_a_local_only_app_refuses_the_call_and_says_why(
    gateway: GatewayProcess, recorder: dict[str, Any]
) -> None:
    record = recorder["streamable-http"]["record"]
    before = len(received(record))
    async with connected(gateway, KEYS["private"]) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("crm.lookup_orders", {"email": EMAIL})
        message = refused.value.message
        assert "remote MCP server" in message and "private-stays-local" in message
        assert "EMAIL in arguments.email" in message
        # nothing private: the call goes
        echoed = await client.call_tool("crm.echo", {"text": "what time is it"})
        assert text_of(echoed) == "what time is it"
    assert [r["arguments"] for r in received(record)[before:]] == [{"text": "what time is it"}]
    rows = [r for r in ledger_rows(gateway, "crm.lookup_orders", 2) if r["app"] == "private"]
    assert [(r["status"], r["error"], r["rule"], r["route"]) for r in rows] == [
        (403, "local_only", "private-stays-local", "none")
    ]
    assert 'edgeway_mcp_calls_total{app="private",outcome="local_only",server="crm",tool="crm.lookup_orders"} 1.0' in (
        metrics(gateway)
    )


async def test_a_server_that_exits_is_started_again(gateway: GatewayProcess) -> None:
    """The time server killed under the gateway: the next call fails at once with an MCP error
    that says so (never a 500), and the gateway starts the server again."""
    found = subprocess.run(["pgrep", "-P", str(gateway.process.pid), "-f", "mcp_server_time"], capture_output=True)
    (pid,) = found.stdout.split()
    os.kill(int(pid), signal.SIGKILL)
    deadline, outcomes = time.monotonic() + 20, []
    async with connected(gateway, KEYS["agent"]) as client:
        while time.monotonic() < deadline:
            try:
                result = await client.call_tool("time.convert_time", CONVERSION)
            except MCPError as exc:
                outcomes.append(exc.message)
                await asyncio.sleep(0.2)
                continue
            outcomes.append("ok")
            assert "Asia/Tokyo" in text_of(result)
            break
    assert outcomes[-1] == "ok" and "unavailable" in outcomes[0], outcomes


# --- limits and reloads


async def test_an_apps_calls_to_a_server_are_rate_limited(gateway: GatewayProcess) -> None:
    async with connected(gateway, KEYS["narrow"]) as client:
        answers = []
        for _ in range(3):
            try:
                await client.call_tool("time.get_current_time", {"timezone": "UTC"})
                answers.append("ok")
            except MCPError as exc:
                answers.append(exc.message)
    # two a minute (the test above may have spent one of this minute's)
    assert answers.count("ok") <= 2 and "2 times a minute" in answers[-1]


async def test_the_tools_follow_a_policy_reload(gateway: GatewayProcess) -> None:
    path = gateway.policies / "plain.yaml"  # type: ignore[attr-defined]
    original = path.read_text()
    try:
        path.write_text("tools: {allow: [time.convert_time]}\n" + original)
        deadline = time.monotonic() + 10
        while await names(gateway, "plain") != {"time.convert_time"}:
            assert time.monotonic() < deadline, "the policy was not reloaded"
            await asyncio.sleep(0.2)
    finally:
        path.write_text(original)


# --- the command


def test_edgeway_mcp_tools_lists_what_an_app_may_call(gateway: GatewayProcess) -> None:
    config = gateway.policies / "edgeway.yaml"  # type: ignore[attr-defined]
    command = [sys.executable, "-m", "gateway.cli", "mcp", "tools", "--config", str(config), "--app", "narrow"]
    env = {**os.environ, "CRM_TOKEN": CRM_TOKEN}
    listed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=HERE.parent, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:2] == ["time.get_current_time", "local"]
    assert len(listed.stdout.splitlines()) == 1
    assert "1 of 37 tools for app narrow" in listed.stderr  # time 2, git 12, files 14, crm, crm_sse and vault 3
    unknown = subprocess.run([*command[:-1], "nobody"], capture_output=True, text=True, env=env, cwd=HERE.parent)
    assert unknown.returncode == 2 and "no app named 'nobody'" in unknown.stderr


async def test_edgeway_audit_checks_the_tool_calls_against_the_policies(gateway: GatewayProcess) -> None:
    async with connected(gateway, KEYS["agent"]) as client:
        await client.call_tool("crm.lookup_orders", {"email": EMAIL})
    config = gateway.policies / "edgeway.yaml"  # type: ignore[attr-defined]
    command = [sys.executable, "-m", "gateway.cli", "audit", "--config", str(config), "--app", "agent"]
    env = {**os.environ, "CRM_TOKEN": CRM_TOKEN}
    listed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=HERE.parent, timeout=120)
    records = [json.loads(line) for line in listed.stdout.splitlines()]
    assert any(r["purpose"] == "tool" and r["provider_model"] == "lookup_orders" for r in records), listed.stderr
    checked = subprocess.run([*command, "--check"], capture_output=True, text=True, env=env, cwd=HERE.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- the policy key


def test_tools_globs_are_checked_with_file_and_line() -> None:
    text = "rules:\n  - {name: default, route: edge}\ntools:\n  allow: [time.*, git]\n"
    with pytest.raises(FileError) as bad:
        parse_policy(text, Models(("edge-model",), ()), "app.yaml")
    assert str(bad.value).startswith("app.yaml:4:") and "'git' matches none; expected e.g. 'git.*'" in str(bad.value)


def test_deny_wins_and_nothing_is_allowed_by_default() -> None:
    rules = ToolRules(("git.*",), ("git.git_commit",))
    assert rules.allows("git.git_status") and not rules.allows("git.git_commit") and not rules.allows("time.x")
    assert not ToolRules().allows("git.git_status")


# --- the privacy invariant, on a remote server's arguments

LOCAL_ONLY = "rules:\n  - {name: keep, when: {pii: any}, route: edge, fallback: none}\n  - {name: rest, route: cloud}\n"
MASKING = "rules:\n  - {name: mask, when: {pii: any}, route: cloud, redact: true}\n  - {name: rest, route: cloud}\n"
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}, "filter": {"type": "object"}}}


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer()


@pytest.mark.parametrize("nested", [False, True], ids=["top level", "nested"])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_private_value_in_a_remote_calls_arguments_is_refused_or_masked(
    scorer: Scorer, spelling: str, nested: bool
) -> None:
    """As tests/test_privacy_invariant.py holds it of prompts: whatever way a private value is
    written, a local-only app's call carrying it is refused, and a masking app's leaves without it
    (or, where the scan cannot read what is around it, not at all)."""
    value = SPELLINGS[spelling]
    arguments = {"filter": {"contacts": [value]}} if nested else {"query": f"orders of {value}"}
    models = Models(("edge-model",), ("cloud-model",))
    with pytest.raises(Refused):
        read_arguments(scorer, parse_policy(LOCAL_ONLY, models), "crm.lookup", arguments, SCHEMA)
    try:
        reading = read_arguments(scorer, parse_policy(MASKING, models), "crm.lookup", arguments, SCHEMA)
    except Refused as refused:  # what it cannot read (a script no detector reads) is not sent masked
        assert "does not send it" in refused.message
        return
    sent = json.dumps(reading.sent)
    assert not [tell for tell in TELLS if tell in sent or json.dumps(tell)[1:-1] in sent], sent


def test_a_deny_rule_denies_a_remote_call_with_its_message(scorer: Scorer) -> None:
    policy = parse_policy(
        "rules:\n  - {name: no-emails-out, when: {pii: [EMAIL]}, action: deny, message: Ask without the address.}\n"
        "  - {name: rest, route: cloud}\n",
        Models(("edge-model",), ("cloud-model",)),
    )
    with pytest.raises(Refused) as denied:
        read_arguments(scorer, policy, "crm.lookup", {"query": f"orders of {EMAIL}"}, SCHEMA)
    assert (denied.value.refusal, denied.value.rule, denied.value.message) == (
        Refusal.DENIED, "no-emails-out", "Ask without the address."
    )  # fmt: skip
    assert read_arguments(scorer, policy, "crm.lookup", {"query": "orders of last week"}, SCHEMA).rule == "rest"


def test_a_gateway_with_no_mcp_server_says_so_at_mcp(upstream, tmp_path) -> None:
    """Its config names no MCP server: /mcp answers every request 404 with a JSON-RPC error naming
    the key to set (and the gateway never imports the MCP SDK: `gateway/mcp/service.py`)."""
    process = GatewayProcess(gateway_config(upstream.url, tmp_path), tmp_path)
    try:
        process.wait_ready()
        answer = httpx.post(
            f"{process.url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": f"Bearer {APP_KEYS['alpha']}"},
        )
    finally:
        process.stop()
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["code"] == -32601 and "names no MCP server (mcp: {servers: [...]})" in error["message"]
