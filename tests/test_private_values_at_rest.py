"""Private values a gateway saw are never written unmasked where it keeps things: its log, the
ledger (JSON, CSV, the SQLite file itself) or the usage the dashboard shows. Each API sends them,
streamed and not, to an app that keeps prompts (`log_prompts`), while the provider fails with an
error that quotes the prompt back (the usual way a value reaches a log) and the gateway logs at
debug level."""

from __future__ import annotations

import base64
import json
import logging
import re
import sqlite3
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from classifiers.privacy import PrivacyScanner
from classifiers.privacy.known import Known
from classifiers.signals import Scorer
from edge_runtime.gguf import ModelFileError
from gateway.masked_logs import MaskPrivate
from router.client_values import ClientValues
from router.request import parse_chat_request
from router.routing import Router
from tests import spellings
from tests.conftest import APP_KEYS, BETA_POLICY, PRIVATE_POLICY, GatewayProcess, client_for, gateway_config
from tests.fake_upstream import Fault
from tests.otlp_receiver import HttpReceiver, ReceivedSpan, SpanSink
from tests.test_batches import MASKING_POLICY

ADMIN = "admin-key-at-rest-0123"
SSN, EMAIL, CARD = "123-45-6789", "jane.roe@example.com", "4111 1111 1111 1111"
PRIVATE = (SSN, EMAIL, CARD, "4111111111111111", "jane.roe")
SAID = f"My SSN is {SSN}, write to {EMAIL}, my card is {CARD}."
NAME = "Nadia Kowalczyk"
SCANNER_OF_REQUESTS = Scorer()  # what a gateway reads requests with


@pytest.fixture(scope="module")
def keeper(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("at-rest")
    (tmp / "keeper.yaml").write_text(BETA_POLICY)  # everything to the cloud, the edge as fallback
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN, store=f"sqlite:///{tmp / 'ledger.db'}")
    config["apps"] = [
        {"name": "beta", "key": APP_KEYS["beta"], "policy": str(tmp / "keeper.yaml"), "log_prompts": True}
    ]
    process = GatewayProcess(config, tmp, args=["--log-level", "debug"])
    process.ledger_path = tmp / "ledger.db"  # type: ignore[attr-defined]
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def quoting_failures(upstream) -> None:
    """The provider refuses each of the next calls, quoting the prompt back in its error."""
    upstream.fail_next(Fault(status=500, message=f"could not process the input: {SAID}"), times=20)


def send_everything(gateway: GatewayProcess, upstream) -> None:
    openai_client = client_for(gateway, "beta")
    quoting_failures(upstream)
    for stream in (False, True):
        answer = openai_client.chat.completions.create(
            model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=3, stream=stream
        )
        if stream:
            list(answer)
    openai_client.completions.create(model="gpt-fake", prompt=SAID, max_tokens=3)
    openai_client.embeddings.create(model="smollm2", input=[SAID])
    for stream in (False, True):
        responses = openai_client.responses.create(model="auto", input=SAID, max_output_tokens=16, stream=stream)
        if stream:
            list(responses)
    claude = anthropic.Anthropic(base_url=gateway.url, api_key=APP_KEYS["beta"], max_retries=0)
    claude.messages.create(model="auto", max_tokens=3, messages=[{"role": "user", "content": SAID}])
    with claude.messages.stream(model="auto", max_tokens=3, messages=[{"role": "user", "content": SAID}]) as events:
        list(events)
    upstream.reset()


