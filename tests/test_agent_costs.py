"""What an agent session costs through edgeway: the real Claude Code and Codex CLIs run the same
task direct to a provider that caches and bills as its vendor documents
(`gateway/bench/caching_provider.py`) and through edgeway on the cloud route, and edgeway's session
costs what the direct one does (the same cache reads: its breakpoints, thinking and cache key reach
the provider as sent), and its ledger's dollars are the provider's bill. The provider's caching rules
are tested first, as the vendors document them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.bench.caching_provider import (
    ANTHROPIC_RATES,
    MIN_CACHED,
    OPENAI_RATES,
    AgentScript,
    CachingProvider,
    Rates,
)
from gateway.bench.ports import LoopbackServer
from tests.conftest import GatewayProcess
from tests.test_agent_clients import CLAUDE, CODEX, TASK, installed, run, workspace

KEY = "costs-key-0123456789"
HAIKU = Rates(1.0, 5.0, read=0.1, write=1.25, write_1h=2.0)  # Claude Haiku's list price


# --- the provider's rules, as the vendors document them ----------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def long_system(words: int = 3000) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "word " * words, "cache_control": {"type": "ephemeral"}}]


def test_anthropic_writes_a_breakpoint_then_reads_it_until_it_expires():
    clock = Clock()
    provider = CachingProvider(clock=clock)
    body = {"model": "m", "system": long_system(), "messages": [{"role": "user", "content": "Hi"}]}
    first = provider._anthropic_usage(body)
    assert (
        first is not None
        and first["cache_creation_input_tokens"] > MIN_CACHED
        and first["cache_read_input_tokens"] == 0
    )
    clock.now = 299.0
    second = provider._anthropic_usage(body)
    assert second is not None and second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    clock.now = 299.0 + 301.0  # five minutes after the last read
    third = provider._anthropic_usage(body)
    assert third is not None and third["cache_read_input_tokens"] == 0


def test_anthropic_caches_nothing_under_its_minimum_and_takes_at_most_four_breakpoints():
    provider = CachingProvider()
    short = {"model": "m", "system": long_system(10), "messages": [{"role": "user", "content": "Hi"}]}
    assert provider._anthropic_usage(short)["cache_creation_input_tokens"] == 0  # type: ignore[index]
    marked = [{"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
    assert provider._anthropic_usage({"model": "m", "system": marked, "messages": []}) is None


def test_anthropic_finds_an_earlier_prefix_within_twenty_blocks_of_a_moved_breakpoint():
    provider = CachingProvider()
    turns = [{"role": "user", "content": [{"type": "text", "text": "turn " * 400}]}]
    body: dict[str, Any] = {"model": "m", "messages": turns}
    turns[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    written = provider._anthropic_usage(body)["cache_creation_input_tokens"]  # type: ignore[index]
    for n in range(3):  # the breakpoint moves to the newest turn
        del turns[-1]["content"][-1]["cache_control"]
        newest = {"type": "text", "text": f"more {n}", "cache_control": {"type": "ephemeral"}}
        turns += [{"role": "assistant", "content": [{"type": "text", "text": f"ok {n}"}]}]
        turns += [{"role": "user", "content": [newest]}]
        usage = provider._anthropic_usage(body)
        assert usage is not None and usage["cache_read_input_tokens"] >= written


def test_openai_caches_a_long_prefix_in_steps_of_128_tokens():
    provider = CachingProvider()
    base = {"model": "m", "prompt_cache_key": "s"}
    first = ["x" * 6000, "y" * 100]
    assert provider._openai_cached(base, first)[1] == 0  # nothing earlier to share
    total, cached = provider._openai_cached(base, [*first, "z" * 400])
    assert cached >= MIN_CACHED and (cached - MIN_CACHED) % 128 == 0 and cached <= total
    assert provider._openai_cached({**base, "prompt_cache_key": "other"}, first)[1] == 0


# --- the agents, direct and through edgeway -------------------------------------------------------
@pytest.fixture
def provider() -> Iterator[tuple[CachingProvider, str]]:
    caching = CachingProvider()
    with LoopbackServer(caching.app()) as server:
        yield caching, server.url


def gateway(
    provider_url: str, tmp: Path, models: dict[str, tuple[str, Rates]], policies: dict[str, str]
) -> GatewayProcess:
    """Edgeway before the provider: `models` (name -> provider model, its rates, as its price), and
    one app per policy (`app` -> its rules), keyed `KEY` and `KEY-app`."""
    configured = []
    for name, (provider_model, rates) in models.items():
        price = {"input_per_1m": rates.input, "output_per_1m": rates.output}
        price.update(cache_read_per_1m=rates.input * rates.read, cache_write_per_1m=rates.input * rates.write)
        price["cache_write_1h_per_1m"] = rates.input * rates.write_1h
        base = provider_url if provider_model.startswith("anthropic/") else provider_url + "/v1"
        configured.append({"name": name, "provider_model": provider_model, "api_key": "sk-costs", "api_base": base,
                           "price": price, "timeout_s": 60})  # fmt: skip
    apps = []
    for app, rules in policies.items():
        (tmp / f"{app}.yaml").write_text(f"app: {app}\nrules:\n{rules}")
        apps.append({"name": app, "key": key_of(app), "policy": str(tmp / f"{app}.yaml")})
    config = {
        "server": {"max_body_bytes": 8 * 1024 * 1024},
        "edge": {"models": [{"name": "smollm2", "gguf": "bundled:smollm2-135m", "n_ctx": 512}]},
        "cloud": {"models": configured},
        "apps": apps,
    }
    return GatewayProcess(config, tmp).wait_ready()


def key_of(app: str) -> str:
    return KEY if app == "agents" else f"{KEY}-{app}"


def ledger_usd(process: GatewayProcess, app: str = "agents") -> float:
    rows = httpx.get(
        process.url + "/api/usage", params={"app": app}, headers={"authorization": f"Bearer {key_of(app)}"}
    )
    return float(rows.json()["totals"]["cost_usd"])


def compare(caching: CachingProvider, direct: Any, through: Any) -> tuple[float, float, int, int]:
    """Run `direct`, then `through`, each against a fresh cache: their bills and cache reads."""
    caching.reset()
    direct()
    bill, read = caching.bill(), sum(b.cache_read_tokens for b in caching.billed)
    caching.reset()
    through()
    return bill, caching.bill(), read, sum(b.cache_read_tokens for b in caching.billed)


def test_a_claude_code_session_costs_through_edgeway_what_it_costs_direct(provider, tmp_path):
    claude = installed(CLAUDE, "npm ci --prefix tests/node")
    caching, url = provider
    caching.script = AgentScript("Bash", {"command": "echo hello > done.txt", "description": "Write it"}, "Done.")
    models = {"claude-top": ("anthropic/claude-sonnet-4-5", ANTHROPIC_RATES), "claude-small": (
        "anthropic/claude-haiku-4-5", HAIKU)}  # fmt: skip
    caching.rates["claude-haiku-4-5"] = HAIKU
    # `agents` sends everything to the top model; `ladder` climbs from the small one, and its step
    # (the prompt's length against 1.0) keeps the session there
    ladder = "  - {name: climb, route: auto, ladder: [claude-small, claude-top], thresholds: [1.0]}\n"
    process = gateway(url, tmp_path, models, {"agents": "  - {name: all, route: claude-top}\n", "ladder": ladder})

    def claude_code(base_url: str, model: str, folder: str, key: str = KEY) -> None:
        named = {"ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model}
        quiet = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        env = {
            "HOME": str(tmp_path / folder),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": key,
            **named,
            **quiet,
        }
        (tmp_path / folder).mkdir()
        command = [str(claude), "-p", TASK, "--model", model, "--allowedTools", "Bash", "--output-format", "json"]
        ran, _ = run(command, workspace(tmp_path / folder), env)
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
        assert (tmp_path / folder / "work" / "done.txt").read_text() == "hello\n"

    try:
        direct, through, read_direct, read_through = compare(
            caching,
            # Claude Code shapes its request by the model's name: the same one both ways (edgeway
            # knows the configured model by its provider's id), and folders of one length
            lambda: claude_code(url, "claude-sonnet-4-5", "one"),
            lambda: claude_code(process.url, "claude-sonnet-4-5", "two"),
        )
        assert read_direct > 0 and read_through == read_direct  # the same prefix read from the cache
        assert through <= 1.02 * direct, (through, direct)
        assert ledger_usd(process) == pytest.approx(through, rel=0.01)
        caching.reset()
        claude_code(process.url, "claude-sonnet-4-5", "six", key_of("ladder"))
        assert {b.model for b in caching.billed} == {"claude-haiku-4-5"}  # the session stayed down the ladder
        assert sum(b.cache_read_tokens for b in caching.billed) == read_direct and caching.bill() < direct
        assert ledger_usd(process, "ladder") == pytest.approx(caching.bill(), rel=0.01)
    finally:
        process.stop()


def test_a_codex_session_in_its_own_shape_costs_through_edgeway_what_it_costs_direct(provider, tmp_path):
    codex = installed(CODEX, "npm ci --prefix tests/node")
    caching, url = provider
    script = "const r = await tools.exec_command({cmd: 'echo hello > done.txt'}); text(JSON.stringify(r));"
    caching.script = AgentScript("exec", {"input": script}, "Done.")
    models = {"codex-model": ("openai/gpt-6.2-sol", OPENAI_RATES)}
    process = gateway(url, tmp_path, models, {"agents": "  - {name: all, route: codex-model}\n"})

    def codex_cli(base_url: str, folder: str) -> None:
        home = tmp_path / folder / "codex-home"
        home.mkdir(parents=True)
        (home / "config.toml").write_text(
            'model_provider = "p"\n\n[model_providers.p]\nname = "p"\n'
            f'base_url = "{base_url}/v1"\nenv_key = "COSTS_KEY"\nwire_api = "responses"\n'
        )
        env = {"HOME": str(tmp_path / folder), "CODEX_HOME": str(home), "COSTS_KEY": KEY}
        command = [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", TASK]
        ran, _ = run(command, workspace(tmp_path / folder), env)
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
        assert ran.stdout.strip().endswith("Done.")

    try:
        direct, through, read_direct, read_through = compare(
            caching, lambda: codex_cli(url, "one"), lambda: codex_cli(process.url, "two")
        )
        assert read_direct > 0 and read_through == read_direct
        assert through <= 1.02 * direct, (through, direct)
        assert ledger_usd(process) == pytest.approx(through, rel=0.01)
    finally:
        process.stop()
