"""The `edgeway` command as a user runs it."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time

import httpx
import openai

from gateway.bench.ports import free_port
from tests.conftest import ROOT


def edgeway(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command as a user runs it, with no provider keys but those `env` sets."""
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env=environment,
    )  # fmt: skip


def test_with_no_config_it_serves_the_bundled_model_without_keys_on_loopback(open_gateway):
    client = openai.OpenAI(base_url=open_gateway.url + "/v1", api_key="anything", max_retries=0)
    assert [m.id for m in client.models.list().data] == ["auto", "smollm2"]
    answer = client.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
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


def test_a_redis_store_without_a_key_is_a_config_error_at_its_line(tmp_path):
    config = tmp_path / "gw.yaml"
    config.write_text("server: {port: 0}\nstore: redis://127.0.0.1:6379/0\n")
    environment = {k: v for k, v in os.environ.items() if k != "EDGEWAY_STORE_KEY"}
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, env=environment)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"edgeway: invalid config:\n{config}:2:8: store_key: a Redis store needs a key")
    config.write_text("store: redis://127.0.0.1:6379/0\nstore_key: too-short\n")
    short = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, env=environment)  # fmt: skip
    assert short.returncode == 2, short.stderr
    assert f"{config}:2:12: store_key: a store key must be at least 16 characters (store_key has 9)" in short.stderr


def test_version_says_the_installed_release():
    result = edgeway("--version")
    assert result.returncode == 0 and re.fullmatch(r"edgeway \d+\.\d+\.\d+\S*\n", result.stdout)


def test_every_argument_of_every_verb_says_what_it_is_for():
    """`--help` at every level: each argument and each verb has its line of help."""
    from gateway.cli import command

    silent: list[str] = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                silent.extend(" ".join((*words, name)) for name in action.choices if name not in helped)
                for name, sub in action.choices.items():
                    walk(sub, (*words, name))
            elif not action.help or action.help == argparse.SUPPRESS:
                silent.append(" ".join((*words, action.option_strings[-1] if action.option_strings else action.dest)))

    walk(command(), ())
    assert silent == []


def test_a_port_in_use_is_refused_before_anything_loads(open_gateway, tmp_path):
    result = edgeway("serve", "--port", str(open_gateway.port))
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{open_gateway.port}: Address already in use" in result.stderr
    assert "edgeway ready" not in result.stderr and "loaded" not in result.stderr
    # at once: before the classifiers (the language identifier, name lists, number tables), the
    # models and the server are imported; the port as the config file gives it, too
    config = tmp_path / "taken.yaml"
    config.write_text(f"server: {{port: {open_gateway.port}}}\napps: [{{name: a, key: a-key-0123456789}}]\n")
    for args in (["--port", str(open_gateway.port)], ["--config", str(config)]):
        timed = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "gateway.cli", "serve", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert timed.returncode == 2 and "Address already in use" in timed.stderr, timed.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in timed.stderr.splitlines() if line.startswith("import time")}
        heavy = ("classifiers", "edge_runtime", "router", "policies", "llama_cpp", "uvicorn", "gateway.app")
        assert sorted(m for m in imported if m.split(".")[0] in heavy or m in heavy) == [], args