def test_no_private_value_is_kept_unmasked_by_any_api(keeper, upstream):
    send_everything(keeper, upstream)
    admin = {"authorization": f"Bearer {ADMIN}"}
    rows = httpx.get(keeper.url + "/api/usage", headers=admin).json()["recent"]
    csv = httpx.get(keeper.url + "/api/usage", params={"format": "csv"}, headers=admin).text
    prompts = [r["prompt"] for r in rows if r.get("prompt")]
    assert len(prompts) >= 6, rows  # the app kept its prompts, masked
    assert all("[US_SSN" in p or "[EMAIL" in p or "[CREDIT_CARD" in p for p in prompts), prompts
    log = keeper.log()
    assert "could not process the input" in log  # the provider's error was logged, masked
    ledger_file = keeper.ledger_path.read_bytes().decode("latin-1")
    for kept, where in ((str(rows), "the usage rows"), (csv, "the CSV"), (log, "the log"), (ledger_file, "the db")):
        for value in PRIVATE:
            assert value not in kept, (value, where)


def heard(*prompts: str) -> ClientValues:
    """The private values a router notes of requests that said `prompts` (what the log masks)."""
    router = Router({}, SCANNER_OF_REQUESTS)
    for prompt in prompts:
        router.signals(parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": prompt}]}))
    return router.client_values


def test_a_log_record_is_masked_in_its_message_arguments_and_traceback():
    handler_records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            handler_records.append(self.format(record))

    logger = logging.getLogger("edgeway.test-at-rest")
    handler = Keep()
    handler.addFilter(MaskPrivate(heard(f"{SAID} Sign it {NAME}.", "Ask 203.0.113.9 and 127.0.0.1 for it.")))
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("provider said: %s (see https://status.example.com)", SAID)
        logger.warning("listening on %s and %s; a client at %s asked", "127.0.0.1:8080", "[::1]:8080", "203.0.113.9")
        try:
            raise ValueError(f"bad input {SAID}")
        except ValueError:
            logger.exception("request failed for %s", EMAIL)
        try:  # an exception whose message spans indented lines
            raise ModelFileError(f"could not read:\n    {SAID}\n    Dear {NAME}, your claim is denied")
        except ModelFileError:
            logger.exception("start-up failed")
            logger.error(traceback.format_exc())  # a traceback inside the message, as uvicorn logs one
    finally:
        logger.removeHandler(handler)
    written = "\n".join(handler_records)
    assert all(value not in written for value in PRIVATE), written
    assert "https://status.example.com" in written  # a link is what a log names, kept
    assert 'raise ValueError(f"bad input {SAID}")' in written  # the code of a frame, as written
    assert NAME not in written and "Dear [PERSON], your claim is denied" in written  # the client's name
    assert "raise ModelFileError(" in written and "ModelFileError: could not read:" in written
    assert "[US_SSN]" in written and "[EMAIL]" in written
    assert "127.0.0.1:8080 and [::1]:8080" in written and "203.0.113.9" not in written  # loopback is no one's


def test_an_operators_own_diagnostics_are_written_as_they_are():
    """Only what a client sent is masked: the server's, its libraries' and the operator's own
    words stay as written, capitals, numbers and all, while requests with names and numbers are
    being served."""
    kept = Kept(heard(f"{SAID} Sign it {NAME}.", "Reply to jane.doe@example.com by Friday, Errol."))
    router, policies, exporter = kept.of("edgeway.router"), kept.of("edgeway.policies"), kept.of("opentelemetry.test")
    diagnostics = [
        "rule default: gpt-4o-mini failed (could not connect to api.openai.com:443 ([Errno -2] Name or service "
        "not known)); 1 fallback(s) left",
        "policy for app support NOT reloaded; the last good one stays in force:\n"
        "policies/support.yaml:7:3: not valid YAML: expected <block end>, but found '-' while parsing a block mapping",
        "Transient error StatusCode.UNAVAILABLE encountered while exporting traces to localhost:4317, retrying in 1s.",
        "Failed to export span batch code: 503, reason: Service Unavailable",
    ]
    try:
        router.warning("rule %s: %s failed (%s); %d fallback(s) left", Known("default"), Known("gpt-4o-mini"),
                       diagnostics[0].split("failed (", 1)[1].rsplit("); ", 1)[0], 1)  # fmt: skip
        policies.error("policy for app %s NOT reloaded; the last good one stays in force:\n%s", Known("support"),
                       diagnostics[1].split("\n", 1)[1])  # fmt: skip
        exporter.warning(diagnostics[2])
        exporter.error(diagnostics[3])
        router.warning("gpt-4o-mini failed (the provider answered 500: %s)", f"Dear {NAME}, your {SSN} is denied")
    finally:
        for name in ("edgeway.router", "edgeway.policies", "opentelemetry.test"):
            logging.getLogger(name).removeHandler(kept)
    for diagnostic, line in zip(diagnostics, kept.lines, strict=False):
        assert line == diagnostic
    assert kept.lines[-1] == "gpt-4o-mini failed (the provider answered 500: Dear [PERSON], your [US_SSN] is denied)"


def test_the_configured_models_names_are_not_read_as_people_in_the_log():
    names = ["smollm2", "gpt-fake", "openai/gpt-4o-mini", "gpt-4o-mini", "claude-fake"]
    names += ["anthropic/claude-3-5-haiku-latest", "claude-3-5-haiku-latest"]
    ready = (
        "edge models: smollm2 (n_ctx 2048) (loaded in 0.52 s); cloud models: gpt-fake (openai/gpt-4o-mini), "
        "claude-fake (anthropic/claude-3-5-haiku-latest)"
    )
    said = ClientValues()
    said.note([("PERSON", "claude"), ("PERSON", "Claude Kowalczyk")])  # a client's names for someone
    assert "[PERSON]-fake" in MaskPrivate(said).mask(ready)  # "claude" in a model's name, as a client said it
    masker = MaskPrivate(said, names)
    assert masker.mask(ready) == ready
    # only where a model's whole name stands: a person called Claude elsewhere is still masked
    told = f"claude-fake failed (claude-fake: the provider answered 500: Dear Claude {NAME[6:]}, {SSN})"
    said.note([("US_SSN", SSN)])
    written = masker.mask(told)
    assert written.startswith("claude-fake failed (claude-fake:") and "Kowalczyk" not in written
    assert SSN not in written


def test_a_value_is_masked_as_a_whole_word_for_as_long_as_it_is_kept():
    now = [0.0]
    said = ClientValues(keep_s=60, most=3, clock=lambda: now[0])
    said.note([("PERSON", "Ann Lee"), ("POSTAL_CODE", "10001"), ("URL", "https://example.com/ann")])
    masker = MaskPrivate(said)
    written = masker.mask("Annual report for Ann (10001 rows, 910001 bytes)")
    assert written == "Annual report for [PERSON] ([POSTAL_CODE] rows, 910001 bytes)"  # not inside a word
    assert masker.mask("see https://example.com/ann") == "see https://example.com/ann"  # a link, never masked
    now[0] = 61.0
    said.note([("EMAIL", "ann@example.com")])  # forgets what is older than a minute
    assert masker.mask("Ann Lee, ann@example.com") == "Ann Lee, [EMAIL]"
    said.note([("US_SSN", "123-45-6789"), ("US_SSN", "987-65-4321"), ("US_SSN", "111-22-3333")])
    assert masker.mask("ann@example.com 123-45-6789") == "ann@example.com [US_SSN]"  # the latest 3 kept


class Kept(logging.Handler):
    """The records a logger wrote, formatted, after the masker."""

    def __init__(self, values: ClientValues | None = None) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.addFilter(MaskPrivate(values or heard(f"{SAID} Sign it {NAME}."), ["smollm2", "claude-fake"]))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def of(self, name: str):
        logger = logging.getLogger(name)
        logger.addHandler(self)
        logger.propagate = False
        return logger


def test_the_servers_own_words_ids_and_class_names_are_written_as_they_are():
    kept = Kept()
    uvicorn, edgeway = kept.of("uvicorn.error"), kept.of("edgeway.test-own-words")
    uvicorn.setLevel(logging.INFO)
    request_id = "d3a516bac1e7f0a2b9c4e5d6a7b8c9d0"
    try:
        uvicorn.info("Uvicorn running on %s://%s:%d (Press CTRL+C to quit)", "http", "127.0.0.1", 8765)
        uvicorn.info("Started server process [%d]", 6126)
        try:
            raise ModelFileError(f"Dear {NAME}, your claim {SSN} is denied")
        except ModelFileError:
            edgeway.exception("unexpected error in request %s", Known(request_id))
        edgeway.warning("rule %s: %s failed (%s)", Known("pii-stays-local"), Known("smollm2"), f"said {SSN}")
    finally:
        uvicorn.setLevel(logging.NOTSET)
        for name in ("uvicorn.error", "edgeway.test-own-words"):
            logging.getLogger(name).removeHandler(kept)
    written = "\n".join(kept.lines)
    assert "Uvicorn running on http://127.0.0.1:8765 (Press CTRL+C to quit)" in written
    assert "Started server process [6126]" in written
    assert f"unexpected error in request {request_id}" in written  # greppable from the response header
    assert "edge_runtime.gguf.ModelFileError: Dear [PERSON], your claim [US_SSN] is denied" in written
    assert "rule pii-stays-local: smollm2 failed (said [US_SSN])" in written
    assert SSN not in written and NAME not in written


def test_another_librarys_message_is_read_whole():
    kept = Kept()
    library = kept.of("litellm.test-whole")
    try:
        library.warning(f"Request to the provider failed; the prompt was: {SAID}")
    finally:
        logging.getLogger("litellm.test-whole").removeHandler(kept)
    (written,) = kept.lines
    assert all(value not in written for value in PRIVATE) and "[US_SSN]" in written


def test_every_request_gets_one_access_line_with_its_id_and_never_its_prompt(keeper, upstream):
    client = client_for(keeper, "beta")
    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=3
    )
    request_id = raw.headers["x-edgeway-request-id"]
    health = httpx.get(keeper.url + "/healthz?key=not-logged")
    lines = [line for line in keeper.log().splitlines() if "edgeway.access" in line]
    (line,) = [line for line in lines if request_id in line]
    assert f"request {request_id} POST /v1/chat/completions 200" in line
    assert "app=beta route=cloud model=gpt-fake rule=" in line
    # a poll's line is DEBUG (this gateway logs at debug): health checks, scrapes and dashboard
    # refreshes do not fill an INFO log
    polled = [line for line in lines if "GET /healthz 200" in line]
    assert health.status_code == 200 and polled and all("DEBUG edgeway.access" in line for line in polled)
    assert not any("not-logged" in line or SSN in line for line in lines)


