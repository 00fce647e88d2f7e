"""Agent sessions at their provider's price: a Claude Code session and a Codex session, each sent
direct to a provider that caches and bills as its vendor documents (`caching_provider`), then
through edgeway on the cloud route, then through edgeway under a ladder (the main loop climbs to
the top model, an agent's side requests stay on a cheaper one). Printed per session and run:
prompt tokens billed at the full input price, cache reads and writes, the provider's bill, what
edgeway's ledger charged for it, and the latency edgeway added per turn (median), and the first
request after edgeway is ready.

The sessions are made here, in each agent's request shape: Claude Code's (Messages; a system prompt
and tools with `cache_control`, a breakpoint moving to the latest tool result, adaptive thinking
whose signed blocks come back every turn, `metadata.user_id` with its session) and Codex CLI's
(Responses; its tools as an `additional_tools` item, reasoning kept encrypted between turns,
`prompt_cache_key` its session, `store: false`); the context grows by a tool call and its result
each turn, as an agent's does.
"""

from __future__ import annotations

import copy
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.bench.caching_provider import ANTHROPIC_RATES, OPENAI_RATES, CachingProvider, Rates
from gateway.bench.ports import LoopbackServer, free_port

TURNS = 12
WORDS = "the a module test parser value file change config request answer error line function result".split()
KEY = "bench-agents-0123456789"
CHEAP = Rates(1.0, 5.0, read=0.1, write=1.25, write_1h=2.0)  # Claude Haiku's list price
MODELS = {"claude-top": ("anthropic/claude-sonnet-4-5", ANTHROPIC_RATES), "claude-small": (
    "anthropic/claude-haiku-4-5", CHEAP), "gpt-top": ("openai/gpt-5", OPENAI_RATES)}  # fmt: skip


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _schema(rng: random.Random, fields: int) -> dict[str, Any]:
    properties = {f"field_{i}": {"type": "string", "description": _text(rng, 12)} for i in range(fields)}
    return {"type": "object", "properties": properties, "required": list(properties)[:1]}


