"""`edgeway shadow replay FILE.jsonl --app NAME`: comparisons before there is traffic.

Each line of FILE is an OpenAI chat body (`{"messages": [...]}`), `{"prompt": "..."}`, a JSON
string, or plain text. For each, the app's policy decides as it would on a live request (calling
no model to decide); a request it would keep local or redact is skipped, exactly as live
shadowing skips it. Otherwise the app's edge model answers, the cloud model answers, and the
judge compares them in both orders, charged to the policy's `shadow.daily_usd` like live
comparisons, and kept in the configured store. Every line's outcome is appended to the output
file as it is known, so an interrupted replay resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from gateway.auth import App
from gateway.running import Gateway
from router.cloud.validate import delivered_text
from router.errors import EdgewayError
from router.request import ChatRequest, parse_chat_request
from router.routing import Router
from router.served import ServedRequest, ShadowPolicy
from router.shadow import Shadower, why_not


def request_of(line: str) -> ChatRequest:
    """One line of the input file as a request: a chat body, a prompt object, a string or text."""
    try:
        value: Any = json.loads(line)
    except json.JSONDecodeError:
        value = line.strip()
    if isinstance(value, str):
        value = {"messages": [{"role": "user", "content": value}]}
    elif isinstance(value, dict) and "messages" not in value and isinstance(value.get("prompt"), str):
        # a row of a prompt set: its prompt, and the sampling it names; its other fields are not a body's
        kept = {k: value[k] for k in ("max_tokens", "temperature", "top_p", "seed") if k in value}
        value = {"messages": [{"role": "user", "content": value["prompt"]}], **kept}
    if not isinstance(value, dict):
        raise ValueError('expected a chat body, {"prompt": ...}, a string or a line of text')
    body = {**value, "model": value.get("model", "auto"), "stream": False}
    body.pop("stream_options", None)
    return parse_chat_request(body)


def done_lines(out: Path) -> set[int]:
    if not out.exists():
        return set()
    return {json.loads(line)["line"] for line in out.read_text(encoding="utf-8").splitlines() if line.strip()}


def _progress(done: int, total: int, counts: dict[str, int], stream: TextIO) -> None:
    width = 30
    filled = width * done // max(total, 1)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {summary}")
    stream.flush()


async def replay(
    gateway: Gateway, app: App, lines: list[str], out: Path, progress: TextIO = sys.stderr
) -> dict[str, int]:
    policy = app.now().shadow
    if policy is None:
        raise SystemExit(f"edgeway: {app.name}'s policy has no `shadow:` (its judge and daily_usd); add one first")
    shadower = Shadower(gateway.router, gateway.shadows.comparisons, gateway.ledger)
    skip = done_lines(out)
    counts: dict[str, int] = {}
    with out.open("a", encoding="utf-8") as written:
        for number, line in enumerate(lines):
            if number in skip or not line.strip():
                continue
            outcome = await _one(gateway.router, shadower, app, policy, number, line)
            counts[outcome["outcome"]] = counts.get(outcome["outcome"], 0) + 1
            written.write(json.dumps(outcome) + "\n")
            written.flush()
            _progress(number + 1, len(lines), counts, progress)
    progress.write("\n")
    return counts


async def _one(
    router: Router, shadower: Shadower, app: App, policy: ShadowPolicy, number: int, line: str
) -> dict[str, Any]:
    row: dict[str, Any] = {"line": number, "app": app.name}
    try:
        request = request_of(line)
        request.app = app.name
        signals, decision = router.decide(request, app.now())
        edge, cloud = router.models[policy.edge], router.models[policy.cloud]
        served = ServedRequest(f"replay-{number}", app.name, request, signals, decision, "edge", edge.name, "?")
        reason = why_not(served, cloud)  # before the edge answers: a private prompt costs nothing
        if reason is None:
            served = dataclasses.replace(served, answer=delivered_text((await edge.complete(request)).body))
            reason = why_not(served, cloud)
        if reason is not None:
            return {**row, "outcome": "skipped", "why": reason}
        comparison = await shadower.compare(served, policy, cloud)
    except (EdgewayError, ValueError) as exc:
        return {**row, "outcome": "failed", "why": exc.message if isinstance(exc, EdgewayError) else str(exc)}
    if comparison is None:
        return {**row, "outcome": "skipped", "why": "shadow budget spent"}
    return {**row, "outcome": comparison.verdict, "comparison": comparison.as_dict()}


def run(gateway: Gateway, app: App, source: Path, out: Path) -> int:
    lines = source.read_text(encoding="utf-8").splitlines()
    gateway.edge.load()
    try:
        counts = asyncio.run(_run(gateway, app, lines, out))
    finally:
        gateway.edge.close()
    print(f"{source}: {sum(counts.values())} lines replayed ({json.dumps(counts)}); outcomes in {out}")
    return 0


async def _run(gateway: Gateway, app: App, lines: list[str], out: Path) -> dict[str, int]:
    try:
        return await replay(gateway, app, lines, out)
    finally:
        await gateway.http.close()