# --- the store's files, the log and the spans, under every policy ------------------------------
SCANNER = PrivacyScanner()  # what the masking app refuses: words no detector reads
STORED_APPS = {"kept": "kept-app-key-0123", "local": "local-app-key-0123", "masked": "masked-app-key-0123"}
CACHED = "cache: {ttl_s: 3600, sampled: true, semantic: true, min_similarity: 0.5}\nrules:"
RESTING = (SSN, EMAIL, CARD, "4111111111111111", "jane.roe", NAME, "Kowalczyk")
ASKED = f"{SAID} Sign it {NAME}."


@pytest.fixture(scope="module")
def resting(upstream, tmp_path_factory, routing_edge_gguf) -> Iterator[tuple[GatewayProcess, SpanSink, Path]]:
    """A gateway on SQLite with three apps (to the cloud and logging prompts, kept local, masked
    to the cloud), each caching answers, its spans exported to a receiver."""
    tmp = tmp_path_factory.mktemp("resting")
    store = tmp / "store"
    store.mkdir()
    policies = {
        "kept": BETA_POLICY.replace("app: beta", "app: kept"),
        "local": PRIVATE_POLICY.replace("app: private", "app: local"),
        "masked": MASKING_POLICY,
    }
    apps = []
    for name, policy in policies.items():
        (tmp / f"{name}.yaml").write_text(policy.replace("rules:", CACHED, 1))
        apps.append({"name": name, "key": STORED_APPS[name], "policy": str(tmp / f"{name}.yaml"),
                     "log_prompts": name == "kept"})  # fmt: skip
    config = gateway_config(upstream.url, tmp, store=f"sqlite:///{store / 'ledger.db'}")
    config["edge"]["models"][0]["gguf"] = str(routing_edge_gguf)
    config["apps"] = apps
    config["batches"] = {"concurrency": 2, "provider_poll_s": 0.1}
    with HttpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
               "OTEL_BSP_SCHEDULE_DELAY": "50"}  # fmt: skip
        process = GatewayProcess(config, tmp, env=env, args=["--log-level", "debug"])
        try:
            yield process.wait_ready(), receiver.sink, store
        finally:
            process.stop()