def claude_code(seed: int = 1) -> Iterator[dict[str, Any]]:
    """A Claude Code session's main-loop requests, turn by turn (Messages)."""
    rng = random.Random(seed)
    tools = [{"name": f"Tool{i}", "description": _text(rng, 60), "input_schema": _schema(rng, 4)} for i in range(18)]
    body: dict[str, Any] = {
        "model": "claude-top",
        "max_tokens": 32000,
        "stream": True,
        "system": [
            {"type": "text", "text": "You are Claude Code, an agent for software engineering."},
            {"type": "text", "text": _text(rng, 2400), "cache_control": {"type": "ephemeral"}},
        ],
        "tools": tools,
        "messages": [{"role": "user", "content": [{"type": "text", "text": _text(rng, 40)}]}],
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "medium"},
        "metadata": {"user_id": f"user_bench_account_bench_session_{seed:04d}"},
    }
    for turn in range(TURNS):
        sent = copy.deepcopy(body)
        last = sent["messages"][-1]["content"][-1]
        last["cache_control"] = {"type": "ephemeral"}  # the breakpoint moves to the newest turn
        yield sent
        thought = {"type": "thinking", "thinking": _text(rng, 30), "signature": f"EqQBsig{seed}{turn}"}
        call = {"type": "tool_use", "id": f"toolu_{turn}", "name": f"Tool{turn % 18}", "input": {"field_0": "x"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": _text(rng, 250)}
        body["messages"] += [{"role": "assistant", "content": [thought, call]}, {"role": "user", "content": [result]}]


def claude_side_request(seed: int) -> dict[str, Any]:
    """An agent's side request (a title, a summary): short, and a session of its own."""
    rng = random.Random(seed)
    ask = {"role": "user", "content": f"Write a five-word title for: {_text(rng, 30)}"}
    return {"model": "claude-top", "max_tokens": 64, "stream": True, "messages": [ask]}


def codex(seed: int = 2) -> Iterator[dict[str, Any]]:
    """A Codex CLI session's requests, turn by turn (Responses, its own default shape)."""
    rng = random.Random(seed)
    functions = [{"type": "function", "name": f"tool_{i}", "description": _text(rng, 50), "strict": False,
                  "parameters": _schema(rng, 3)} for i in range(10)]  # fmt: skip
    exec_tool = {"type": "custom", "name": "exec", "description": _text(rng, 300),
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/s"}}  # fmt: skip
    namespace = {"type": "namespace", "name": "functions", "description": "", "tools": [exec_tool, *functions]}
    tools = {"type": "additional_tools", "id": "at_bench", "role": "developer", "tools": [namespace]}
    developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": _text(rng, 2200)}]}
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": _text(rng, 40)}]}
    body: dict[str, Any] = {
        "model": "gpt-top",
        "stream": True,
        "input": [tools, developer, ask],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "context": "all_turns"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": f"0199bench-{seed:04d}",
    }
    for turn in range(TURNS):
        yield copy.deepcopy(body)
        reasoning = {"type": "reasoning", "id": f"rs_{turn}", "summary": [], "encrypted_content": _text(rng, 40)}
        call = {"type": "function_call", "call_id": f"call_{turn}", "name": "tool_1", "arguments": '{"field_0": "x"}'}
        output = {"type": "function_call_output", "call_id": f"call_{turn}", "output": _text(rng, 250)}
        body["input"] += [reasoning, call, output]


@dataclass
class Run:
    """One session sent one way: what the provider billed, what the ledger charged, and each turn's time."""

    full: int = 0  # prompt tokens billed at the full input price
    read: int = 0
    written: int = 0
    bill: float = 0.0
    ledger: float = 0.0
    seconds: tuple[float, ...] = ()


def _send(url: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[float, str | None]:
    started = time.perf_counter()
    with httpx.stream("POST", url + path, json=body, headers=headers, timeout=120) as response:
        response.read()
        if response.status_code != 200:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:300]}")
        return time.perf_counter() - started, response.headers.get("x-edgeway-request-id")


def _replay(
    provider: CachingProvider,
    url: str,
    requests: list[tuple[str, dict[str, Any]]],
    names: dict[str, str] | None = None,
    key: str = KEY,
) -> tuple[Run, list[str]]:
    """Send `requests` in order (their model renamed by `names`, direct), and what they cost."""
    provider.reset()
    headers = {"x-api-key": key, "authorization": f"Bearer {key}", "anthropic-version": "2023-06-01"}
    seconds, ids = [], []
    for path, body in requests:
        sent = {**body, "model": names[body["model"]]} if names is not None else body
        took, request_id = _send(url, path, sent, headers)
        seconds.append(took)
        if request_id:
            ids.append(request_id)
    run = Run(seconds=tuple(seconds), bill=provider.bill())
    for billed in provider.billed:
        run.full += billed.input_tokens + billed.cache_write_tokens
        run.read += billed.cache_read_tokens
        run.written += billed.cache_write_tokens
    return run, ids


def _config(provider_url: str, tmp: Path) -> Path:
    models = []
    for name, (provider_model, rates) in MODELS.items():
        base = provider_url if provider_model.startswith("anthropic/") else provider_url + "/v1"
        price = {"input_per_1m": rates.input, "output_per_1m": rates.output}
        price.update(cache_read_per_1m=rates.input * rates.read, cache_write_per_1m=rates.input * rates.write)
        price["cache_write_1h_per_1m"] = rates.input * rates.write_1h
        models.append({"name": name, "provider_model": provider_model, "api_key": "sk-bench", "api_base": base,
                       "price": price, "timeout_s": 60})  # fmt: skip
    ladder = "app: ladder\ndefaults: {cloud: claude-top}\nrules:\n  - name: climb\n    route: auto\n"
    ladder += "    ladder: [claude-small, claude-top]\n"
    (tmp / "ladder.yaml").write_text(ladder)
    config = {
        "server": {"max_body_bytes": 8 * 1024 * 1024},
        "edge": {"models": [{"name": "smollm2", "gguf": "bundled:smollm2-135m", "n_ctx": 512}]},
        "cloud": {"models": models},
        "apps": [
            {"name": "agents", "key": KEY},
            {"name": "ladder", "key": KEY + "-ladder", "policy": str(tmp / "ladder.yaml")},
        ],
    }
    path = tmp / "edgeway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class Gateway:
    def __init__(self, config: Path) -> None:
        import subprocess
        import sys

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(self.port), "--config", str(config)]
        command += ["--log-level", "warning"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        self.process.terminate()
        raise RuntimeError("edgeway was not ready within 90 s")

    def ledger(self, ids: list[str], key: str) -> float:
        """What the ledger charged for these requests (the app's rows, read with its key)."""
        wanted = set(ids)
        return sum(float(r["cost_usd"]) for r in _all_rows(self.url, key) if r["request_id"] in wanted)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _all_rows(url: str, key: str) -> list[dict[str, Any]]:
    import csv
    import io

    text = httpx.get(url + "/api/usage", params={"format": "csv"}, headers={"authorization": f"Bearer {key}"}).text
    return [{**r, "cost_usd": float(r["cost_usd"])} for r in csv.DictReader(io.StringIO(text))]


def _print(session: str, runs: dict[str, Run]) -> None:
    direct = runs["direct"]
    print(f"\n{session}: {TURNS} turns")
    print(f"{'run':<16} {'billed full':>12} {'cache read':>11} {'written':>9} {'bill $':>9} {'ledger $':>9} "
          f"{'/direct':>8} {'ledger/bill':>11} {'added ms/turn':>14}")  # fmt: skip
    for name, run in runs.items():
        added = statistics.median(a - b for a, b in zip(run.seconds, direct.seconds, strict=False)) * 1e3
        ledger = f"{run.ledger:>9.4f}" if name != "direct" else f"{'-':>9}"
        ratio = f"{run.ledger / run.bill:>11.4f}" if name != "direct" and run.bill else f"{'-':>11}"
        print(f"{name:<16} {run.full:>12} {run.read:>11} {run.written:>9} {run.bill:>9.4f} {ledger} "
              f"{run.bill / direct.bill:>8.3f} {ratio} {added if name != 'direct' else 0:>14.1f}")  # fmt: skip


def run(repeat: int = 1) -> None:
    provider = CachingProvider(rates={m.split("/", 1)[1]: r for m, r in MODELS.values()})
    with LoopbackServer(provider.app()) as server, tempfile.TemporaryDirectory() as tmp:
        gateway = Gateway(_config(server.url, Path(tmp)))
        try:
            first = claude_side_request(99)
            direct_first, _ = _send(server.url, "/v1/messages", first, {"x-api-key": KEY})
            gateway_first, _ = _send(gateway.url, "/v1/messages", first, {"x-api-key": KEY})
            added = 1e3 * (gateway_first - direct_first)
            print(f"first request after ready: {gateway_first * 1e3:.1f} ms through edgeway, "
                  f"{direct_first * 1e3:.1f} ms direct (added {added:.1f} ms)")  # fmt: skip
            sessions = {
                "Claude Code (Messages)": [("/v1/messages", b) for b in claude_code()],
                "Codex CLI (Responses)": [("/v1/responses", b) for b in codex()],
            }
            sides = [("/v1/messages", claude_side_request(s)) for s in range(3)]
            for session, requests in sessions.items():
                for _ in range(repeat):
                    ids_of = {name: provider_model.split("/", 1)[1] for name, (provider_model, _) in MODELS.items()}
                    runs: dict[str, Run] = {}
                    runs["direct"], _ = _replay(provider, server.url, requests + sides, ids_of)
                    cloud, ids = _replay(provider, gateway.url, requests + sides)
                    cloud.ledger = gateway.ledger(ids, KEY)
                    runs["edgeway cloud"] = cloud
                    if session.startswith("Claude"):
                        laddered = [(p, {**b, "model": "auto"}) for p, b in requests + sides]
                        ladder, ids = _replay(provider, gateway.url, laddered, key=KEY + "-ladder")
                        ladder.ledger = gateway.ledger(ids, KEY + "-ladder")
                        runs["edgeway ladder"] = ladder
                    _print(session, runs)
        finally:
            gateway.stop()