def test_json_logs_are_one_object_a_line_uvicorns_too(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--log-format", "json"],
        cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
    finally:
        process.terminate()
        said = process.communicate(timeout=30)[1]
    lines = [json.loads(line) for line in said.splitlines()]
    assert {"uvicorn.error", "edgeway"} <= {line["logger"] for line in lines}
    assert all(set(line) >= {"ts", "level", "logger", "message"} for line in lines)
    ready = next(line["message"] for line in lines if line["message"].startswith("edgeway ready"))
    assert f"on http://127.0.0.1:{port}; dashboard: http://127.0.0.1:{port}/dashboard" in ready


def test_the_start_up_log_names_the_store_without_its_password():
    from gateway.app import _without_credentials

    assert _without_credentials("redis://:hunter2@redis.internal:6379/0") == "redis://redis.internal:6379/0"
    assert _without_credentials("sqlite:///ledger.db") == "sqlite:///ledger.db"


def test_starting_prints_no_llama_cpp_warning(open_gateway):
    assert "n_ctx_train" not in open_gateway.log() and "llama_context" not in open_gateway.log()


def test_policy_check_without_a_config_says_what_it_checked_model_names_against(tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text("app: x\ndefaults: {cloud: gpt-4o}\nrules:\n  - {name: a, route: cloud}\n")
    result = edgeway("policy", "check", str(policy))
    assert result.returncode == 1
    assert "unknown cloud model 'gpt-4o': this gateway has no cloud model" in result.stderr
    assert "pass --config FILE" in result.stderr


def test_with_no_config_and_a_provider_key_private_data_stays_local_and_the_rest_is_routed():
    """The default policy: with no config and OPENAI_API_KEY set, `auto` is the app's router's to
    decide between the bundled model and gpt-4o-mini, and a private request stays on the edge."""
    keyed = {"OPENAI_API_KEY": "sk-test-not-called"}
    private = json.loads(edgeway("explain", "Mail jane.roe@example.com about it.", env=keyed).stdout)
    assert (private["decision"]["rule"], private["decision"]["targets"]) == ("private-stays-local", ["smollm2"])
    routed = json.loads(edgeway("explain", "Prove that there are infinitely many primes.", env=keyed).stdout)
    assert routed["decision"]["rule"] == "default" and set(routed["decision"]["targets"]) == {"smollm2", "gpt-4o-mini"}
    assert routed["decision"]["auto"] is not None


def test_explain_prints_signals_and_decision_without_calling_a_model():
    result = edgeway("explain", "What is 2 + 2?")
    assert result.returncode == 0, result.stderr
    explained = json.loads(result.stdout)
    assert explained["decision"]["targets"] == ["smollm2"]
    assert explained["decision"]["rule"] == "default-edge"
    assert explained["signals"]["prompt_tokens"] > 5


def test_readiness_reports_time_to_ready(open_gateway):
    assert httpx.get(open_gateway.url + "/readyz").json()["ready_seconds"] > 0


def test_edge_plan_reads_the_kv_cost_per_token_from_the_gguf_and_serve_refuses_what_cannot_fit(tmp_path):
    result = edgeway("edge", "plan")
    assert result.returncode == 0, result.stderr
    # SmolLM2-135M: 30 layers x 3 KV heads x 64 x 2 (K, V) x 2 bytes = 23,040 bytes a token
    assert "22.5Ki" in result.stdout and "30 layers x 3 KV heads x 64 x 2 x 2 B" in result.stdout
    config = tmp_path / "huge.yaml"
    config.write_text("edge:\n  models:\n    - {name: huge, n_ctx: 100000000}\n")
    assert edgeway("edge", "plan", "--config", str(config)).returncode == 1
    refused = edgeway("serve", "--config", str(config), "--port", "0")
    assert refused.returncode == 2 and "refusing to start" in refused.stderr and "lower n_ctx" in refused.stderr


def test_a_draft_model_is_planned_beside_its_model_and_a_missing_one_refuses_to_start(tmp_path):
    from edge_runtime.gguf import resolve_gguf

    config = tmp_path / "draft.yaml"
    draft = resolve_gguf("bundled:smollm2-135m")  # the model as its own draft: the same figures
    config.write_text(f"edge:\n  models:\n    - {{name: smollm2, speculative: {{mode: draft, draft_gguf: {draft}}}}}\n")
    result = edgeway("edge", "plan", "--config", str(config))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("smollm2 ") and lines[2].startswith("smollm2 draft")
    # the draft's cache: the model's 4,096 cells and a batch (512) more, at 22.5 KiB each
    assert "101.2Mi" in lines[2] and "90.0Mi" in lines[1]
    missing_draft = "{name: smollm2, speculative: {mode: draft, draft_gguf: /nowhere.gguf}}"
    config.write_text(f"edge:\n  models:\n    - {missing_draft}\n")
    missing = edgeway("edge", "plan", "--config", str(config))
    assert missing.returncode == 2 and "model file not found: /nowhere.gguf" in missing.stderr
    refused = edgeway("serve", "--config", str(config), "--port", "0")
    assert refused.returncode == 2 and "refusing to start: model file not found: /nowhere.gguf" in refused.stderr


def test_a_draft_model_with_another_vocabulary_refuses_to_start(tmp_path):
    import gguf

    from edge_runtime.gguf import resolve_gguf
    from gateway.bench.draft_model import copy_metadata, strings

    bundled = resolve_gguf("bundled:smollm2-135m")
    reader = gguf.GGUFReader(bundled)
    tokens = strings(reader, "tokenizer.ggml.tokens")
    tokens[2] = "lamp"  # one token that means something else: every id after it could too
    foreign = tmp_path / "foreign.gguf"  # its vocabulary alone: the check reads no weights
    writer = gguf.GGUFWriter(foreign, "llama")
    copy_metadata(reader, writer, {"tokenizer.ggml.tokens": tokens})
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    config = tmp_path / "foreign.yaml"
    drafted = f"{{name: smollm2, speculative: {{mode: draft, draft_gguf: {foreign}}}}}"
    config.write_text(f"edge:\n  models:\n    - {drafted}\n")
    refused = edgeway("serve", "--config", str(config), "--port", "0")
    assert refused.returncode == 2
    assert f"refusing to start: the draft model {foreign} cannot draft for smollm2: token 2 is" in refused.stderr