def exported(gateway: GatewayProcess, spans: SpanSink) -> list[ReceivedSpan]:
    """Every span the gateway exported, once they have settled; where none came, what its log
    says of tracing and exporting (CI has seen no span at all arrive once in many runs)."""
    try:
        return spans.settled()
    except AssertionError as exc:
        said = [line for line in gateway.log().splitlines() if re.search(r"(?i)otel|opentelemetry|export|trac", line)]
        raise AssertionError(f"{exc}; the gateway's log on tracing:\n" + "\n".join(said[-30:])) from None


def ask_every_way(gateway: GatewayProcess, app: str) -> None:
    """Chat (twice, so the second is a cache hit, exact or by meaning), streamed, Responses,
    Messages, and a batch whose lines, metadata and output hold the values."""
    sdk = openai.OpenAI(base_url=gateway.url + "/v1", api_key=STORED_APPS[app], max_retries=0)
    messages = [{"role": "user", "content": ASKED}]
    for content in (ASKED, ASKED, ASKED.replace("Sign it", "Please sign it")):
        sdk.chat.completions.create(model="auto", messages=[{"role": "user", "content": content}], max_tokens=4,
                                    temperature=0)  # fmt: skip
    list(sdk.chat.completions.create(model="auto", messages=messages, max_tokens=4, stream=True))
    sdk.responses.create(model="auto", input=ASKED, max_output_tokens=16)
    claude = anthropic.Anthropic(base_url=gateway.url, api_key=STORED_APPS[app], max_retries=0)
    claude.messages.create(model="auto", max_tokens=4, messages=messages)
    lines = [{"custom_id": f"line-{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "auto", "max_tokens": 4, "messages": messages}} for i in range(2)]  # fmt: skip
    uploaded = sdk.files.create(file=("lines.jsonl", "".join(json.dumps(line) + "\n" for line in lines).encode()),
                                purpose="batch")  # fmt: skip
    batch = sdk.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h",
                               metadata={"owner": EMAIL, "card": CARD})  # fmt: skip
    deadline = time.monotonic() + 180
    while sdk.batches.retrieve(batch.id).status not in ("completed", "failed", "expired", "cancelled"):
        assert time.monotonic() < deadline, "the batch did not end"
        time.sleep(0.2)
    done = sdk.batches.retrieve(batch.id)
    assert done.status == "completed" and done.metadata == {"owner": EMAIL, "card": CARD}
    assert ASKED in sdk.files.content(uploaded.id).text  # the app reads back what it sent


def test_nothing_private_is_in_the_stores_files_the_log_or_the_spans_under_every_policy(resting, upstream):
    gateway, spans, store = resting
    upstream.reset()
    for app in STORED_APPS:
        ask_every_way(gateway, app)
    files = {path.name: path.read_bytes() for path in store.iterdir() if path.is_file()}
    assert {"ledger.db", "ledger.db-wal"} <= set(files)
    with sqlite3.connect(store / "ledger.db") as db:
        kinds = {kind for (kind,) in db.execute("SELECT DISTINCT kind FROM documents")}
        cached = db.execute("SELECT COUNT(*) FROM response_cache").fetchone()[0]
    assert {"file", "file_content", "batch"} <= kinds and cached >= 3  # the store held them all
    said = [span.text() for span in exported(gateway, spans)]  # the last spans' export, however slow
    for value in RESTING:
        for name, content in files.items():
            for encoded in (value.encode(), value.encode("utf-16-le")):
                assert encoded not in content, (value, name)
        assert value not in gateway.log(), value
        assert not [text for text in said if value in text], value


# --- every spelling the canonical reading knows, in every container, through every API ----------
def carrying(endpoint: str, container: str, said: str) -> tuple[str, dict]:
    """The path and body of a request to `endpoint` that carries `said` in `container`, asking an
    innocent question beside it."""
    question = "What is 2+2?"
    arguments = json.dumps({"note": said})  # as an SDK writes them: non-ASCII as \u escapes
    tool = {"name": "file_note", "description": f"Files a note such as: {said}",
            "parameters": {"type": "object", "properties": {"note": {"type": "string"}}}}  # fmt: skip
    if endpoint == "completions":
        return "/v1/completions", {"prompt": f"{said}\n{question}"}
    if endpoint == "messages":
        user = {"role": "user", "content": question}
        bodies = {
            "question": {"messages": [{"role": "user", "content": f"{said} {question}"}]},
            "system prompt": {"system": f"The user's details: {said}", "messages": [user]},
            "earlier answer": {"messages": [{"role": "user", "content": "Read it back."},
                                            {"role": "assistant", "content": said}, user]},
            "tool result": {"messages": [
                {"role": "user", "content": "Look it up."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "file_note", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": said},
                                             {"type": "text", "text": question}]}]},
            "tool call arguments": {"messages": [
                {"role": "user", "content": "File it."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "file_note",
                                                   "input": {"note": said}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "filed"},
                                             {"type": "text", "text": question}]}]},
            "tool description": {"messages": [user], "tools": [
                {"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}]},
        }  # fmt: skip
        return "/v1/messages", bodies[container]
    if endpoint == "responses":
        user = {"role": "user", "content": question}
        bodies = {
            "question": {"input": f"{said} {question}"},
            "system prompt": {"instructions": f"The user's details: {said}", "input": question},
            "earlier answer": {"input": [{"role": "user", "content": "Read it back."},
                                         {"role": "assistant", "content": said}, user]},
            "tool result": {"input": [
                {"type": "function_call", "call_id": "c1", "name": "file_note", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": said},
                {"role": "user", "content": question}]},
            "tool call arguments": {"input": [
                {"type": "function_call", "call_id": "c1", "name": "file_note", "arguments": arguments},
                {"type": "function_call_output", "call_id": "c1", "output": "filed"},
                {"role": "user", "content": question}]},
            "tool description": {"input": question, "tools": [{"type": "function", **tool}]},
        }  # fmt: skip
        return "/v1/responses", bodies[container]
    user = {"role": "user", "content": question}
    encoded = base64.b64encode(f"notes\n{said}\n".encode("utf-16")).decode()
    bodies = {
        "question": {"messages": [{"role": "user", "content": f"{said} {question}"}]},
        "system prompt": {"messages": [{"role": "system", "content": f"The user's details: {said}"}, user]},
        "earlier answer": {"messages": [{"role": "user", "content": "Read it back."},
                                        {"role": "assistant", "content": said}, user]},
        "tool result": {"messages": [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "file_note", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": said}, user]},
        "tool call arguments": {"messages": [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "file_note", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "filed"}, user]},
        "tool description": {"messages": [user], "tools": [{"type": "function", "function": tool}]},
        "text file in UTF-16": {"messages": [{"role": "user", "content": [
            {"type": "text", "text": question},
            {"type": "file", "file": {"filename": "notes.txt",
                                      "file_data": f"data:text/plain;charset=utf-16;base64,{encoded}"}}]}]},
    }  # fmt: skip
    return "/v1/chat/completions", bodies[container]


CONTAINERS = ("question", "system prompt", "earlier answer", "tool result", "tool call arguments", "tool description")
CARRIERS = (
    *((endpoint, container) for endpoint in ("chat", "responses", "messages") for container in CONTAINERS),
    ("chat", "text file in UTF-16"),
    ("completions", "question"),
)


def ask(gateway: GatewayProcess, app: str, endpoint: str, container: str, said: str, stream: bool) -> httpx.Response:
    path, body = carrying(endpoint, container, said)
    body = {**body, "model": "auto", "max_tokens": 4, "temperature": 0, "stream": stream}
    if endpoint == "responses":
        body["max_output_tokens"] = body.pop("max_tokens") + 12
    key = STORED_APPS[app]
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"} if endpoint == "messages" else {}
    return httpx.post(gateway.url + path, json=body, headers={"authorization": f"Bearer {key}", **headers},
                      timeout=120)  # fmt: skip


@pytest.mark.parametrize("index", range(max(spellings.count(), len(CARRIERS))))
def test_no_spelling_in_any_container_or_api_reaches_the_provider_or_anything_kept(resting, upstream, index):
    """Spelling `index` of `tests.spellings` (a card in four scripts and three separators, an SSN,
    a card in digit words, a spelled-out address), drawn into containers and APIs, under the
    local-only app and the masking one (which refuses what holds words of a script or a language
    no detector reads): the fake provider, the log, the spans and the store's files hold none of it."""
    gateway, spans, store = resting
    written = spellings.spellings(index)
    said = "Keep these on file: " + "; ".join(s.text for s in written) + "."
    tells = [tell for s in written for tell in s.tells]

    # the index's own carrier only: every spelling and every carrier once (drawing three more carriers
    # for each, always the same three, took two minutes of the suite; the in-process property tests
    # of tests/test_privacy_invariant.py put every spelling in every field)
    @settings(phases=[Phase.explicit], deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(carrier=st.sampled_from(CARRIERS), stream=st.booleans())
    @example(carrier=CARRIERS[index % len(CARRIERS)], stream=index % 2 == 1)  # every carrier, once at least
    def check(carrier, stream):
        endpoint, container = carrier
        stream = stream and endpoint != "completions"
        upstream.reset()
        answer = ask(gateway, "local", endpoint, container, said, stream)
        # the edge answers, or refuses what it cannot read (a file) in the API's shape: never a 5xx
        assert answer.status_code == 200 or (answer.status_code == 400 and "error" in answer.json()), carrier
        assert upstream.requests == [], (carrier, "a local-only request reached the provider")
        answer = ask(gateway, "masked", endpoint, container, said, stream)
        if SCANNER.unread_words(said):  # words no detector reads: refused, never sent unread
            assert answer.status_code == 503 and "do not read" in answer.json()["error"]["message"], carrier
            assert upstream.requests == [], carrier
            return
        assert answer.status_code == 200, (carrier, answer.text)
        if answer.headers.get("x-edgeway-cache") != "hit":
            assert upstream.requests, (carrier, "the masked request never reached the provider")
        bodies = [r.body for r in upstream.requests]
        sent = json.dumps(bodies, ensure_ascii=False) + json.dumps(bodies)
        assert [t for t in tells if t in sent] == [], carrier

    check()
    said_in_spans = " ".join(span.text() for span in exported(gateway, spans))  # the last spans' export
    log = gateway.log()
    files = {path.name: path.read_bytes() for path in store.iterdir() if path.is_file()}
    for tell in tells:
        assert tell not in log and tell not in said_in_spans, tell
        for name, content in files.items():
            assert tell.encode() not in content and tell.encode("utf-16-le") not in content, (tell, name)


def test_the_spellings_use_every_entry_of_the_canonical_tables():
    assert spellings.every_entry() - spellings.used() == set()
