"""The coding agents teams use, pointed at the gateway as shipped: Claude Code (`claude -p`, the
Messages API), Codex CLI (`codex exec`, the Responses API) and aider (`aider --message`, Chat
Completions through LiteLLM), each run non-interactively in a scratch folder.

On the cloud route the fake provider plays the task: a tool call (Claude Code's `Bash`, Codex's
`exec_command`), which the agent runs, then a final answer; aider's answer is an edit, which it
applies and commits. Each agent runs with its defaults: Claude Code's two dozen tools, its system
message mid-conversation and its count of the prompt; Codex's namespace tools and hosted web
search. On the edge route the bundled model answers, set up as docs/clients.md says (a prompt
that fits its context), and the run ends in the time the model needs for it.

The agents come pinned from tests/node (Claude Code, Codex CLI) and tests/agents (aider); `.ci/run`
installs both. Without them these tests skip (under CI=true they fail).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import GatewayProcess, gateway_config
from tests.fake_upstream import AgentScript, FakeUpstream, signer_of

HERE = Path(__file__).resolve().parent
CLAUDE = HERE / "node" / "node_modules" / ".bin" / "claude"
CODEX = HERE / "node" / "node_modules" / ".bin" / "codex"
AIDER = HERE / "agents" / ".venv" / "bin" / "aider"
ADMIN = "admin-key-agents-0123"
KEYS = {"cloud": "cloud-key-0123456789", "anthropic": "anthro-key-0123456789", "edge": "edge-key-0123456789"}
KEYS["codex-edge"] = "codex-edge-key-0123456789"
KEYS |= {"auto": "auto-key-0123456789", "ladder": "ladder-key-0123456789"}
POLICIES = {
    "cloud": "defaults: {cloud: gpt-fake}\nrules:\n  - {name: all-cloud, route: cloud}\n",
    "anthropic": "defaults: {cloud: claude-fake}\nrules:\n  - {name: all-anthropic, route: claude-fake}\n",
    # docs/clients.md's: the app's router between the edge and Claude (Claude Code's prompt is past the
    # edge's context: Claude answers)
    "auto": "defaults: {edge: smollm2, cloud: claude-fake}\nrouter: {edge_reading: never}\n"
    "rules:\n  - {name: decide, route: auto}\n",
    # Haiku, then Sonnet: a prompt past about 26,000 tokens climbs (the step's prior is its length)
    "ladder": "defaults: {cloud: claude-fake}\nrouter: {edge_reading: never}\n"
    "rules:\n  - {name: climb, route: auto, ladder: [claude-fake, claude-sonnet], thresholds: [0.985]}\n",
    "edge": "rules:\n  - {name: all-edge, route: edge}\n",
    # Codex asks no output limit: the app's default caps the bundled model's ramble (512 tokens, 28 s
    # of a 46-second turn on 2 cores); the turn through the edge is what is tested
    "codex-edge": "limits: {max_tokens: 48}\nrules:\n  - {name: all-edge, route: edge}\n",
}
SONNET = "claude-sonnet-4-5"
EDGE_SYSTEM = "You are a coding agent. Use the tools to do what is asked."
TASK = "Write hello into done.txt"


def installed(binary: Path, how: str) -> Path:
    if not binary.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{binary.name} is not installed ({how}); CI must run the agent tests")
        pytest.skip(f"{binary.name} is not installed ({how})")
    return binary


@pytest.fixture(scope="module")
def agents_gateway(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("agents")
    apps = []
    for name, policy in POLICIES.items():
        (tmp / f"{name}.yaml").write_text(f"app: {name}\n{policy}")
        apps.append({"name": name, "key": KEYS[name], "policy": str(tmp / f"{name}.yaml")})
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN)
    config["server"] = {"max_body_bytes": 4 * 1024 * 1024}  # an agent's prompt, tools and all
    config["edge"]["models"][0]["n_ctx"] = 8192
    # the model Codex asks for by default, configured: a request names it by its provider's id
    codex_default = {"name": "codex-default", "provider_model": "openai/gpt-6.2-sol", "api_key": "sk-fake"}
    config["cloud"]["models"].append({**codex_default, "api_base": upstream.url + "/v1"})
    # the ladder's step up from claude-fake (Claude Haiku)
    sonnet = {"name": "claude-sonnet", "provider_model": f"anthropic/{SONNET}", "api_key": "sk-ant-fake"}
    config["cloud"]["models"].append({**sonnet, "api_base": upstream.url})
    config["apps"] = apps
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def run(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float = 240
) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    ran = subprocess.run(
        command, cwd=cwd, env={**environment, **env}, capture_output=True, text=True, timeout=timeout, check=False
    )
    return ran, time.monotonic() - started


def rows_since(gateway: GatewayProcess, app: str, since: float) -> list[dict]:
    usage = httpx.get(gateway.url + "/api/usage", params={"app": app}, headers={"authorization": f"Bearer {ADMIN}"})
    return [r for r in usage.json()["recent"] if r["ts"] >= since]


def ended_in_the_edges_time(gateway: GatewayProcess, since: float, took: float, app: str = "edge") -> list[dict]:
    """The edge answered every request of the run, each a 200, and the run took what the edge took
    for them and little more: no request waited on anything else."""
    rows = rows_since(gateway, app, since)
    assert rows and all(r["route"] == "edge" and r["status"] == 200 for r in rows), rows
    assert took <= sum(r["latency_ms"] for r in rows) / 1000 + 45, (took, rows)
    return rows


def workspace(tmp_path: Path, git: bool = False) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    if git:
        for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
            subprocess.run(["git", *args], cwd=folder, check=True)
        (folder / "hello.py").write_text("greeting = 'hi'\n")
        subprocess.run(["git", "add", "."], cwd=folder, check=True)
        subprocess.run(["git", "commit", "-qm", "start"], cwd=folder, check=True)
    return folder


# --- Claude Code ----------------------------------------------------------------------------
def claude_env(gateway: GatewayProcess, app: str, home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": KEYS[app],
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.mark.parametrize("app", ["cloud", "anthropic"])
def test_claude_code_runs_a_tool_and_answers_on_the_cloud_route(agents_gateway, upstream, tmp_path, app):
    """Its defaults: every built-in tool (a schema whose `args` is any value), a system message
    mid-conversation on every main-loop request, a streamed answer whose usage it reads."""
    claude = installed(CLAUDE, "npm ci --prefix tests/node")
    upstream.script = AgentScript("Bash", {"command": "echo hello > done.txt", "description": "Write it"}, "Done.")
    folder = workspace(tmp_path)
    command = [str(claude), "-p", TASK, "--model", "auto", "--allowedTools", "Bash", "--output-format", "json"]
    ran, _ = run(command, folder, claude_env(agents_gateway, app, tmp_path))
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    result = json.loads(ran.stdout)
    assert not result["is_error"] and result["result"].strip() == "Done.", result
    assert (folder / "done.txt").read_text() == "hello\n"
    assert result["usage"]["input_tokens"] > 0  # from the stream's events
    main_loop = [r.body for r in upstream.requests if len(r.body.get("tools") or []) > 10]
    assert main_loop and any("tool_result" in json.dumps(b) or '"role": "tool"' in json.dumps(b) for b in main_loop)
    if app == "cloud":  # Chat Completions takes the system message where Claude Code put it
        roles = [m["role"] for m in main_loop[0]["messages"]]
        assert "system" in roles[1:], roles


# Each step prints 4,000 lines: a prompt the ladder climbs for (its step's threshold, 0.985: about
# 26,000 tokens) from the second turn on; the first (Claude Code's tools and system, about 19,000) stays
STEP = {"command": "echo step >> steps.txt && seq 1 4000", "description": "Add a step"}
FOUR_STEPS = "Add four lines to steps.txt, one at a time"


def signed(body: dict) -> list[str | None]:
    """Who signed each thinking block a request carries (the fake provider's signatures name it)."""
    return [
        signer_of(block.get("signature"))
        for message in body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "thinking"
    ]


@pytest.mark.parametrize("app", ["anthropic", "auto", "ladder"])
def test_claude_code_with_thinking_finishes_a_four_step_tool_task(agents_gateway, upstream, tmp_path, app):
    """Thinking on (Claude Code's default), four tool calls in one loop, then a second task in the
    same session (`--continue`). Each turn of a loop carries the thinking of the turns before it,
    signed by the model it goes to: the answers name `auto`, the model Claude Code asked for, so it
    keeps them, and the fake provider refuses a loop's turn without them, or with a block another
    model signed, as Anthropic's API does. On the ladder the loop stays on Claude Haiku, where it
    began, though its later turns would climb; the second task's first turn climbs to Sonnet, which
    gets the conversation without Haiku's thinking."""
    claude = installed(CLAUDE, "npm ci --prefix tests/node")
    upstream.script = AgentScript("Bash", STEP, "Done.", calls=4)
    folder, env = workspace(tmp_path), claude_env(agents_gateway, app, tmp_path)
    options = ["--model", "auto", "--allowedTools", "Bash", "--output-format", "json"]
    ran, _ = run([str(claude), "-p", FOUR_STEPS, *options], folder, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert json.loads(ran.stdout)["result"].strip() == "Done."
    assert (folder / "steps.txt").read_text() == "step\n" * 4
    first = [r.body for r in upstream.requests if len(r.body.get("tools") or []) > 10]
    assert len(first) == 5 and all(b["thinking"]["type"] in ("enabled", "adaptive") for b in first)
    assert len({b["model"] for b in first}) == 1  # the loop on one model, ladder or not
    assert [signed(b) for b in first] == [[first[0]["model"]] * turn for turn in range(5)]  # every block kept

    upstream.requests.clear()
    upstream.script = AgentScript("Bash", STEP, "Done again.", calls=5)
    ran, _ = run([str(claude), "-p", "Add one more", "--continue", *options], folder, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert (folder / "steps.txt").read_text() == "step\n" * 5
    second = [r.body for r in upstream.requests if len(r.body.get("tools") or []) > 10]
    assert all(set(signed(b)) <= {b["model"]} for b in first + second)  # no model read another's thinking
    if app == "ladder":
        assert first[0]["model"] == "claude-3-5-haiku-latest" and {b["model"] for b in second} == {SONNET}
        assert [signed(b) for b in second] == [[], [SONNET]]  # Haiku's left behind; Sonnet's own kept
        assert all(b["thinking"]["type"] == "adaptive" for b in second)
    else:
        assert {b["model"] for b in second} == {first[0]["model"]} and signed(second[-1]) == [first[0]["model"]] * 6


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 100 100]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


@pytest.mark.parametrize("name, content, block", [("chart.png", PNG, "image"), ("report.pdf", PDF, "document")])
def test_claude_code_reads_an_image_and_a_pdf_on_the_anthropic_route(
    agents_gateway, upstream, tmp_path, name, content, block
):
    """Its Read tool gives back an image, or a PDF, as a block of its tool result: it reaches the
    Anthropic model as Claude Code sent it."""
    claude = installed(CLAUDE, "npm ci --prefix tests/node")
    folder = workspace(tmp_path)
    (folder / name).write_bytes(content)
    upstream.script = AgentScript("Read", {"file_path": str(folder / name)}, "Done.")
    command = [
        str(claude),
        "-p",
        f"Read {name}",
        "--model",
        "auto",
        "--allowedTools",
        "Read",
        "--output-format",
        "json",
    ]
    ran, _ = run(command, folder, claude_env(agents_gateway, "anthropic", tmp_path))
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert json.loads(ran.stdout)["result"].strip() == "Done."
    last = upstream.requests[-1].body["messages"][-1]["content"]
    assert any(b.get("type") == "tool_result" for b in last), last
    found = [b for b in last if b.get("type") == block]
    found += [p for b in last if isinstance(b.get("content"), list) for p in b["content"] if p.get("type") == block]
    assert found, json.dumps(last)[:2000]


def test_claude_code_completes_on_the_edge_route(agents_gateway, upstream, tmp_path):
    claude = installed(CLAUDE, "npm ci --prefix tests/node")
    folder, since = workspace(tmp_path), time.time()
    command = [str(claude), "-p", TASK, "--model", "auto", "--tools", "Bash", "--allowedTools", "Bash"]
    command += ["--system-prompt", EDGE_SYSTEM, "--output-format", "json"]
    # docs/clients.md says 512; 48 here, so that a run where the model rambles to the limit each
    # time Claude Code asks again ends in seconds rather than a minute (the gateway's path is the same)
    env = {**claude_env(agents_gateway, "edge", tmp_path), "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "48"}
    ran, took = run(command, folder, env)
    result = json.loads(ran.stdout)
    # The bundled 135M model answers at Claude Code's default temperature: its answer, or, when it
    # rambles past the output limit each time Claude Code asks again, Claude Code's own error.
    rambled = "exceeded the 48 output token maximum" in result["result"]
    assert (ran.returncode == 0 and not result["is_error"] and result["result"].strip()) or rambled, result
    ended_in_the_edges_time(agents_gateway, since, took)
    assert upstream.requests == []


# --- Codex CLI ------------------------------------------------------------------------------
def codex_home(gateway: GatewayProcess, tmp_path: Path, model: str | None = "auto") -> Path:
    """Codex's config: edgeway as its provider, and `model = "auto"` (None: Codex's own default
    model, with which it sends its own default request shape: its tools in an `additional_tools`
    item, a custom tool whose input is JavaScript)."""
    home = tmp_path / "codex-home"
    home.mkdir()
    chosen = f'model = "{model}"\n' if model is not None else ""
    (home / "config.toml").write_text(
        f'{chosen}model_provider = "edgeway"\n\n[model_providers.edgeway]\nname = "edgeway"\n'
        f'base_url = "{gateway.url}/v1"\nenv_key = "EDGEWAY_KEY"\nwire_api = "responses"\n'
    )
    return home


def codex(
    gateway: GatewayProcess, tmp_path: Path, app: str, *options: str, model: str | None = "auto"
) -> tuple[subprocess.CompletedProcess, float]:
    binary = installed(CODEX, "npm ci --prefix tests/node")
    home = codex_home(gateway, tmp_path, model)
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(home), "EDGEWAY_KEY": KEYS[app]}
    command = [str(binary), "exec", *options, "--skip-git-repo-check", "--sandbox", "workspace-write", TASK]
    return run(command, workspace(tmp_path), env)


def test_codex_runs_a_tool_and_answers_on_the_cloud_route(agents_gateway, upstream, tmp_path):
    """Its request reaches the OpenAI model as Codex sent it: namespace tools, hosted web search,
    reasoning settings, its session's cache key."""
    upstream.script = AgentScript("exec_command", {"cmd": "echo hello > done.txt"}, "Done.")
    ran, _ = codex(agents_gateway, tmp_path, "cloud")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert (tmp_path / "work" / "done.txt").read_text() == "hello\n"
    assert ran.stdout.strip().endswith("Done.")
    first = upstream.requests[0]
    assert first.path == "/v1/responses" and first.body["prompt_cache_key"]
    kinds = {t["type"] for t in first.body["tools"]}
    assert "namespace" in kinds and "web_search" in kinds
    later = upstream.requests[-1].body["input"]
    assert any(i.get("type") == "function_call_output" for i in later)  # the tool's result, as Codex sent it


def test_codex_runs_with_its_own_default_request_shape_on_the_cloud_route(agents_gateway, upstream, tmp_path):
    """Without `model = "auto"`, Codex sends its tools as an `additional_tools` input item and runs
    commands through a custom tool whose input is JavaScript (a Lark grammar): both reach the
    provider as sent, and its call comes back as a `custom_tool_call`."""
    script = "const r = await tools.exec_command({cmd: 'echo hello > done.txt'}); text(JSON.stringify(r));"
    upstream.script = AgentScript("exec", {"input": script}, "Done.")
    ran, _ = codex(agents_gateway, tmp_path, "cloud", model=None)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.stdout.strip().endswith("Done.")
    first = upstream.requests[0].body
    assert first["input"][0]["type"] == "additional_tools"
    outputs = [i for i in upstream.requests[-1].body["input"] if i.get("type") == "custom_tool_call_output"]
    assert outputs and (tmp_path / "work" / "done.txt").read_text() == "hello\n"


def test_codex_on_the_edge_route_is_told_which_default_tool_the_edge_cannot_run(agents_gateway, tmp_path):
    ran, _ = codex(agents_gateway, tmp_path, "edge")
    said = ran.stdout + ran.stderr
    assert "Hosted tool 'web_search' is not supported" in said, said[-3000:]


def test_codex_completes_on_the_edge_route(agents_gateway, upstream, tmp_path):
    instructions = tmp_path / "instructions.md"
    instructions.write_text(EDGE_SYSTEM + "\n")
    since = time.time()
    settings = ['web_search="disabled"', f'model_instructions_file="{instructions}"', "features.multi_agent=false"]
    ran, took = codex(agents_gateway, tmp_path, "codex-edge", *[arg for s in settings for arg in ("-c", s)])
    # the bundled model's answer, or, where it rambles to the output limit, Codex's word for that
    rambled = "Incomplete response returned, reason: max_output_tokens" in ran.stderr
    assert (ran.returncode == 0 and ran.stdout.strip()) or rambled, ran.stdout[-3000:] + ran.stderr[-3000:]
    ended_in_the_edges_time(agents_gateway, since, took, "codex-edge")
    assert upstream.requests == []


# --- aider ----------------------------------------------------------------------------------
EDIT = "hello.py\n```python\ngreeting = 'hello'\n```\n"


def aider(gateway: GatewayProcess, tmp_path: Path, app: str) -> tuple[subprocess.CompletedProcess, float, Path]:
    binary = installed(
        AIDER,
        "python3 -m venv tests/agents/.venv && tests/agents/.venv/bin/pip install -r tests/agents/requirements.txt",
    )
    folder = workspace(tmp_path, git=True)
    env = {"HOME": str(tmp_path), "OPENAI_API_BASE": gateway.url + "/v1", "OPENAI_API_KEY": KEYS[app]}
    command = [str(binary), "--model", "openai/auto", "--message", "Change the greeting in hello.py to hello"]
    command += [
        "--yes",
        "--no-check-update",
        "--no-analytics",
        "--no-show-model-warnings",
        "--no-gitignore",
        "hello.py",
    ]
    ran, took = run(command, folder, env)
    return ran, took, folder


def test_aider_applies_and_commits_an_edit_on_the_cloud_route(agents_gateway, upstream, tmp_path):
    upstream.script = AgentScript(None, {}, EDIT)
    ran, _, folder = aider(agents_gateway, tmp_path, "cloud")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert (folder / "hello.py").read_text() == "greeting = 'hello'\n"
    log = subprocess.run(["git", "log", "--oneline"], cwd=folder, capture_output=True, text=True, check=True)
    assert len(log.stdout.splitlines()) == 2  # the edit, committed


def test_aider_completes_on_the_edge_route(agents_gateway, upstream, tmp_path):
    since = time.time()
    ran, took, _ = aider(agents_gateway, tmp_path, "edge")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    ended_in_the_edges_time(agents_gateway, since, took)
    assert upstream.requests == []


def test_the_agents_are_pinned():
    """The versions docs/clients.md names are the ones installed."""
    lock = json.loads((HERE / "node" / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/@anthropic-ai/claude-code"]["version"] == "2.1.197"
    assert lock["node_modules/@openai/codex"]["version"] == "0.171.0"
    assert "aider-chat==0.86.2" in (HERE / "agents" / "requirements.txt").read_text().splitlines()
    assert shutil.which("git")  # aider commits its edits
