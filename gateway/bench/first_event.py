"""Claude Code's first streamed event on the edge route, against the prompt's prefill.

Claude Code's tools bound their numbers (`Bash`'s timeout, `Read`'s offset and limit), which a
grammar cannot hold, so the edge checks such a call once it is written. The stream does not wait
for that check: its first event goes out with the model's first token, prose streams as written,
a call's name at once and its arguments once they pass (`router.edge_tools.CallStream`).

The request is Claude Code's own: `claude -p` (the pinned client in `tests/node`, set up for the
edge route as docs/clients.md says) is run once against a provider on loopback, and its main-loop
request kept. It is then sent, streamed, to the bundled model through the Messages API, in
alternating rounds with the same request cut to one output token (its prompt's prefill plus one
token: when a first event can come at the earliest). Each request opens its system prompt with a
new line of its own, so that none reads its prompt from the one before.

Printed (medians): the first event (`message_start`), the first content event, the request of one
token, and when the whole answer ended (when the first byte came while the check held the answer).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from edge_runtime.grammar import for_grammar
from gateway.bench.caching_provider import CachingProvider
from gateway.bench.overhead import Server, edgeway_command
from gateway.bench.ports import LoopbackServer, free_port

TASK = "List the files in this folder."
SYSTEM = "You are a coding agent. Use the tools to do what is asked."  # docs/clients.md's edge setup
TOOLS = "Bash,Read,Edit"
MAX_TOKENS = 128  # of the answer: enough that holding it would show
MODEL = "smollm2"
KEY = "bench-first-event-0123456789"


def claude_binary() -> Path | None:
    pinned = Path(__file__).resolve().parents[2] / "tests" / "node" / "node_modules" / ".bin" / "claude"
    if pinned.exists():
        return pinned
    found = shutil.which("claude")
    return Path(found) if found else None


def captured_request(claude: Path, folder: Path) -> dict[str, Any]:
    """Claude Code's main-loop request (the one with its tools), as it sends it to its provider."""
    provider = CachingProvider()
    with LoopbackServer(provider.app()) as server:
        environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        environment.update(
            HOME=str(folder),
            ANTHROPIC_BASE_URL=server.url,
            ANTHROPIC_API_KEY=KEY,
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CODE_MAX_OUTPUT_TOKENS="512",
        )
        command = [str(claude), "-p", TASK, "--model", "auto", "--tools", TOOLS, "--allowedTools", TOOLS]
        command += ["--system-prompt", SYSTEM, "--output-format", "json"]
        subprocess.run(command, cwd=folder, env=environment, capture_output=True, timeout=180, check=False)
    main_loop = [b.body for b in provider.billed if b.body.get("tools")]
    if not main_loop:
        raise RuntimeError("Claude Code sent no request with its tools")
    return main_loop[0]


def _fresh(body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """`body` streamed to the edge model, its system prompt opened by a line no other request has."""
    fresh = copy.deepcopy(body)
    line = f"Request {uuid.uuid4().hex[:12]}.\n"
    system = fresh.get("system")
    if isinstance(system, list) and system and isinstance(system[0], dict):
        system[0]["text"] = line + str(system[0].get("text", ""))
    else:
        fresh["system"] = line + str(system or "")
    fresh.update(model=MODEL, stream=True, max_tokens=max_tokens)
    return fresh


@dataclass(frozen=True)
class Timed:
    first_event: float  # seconds from sending to `message_start`
    first_content: float  # to the first content block's start
    ended: float  # to `message_stop`
    blocks: tuple[str, ...]  # the answer's content blocks, by type


def _timed(url: str, body: dict[str, Any]) -> Timed:
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    started = time.perf_counter()
    first_event = first_content = ended = float("nan")
    blocks: list[str] = []
    with httpx.stream("POST", url, json=body, headers=headers, timeout=600) as answer:
        if answer.status_code != 200:
            raise RuntimeError(f"the edge answered {answer.status_code}: {answer.read()[:500]!r}")
        for line in answer.iter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter() - started
            event = json.loads(line[6:])
            kind = event.get("type")
            if kind == "message_start":
                first_event = now
            elif kind == "content_block_start":
                if not blocks:
                    first_content = now
                blocks.append(str(event["content_block"]["type"]))
            elif kind == "message_stop":
                ended = now
            elif kind == "error":
                raise RuntimeError(f"the stream ended in an error: {event}")
    return Timed(first_event, first_content, ended, tuple(blocks))


def run(repeat: int = 3) -> None:
    claude = claude_binary()
    if claude is None:
        raise SystemExit("edgeway bench first-event runs Claude Code: install it with `npm ci --prefix tests/node`")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "work").mkdir()
        body = captured_request(claude, tmp / "work")
        config = tmp / "edge.yaml"
        config.write_text(
            f"edge:\n  models:\n    - {{name: {MODEL}, n_ctx: 8192}}\n"
            f"apps:\n  - {{name: claude-code, key: {KEY}, policy: {tmp / 'policy.yaml'}}}\n"
        )
        (tmp / "policy.yaml").write_text("app: claude-code\nrules:\n  - {name: all-edge, route: edge}\n")
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1/messages"
        ready = {"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
        gateway = Server("edgeway", port, "/v1/chat/completions", {"authorization": f"Bearer {KEY}"}, ready)
        answers: list[Timed] = []
        one_token: list[Timed] = []
        try:
            gateway.start(edgeway_command(config, port))
            _timed(url, _fresh(body, 1))  # warm: the tools' part of the prompt is read once
            for _ in range(repeat):
                answers.append(_timed(url, _fresh(body, MAX_TOKENS)))
                one_token.append(_timed(url, _fresh(body, 1)))
        finally:
            gateway.stop()
    checked = [t["name"] for t in body["tools"] if not for_grammar(t.get("input_schema") or {})[1]]
    print(
        f"Claude Code's main-loop request (--tools {TOOLS}; tools with bounds checked after sampling: "
        f"{', '.join(checked) or 'none'}), streamed to the bundled model on the edge, {MAX_TOKENS} tokens at most; "
        f"medians of {repeat} alternating rounds"
    )
    prefill = statistics.median(t.ended for t in one_token)
    rows = (
        ("first event (message_start)", statistics.median(t.first_event for t in answers)),
        ("first content block", statistics.median(t.first_content for t in answers)),
        ("prefill + one token (a 1-token answer)", prefill),
        ("whole answer (the first byte, were it held)", statistics.median(t.ended for t in answers)),
    )
    for name, seconds in rows:
        print(f"{name:<46} {seconds * 1e3:>8.0f} ms {seconds / prefill:>6.2f}x")
    kinds = sorted({" + ".join(t.blocks) for t in answers})
    print(f"the answers' content: {'; '.join(kinds)}  (target: first event <= 1.00x prefill + one token)")
