"""OpenAI's Batch API, driven by the official SDK end to end: a file of requests uploaded, a batch
run on the edge's idle time and routed by the app's policy, its cloud lines sent through the
provider's own batch API at its batch price, its output and error files as OpenAI writes them,
every line in the ledger once (kind `batch`), cancelling, the completion window, bad files refused
up front, and a gateway restarted in the middle of a batch and of a provider's batch."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.conftest import PRIVATE_POLICY, GatewayProcess, gateway_config

KEYS = {"open": "open-batch-key-0123", "private": "private-batch-key-0123", "masked": "masked-batch-key-0123"}
CLAUDE_BATCH = {  # priced here: its batch price is half of it
    "name": "claude-batch",
    "provider_model": "anthropic/claude-haiku-4-5",
    "api_key": "sk-ant-fake",
    "price": {"input_per_1m": 1.0, "output_per_1m": 5.0},
}
MASKING_POLICY = """
app: masked
defaults: {edge: smollm2, cloud: gpt-fake}
rules:
  - name: masked-to-the-cloud
    when: {pii: any}
    route: cloud
    redact: true
    fallback: none
  - name: rest
    route: cloud
"""
SSN = "123-45-6789"


def batch_config(upstream_url: str, tmp: Path, **batches) -> dict:
    (tmp / "private.yaml").write_text(PRIVATE_POLICY)
    (tmp / "masked.yaml").write_text(MASKING_POLICY)
    config = gateway_config(upstream_url, tmp, store=f"sqlite:///{tmp / 'ledger.db'}")
    config["apps"] = [
        {"name": "open", "key": KEYS["open"]},
        {"name": "private", "key": KEYS["private"], "policy": str(tmp / "private.yaml")},
        {"name": "masked", "key": KEYS["masked"], "policy": str(tmp / "masked.yaml")},
    ]
    config["batches"] = {"concurrency": 2, "provider_poll_s": 0.1, **batches}
    config["cloud"]["models"].append(CLAUDE_BATCH | {"api_base": upstream_url})
    return config


@pytest.fixture(scope="module")
def batch_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("batches")
    process = GatewayProcess(batch_config(upstream.url, tmp), tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client(gateway: GatewayProcess, app: str = "open") -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEYS[app], max_retries=0)


def chat_line(custom_id: str, content: str, model: str = "smollm2", max_tokens: int = 8) -> dict:
    body = {"model": model, "max_tokens": max_tokens, "messages": [{"role": "user", "content": content}]}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def upload(sdk: openai.OpenAI, lines: list[dict]) -> str:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return sdk.files.create(file=("requests.jsonl", data), purpose="batch").id


def run(sdk: openai.OpenAI, lines: list[dict], **kwargs):
    return sdk.batches.create(
        input_file_id=upload(sdk, lines), endpoint="/v1/chat/completions", completion_window="24h", **kwargs
    )


def settled(sdk: openai.OpenAI, batch_id: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batch = sdk.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        time.sleep(0.2)
    raise AssertionError(f"batch {batch_id} still {batch.status} after {timeout} s")


def results(sdk: openai.OpenAI, file_id: str | None) -> dict[str, dict]:
    if file_id is None:
        return {}
    return {r["custom_id"]: r for r in map(json.loads, sdk.files.content(file_id).text.splitlines())}


def batch_rows(ledger: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT app, route, status FROM usage WHERE kind = 'batch' ORDER BY ts").fetchall()


def rows_of(ledger: Path, request_ids: list[str]) -> list[dict]:
    with sqlite3.connect(ledger) as db:
        db.row_factory = sqlite3.Row
        marks = ",".join("?" * len(request_ids))
        return [dict(r) for r in db.execute(f"SELECT * FROM usage WHERE request_id IN ({marks})", request_ids)]


def paths(upstream) -> list[str]:
    return [r.path for r in upstream.requests]


def test_a_batch_runs_every_line_and_writes_openais_output_file(batch_gateway, upstream):
    sdk = client(batch_gateway)
    lines = [chat_line("edge-1", "Say hi."), chat_line("edge-2", "Say bye."), chat_line("cloud", "Hi", "gpt-fake")]
    created = run(sdk, lines, metadata={"job": "nightly"})
    assert created.status == "validating" and created.request_counts.total == 3
    assert created.metadata == {"job": "nightly"} and created.expires_at - created.created_at == 24 * 3600
    batch = settled(sdk, created.id)
    assert batch.status == "completed" and batch.error_file_id is None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (3, 0)
    assert batch.in_progress_at and batch.finalizing_at and batch.completed_at
    output = results(sdk, batch.output_file_id)
    assert set(output) == {"edge-1", "edge-2", "cloud"}
    for custom_id, result in output.items():
        assert result["id"].startswith("batch_req_") and result["error"] is None
        response = result["response"]
        assert response["status_code"] == 200 and response["request_id"]
        assert response["body"]["object"] == "chat.completion"
        assert response["body"]["model"] == ("gpt-4o-mini" if custom_id == "cloud" else "smollm2")
    assert "/v1/chat/completions" not in paths(upstream)  # the cloud line went through the batch API
    uploaded = [r.body["lines"] for r in upstream.requests if r.path == "/v1/files"]
    assert [[line["body"]["messages"] for line in lines] for lines in uploaded] == [[lines[2]["body"]["messages"]]]
    assert [b.id for b in sdk.batches.list(limit=100).data][0] == batch.id
    outputs = [f for f in sdk.files.list().data if f.purpose == "batch_output"]
    assert batch.output_file_id in [f.id for f in outputs]


def test_every_line_is_one_ledger_row_of_kind_batch_counted_as_the_apps_own(batch_gateway):
    sdk = client(batch_gateway)
    batch = settled(sdk, run(sdk, [chat_line("a", "One."), chat_line("b", "Two.")]).id)
    assert batch.status == "completed"
    usage = httpx.get(  # the app's own key sees its own usage
        batch_gateway.url + "/api/usage",
        params={"group_by": "kind", "app": "open"},
        headers={"authorization": f"Bearer {KEYS['open']}"},
    ).json()
    kinds = {g["key"]: g["requests"] for g in usage["groups"]}
    assert kinds.get("batch", 0) >= 2 and usage["batch"]["requests"] == kinds["batch"]
    assert usage["batch"]["edge_hours"] > 0


def test_a_private_line_stays_on_the_edge_and_the_rest_follows_the_policy(batch_gateway, upstream):
    """The private app's policy keeps findings local: a batch line is checked like a live request."""
    sdk = client(batch_gateway, "private")
    lines = [chat_line("private", f"My SSN is {SSN}. Say ok.", "auto"), chat_line("plain", "Say ok.", "auto")]
    batch = settled(sdk, run(sdk, lines).id)
    output = results(sdk, batch.output_file_id)
    assert batch.status == "completed" and set(output) == {"private", "plain"}
    assert not upstream.saw_text(SSN) and not upstream.saw_text("123456789")
    uploaded = [r.body["lines"] for r in upstream.requests if r.path == "/v1/files"]
    assert len(uploaded) == 1 and len(uploaded[0]) == 1  # the plain line went to the cloud, as the policy says


def test_a_line_the_gateway_refuses_goes_to_the_error_file_with_its_status(batch_gateway):
    sdk = client(batch_gateway)
    broken = {"custom_id": "broken", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "smollm2"}}
    unknown = chat_line("unknown", "Hi", "no-such-model")
    batch = settled(sdk, run(sdk, [chat_line("fine", "Hi"), broken, unknown]).id)
    assert batch.status == "completed"
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 2)
    errors = results(sdk, batch.error_file_id)
    assert errors["broken"]["response"]["status_code"] == 400
    assert errors["unknown"]["response"]["status_code"] == 404
    assert errors["unknown"]["response"]["body"]["error"]["code"] == "model_not_found"
    assert set(results(sdk, batch.output_file_id)) == {"fine"}


# Each endpoint a batch may name, a line of it, and what its API answers: the line's result is the
# body an HTTP client of that API would have read, its errors in that API's shape.
ENDPOINT_LINES = {
    "/v1/completions": (
        {"model": "smollm2", "prompt": "Once upon a time", "max_tokens": 4},
        lambda body: body["object"] == "text_completion" and isinstance(body["choices"][0]["text"], str),
    ),
    "/v1/embeddings": (
        {"model": "smollm2", "input": ["a cat", "a dog"], "encoding_format": "base64"},
        lambda body: [d["index"] for d in body["data"]] == [0, 1] and isinstance(body["data"][0]["embedding"], str),
    ),
    "/v1/responses": (
        {"model": "smollm2", "input": "Hi", "max_output_tokens": 8},
        lambda body: body["object"] == "response" and body["output"][0]["type"] == "message",
    ),
}


@pytest.mark.parametrize("endpoint", sorted(ENDPOINT_LINES))
def test_every_endpoint_a_batch_names_answers_its_lines_in_its_apis_shape(batch_gateway, endpoint):
    sdk = client(batch_gateway)
    body, answered = ENDPOINT_LINES[endpoint]
    line = {"custom_id": "fine", "method": "POST", "url": endpoint, "body": body}
    unknown = {**line, "custom_id": "unknown", "body": {**body, "model": "no-such-model"}}
    lines = [line, unknown]
    if endpoint == "/v1/responses":  # refused in the Responses API's own words: a hosted tool, not a field
        lines.append({**line, "custom_id": "search", "body": {**body, "tools": [{"type": "web_search"}]}})
    made = sdk.batches.create(input_file_id=upload(sdk, lines), endpoint=endpoint, completion_window="24h")
    batch = settled(sdk, made.id)
    output, errors = results(sdk, batch.output_file_id), results(sdk, batch.error_file_id)
    assert output["fine"]["response"]["status_code"] == 200, output
    assert answered(output["fine"]["response"]["body"])
    assert errors["unknown"]["response"]["status_code"] == 404
    assert errors["unknown"]["response"]["body"]["error"]["code"] == "model_not_found"
    assert all(r["response"]["request_id"] for r in [*output.values(), *errors.values()])
    if endpoint == "/v1/responses":
        refused = errors["search"]["response"]["body"]["error"]
        assert refused["param"] == "tools" and "Hosted tool 'web_search'" in refused["message"]


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        ([chat_line("a", "Hi"), {**chat_line("b", "Hi"), "url": "/v1/embeddings"}], "line 2"),
        ([chat_line("a", "Hi"), chat_line("a", "Hi again")], "repeats the custom_id"),
        ([{**chat_line("a", "Hi"), "method": "GET"}], "'method' must be 'POST'"),
        ([{**chat_line("a", "Hi"), "body": {**chat_line("a", "Hi")["body"], "stream": True}}], "answered whole"),
    ],
)
def test_a_malformed_input_file_is_a_400_naming_the_line(batch_gateway, lines, says):
    sdk = client(batch_gateway)
    with pytest.raises(openai.BadRequestError) as caught:
        run(sdk, lines)
    assert says in caught.value.message


def test_files_and_batches_belong_to_their_app(batch_gateway):
    mine, theirs = client(batch_gateway), client(batch_gateway, "private")
    file_id = upload(mine, [chat_line("a", "Hi")])
    with pytest.raises(openai.NotFoundError):
        theirs.files.retrieve(file_id)
    with pytest.raises(openai.NotFoundError):
        theirs.batches.create(input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.BadRequestError) as caught:
        mine.files.create(file=("x.jsonl", b"{}\n"), purpose="fine-tune")
    assert caught.value.param == "purpose"
    assert mine.files.retrieve(file_id).bytes > 0
    assert mine.files.delete(file_id).deleted
    with pytest.raises(openai.NotFoundError):
        mine.files.content(file_id)


def test_a_window_the_edge_cannot_meet_is_refused_when_the_batch_is_made(batch_gateway):
    sdk = client(batch_gateway)
    lines = [chat_line(f"long-{i}", "Write a long essay.", max_tokens=1500) for i in range(200)]
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.batches.create(input_file_id=upload(sdk, lines), endpoint="/v1/chat/completions", completion_window="1m")
    assert caught.value.code == "completion_window_too_short" and "minutes" in caught.value.message
    # the same lines for a cloud model do not wait for the edge
    cloud = [chat_line(f"long-{i}", "Write a long essay.", "gpt-fake", max_tokens=1500) for i in range(200)]
    made = sdk.batches.create(input_file_id=upload(sdk, cloud), endpoint="/v1/chat/completions", completion_window="1m")
    sdk.batches.cancel(made.id)


def test_a_cancelled_batch_stops_and_reports_the_lines_it_did_not_run(batch_gateway):
    sdk = client(batch_gateway)
    lines = [chat_line(f"slow-{i}", "Tell me a long story.", max_tokens=120) for i in range(12)]
    created = run(sdk, lines)
    assert sdk.batches.cancel(created.id).status == "cancelling"
    batch = settled(sdk, created.id)
    assert batch.status == "cancelled" and batch.cancelled_at
    errors = results(sdk, batch.error_file_id)
    skipped = [r for r in errors.values() if r["error"] and r["error"]["code"] == "batch_cancelled"]
    assert skipped and len(skipped) + batch.request_counts.completed == 12
    with pytest.raises(openai.BadRequestError):
        sdk.batches.cancel(created.id)


def test_a_restarted_gateway_resumes_the_batch_and_runs_no_line_twice(upstream, tmp_path):
    config = batch_config(upstream.url, tmp_path, concurrency=1)
    first = GatewayProcess(config, tmp_path).wait_ready()
    lines = [chat_line(f"line-{i}", f"Count to {i}.", max_tokens=24) for i in range(8)]
    try:
        sdk = client(first)
        created = run(sdk, lines)
        deadline = time.monotonic() + 60
        while sdk.batches.retrieve(created.id).request_counts.completed < 2:
            assert time.monotonic() < deadline, "the batch did not start"
            time.sleep(0.1)
    finally:
        first.stop()  # SIGTERM: the line in flight ends and is kept; the rest wait
    stopped_at = batch_rows(tmp_path / "ledger.db")
    assert 2 <= len(stopped_at) < 8
    second = GatewayProcess(config, tmp_path).wait_ready()
    try:
        sdk = client(second)
        batch = settled(sdk, created.id)
        assert batch.status == "completed" and batch.request_counts.completed == 8
        assert sorted(results(sdk, batch.output_file_id)) == sorted(line["custom_id"] for line in lines)
    finally:
        second.stop()
    rows = batch_rows(tmp_path / "ledger.db")
    assert len(rows) == 8 and all(status == 200 for _, _, status in rows)  # each line ran exactly once


# --- through the provider's own batch API ---------------------------------------------------------
def test_cloud_lines_wait_in_the_providers_batch_and_are_charged_its_batch_price(batch_gateway, upstream):
    sdk = client(batch_gateway)
    lines = [chat_line(f"cloud-{i}", f"Summarize item {i}.", "gpt-fake", max_tokens=30) for i in range(3)]
    batch = settled(sdk, run(sdk, [chat_line("edge", "Say hi."), *lines]).id)
    assert batch.status == "completed" and batch.request_counts.completed == 4
    output = results(sdk, batch.output_file_id)
    assert "/v1/chat/completions" not in paths(upstream)
    assert paths(upstream)[:2] == ["/v1/files", "/v1/batches"]  # one file, one provider batch, for three lines
    assert paths(upstream).count("/v1/files") == 1
    sent = [line for r in upstream.requests if r.path == "/v1/files" for line in r.body["lines"]]
    assert [line["body"]["model"] for line in sent] == ["gpt-4o-mini"] * 3
    assert all(line["url"] == "/v1/chat/completions" and line["method"] == "POST" for line in sent)
    ids = [output[f"cloud-{i}"]["response"]["request_id"] for i in range(3)]
    rows = rows_of(batch_gateway.log_path.parent / "ledger.db", ids)
    assert len(rows) == 3
    for row in rows:  # gpt-4o-mini through the batch API: half its live price (LiteLLM's map)
        assert (row["kind"], row["route"], row["model"], row["status"]) == ("batch", "cloud", "gpt-fake", 200)
        batch_cost = row["prompt_tokens"] * 0.075e-6 + row["completion_tokens"] * 0.3e-6
        assert row["completion_tokens"] > 0 and row["cost_usd"] == pytest.approx(batch_cost)
    for i in range(3):
        body = output[f"cloud-{i}"]["response"]["body"]
        assert body["object"] == "chat.completion" and body["usage"]["completion_tokens"] > 0


def test_anthropic_lines_wait_in_a_message_batch_and_come_back_as_chat_completions(batch_gateway, upstream):
    sdk = client(batch_gateway)
    lines = [chat_line(f"claude-{i}", f"Name a colour, {i}.", "claude-batch", max_tokens=12) for i in range(2)]
    batch = settled(sdk, run(sdk, lines).id)
    assert batch.status == "completed" and batch.request_counts.completed == 2
    assert "/v1/messages" not in paths(upstream) and paths(upstream)[0] == "/v1/messages/batches"
    (made,) = upstream.message_batches.values()
    assert [r["params"]["model"] for r in made["_requests"]] == ["claude-haiku-4-5"] * 2
    output = results(sdk, batch.output_file_id)
    rows = rows_of(batch_gateway.log_path.parent / "ledger.db", [r["response"]["request_id"] for r in output.values()])
    for row in rows:
        assert (row["kind"], row["route"], row["model"]) == ("batch", "cloud", "claude-batch")
        assert row["cost_usd"] == pytest.approx((row["prompt_tokens"] * 1.0 + row["completion_tokens"] * 5.0) / 2e6)
    for result in output.values():
        body = result["response"]["body"]
        assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"]
        assert body["usage"]["completion_tokens"] == 12  # the fake's answer, cut at max_tokens


def test_a_redacting_rule_masks_the_line_in_the_providers_file_and_restores_the_answer(batch_gateway, upstream):
    upstream.echo = True  # the provider answers with the line's own (masked) words
    sdk = client(batch_gateway, "masked")
    email = "jane.roe@example.com"
    batch = settled(sdk, run(sdk, [chat_line("note", f"Write to {email} today.", "auto", max_tokens=60)]).id)
    assert batch.status == "completed"
    sent = [line for r in upstream.requests if r.path == "/v1/files" for line in r.body["lines"]]
    assert len(sent) == 1 and "[EMAIL_1]" in json.dumps(sent) and not upstream.saw_text(email)
    answer = results(sdk, batch.output_file_id)["note"]["response"]["body"]["choices"][0]["message"]["content"]
    assert email in answer and "[EMAIL_1]" not in answer


def test_a_line_the_providers_batch_did_not_answer_goes_again_as_an_ordinary_request(batch_gateway, upstream):
    upstream.batch_line_status["000001"] = 500  # the second line fails inside the provider's batch
    sdk = client(batch_gateway)
    lines = [chat_line(f"c{i}", f"Question {i}?", "gpt-fake") for i in range(3)]
    batch = settled(sdk, run(sdk, lines).id)
    assert batch.status == "completed" and batch.request_counts.completed == 3
    assert paths(upstream).count("/v1/chat/completions") == 1  # the one line, live, once
    live = next(r for r in upstream.requests if r.path == "/v1/chat/completions")
    assert live.body["messages"] == lines[1]["body"]["messages"]
    ids = [r["response"]["request_id"] for r in results(sdk, batch.output_file_id).values()]
    assert len(rows_of(batch_gateway.log_path.parent / "ledger.db", ids)) == 3  # one row per line


def test_a_line_the_provider_refused_gets_the_providers_refusal(batch_gateway, upstream):
    upstream.batch_line_status["000000"] = 400
    sdk = client(batch_gateway)
    batch = settled(sdk, run(sdk, [chat_line("refused", "Hi", "gpt-fake"), chat_line("fine", "Hi", "gpt-fake")]).id)
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
    error = results(sdk, batch.error_file_id)["refused"]["response"]
    assert error["status_code"] == 400 and error["body"]["error"]["code"] == "upstream_rejected"
    assert "/v1/chat/completions" not in paths(upstream)  # a request the provider refuses is not sent again
    assert rows_of(batch_gateway.log_path.parent / "ledger.db", [error["request_id"]])[0]["status"] == 400


def test_cancelling_a_batch_cancels_the_providers_batch(batch_gateway, upstream):
    upstream.hold_batches = True
    sdk = client(batch_gateway)
    created = run(sdk, [chat_line(f"held-{i}", "Hi", "gpt-fake") for i in range(2)])
    wait_for(lambda: upstream.provider_batches, "the provider's batch was never made")
    sdk.batches.cancel(created.id)
    batch = settled(sdk, created.id)
    assert batch.status == "cancelled" and batch.request_counts.completed == 0
    assert [b["status"] for b in upstream.provider_batches.values()] == ["cancelled"]
    codes = {r["error"]["code"] for r in results(sdk, batch.error_file_id).values()}
    assert codes == {"batch_cancelled"}


def test_a_restart_while_the_provider_holds_the_batch_settles_every_line_once(upstream, tmp_path):
    upstream.hold_batches = True
    config = batch_config(upstream.url, tmp_path)
    lines = [chat_line(f"line-{i}", f"Translate sentence {i}.", "gpt-fake") for i in range(4)]
    first = GatewayProcess(config, tmp_path).wait_ready()
    try:
        sdk = client(first)
        created = run(sdk, lines)
        wait_for(lambda: upstream.provider_batches, "the provider's batch was never made")
    finally:
        first.stop()
    assert batch_rows(tmp_path / "ledger.db") == []  # nothing answered yet: no row, the cost still reserved
    upstream.release_batches()
    second = GatewayProcess(config, tmp_path).wait_ready()
    try:
        sdk = client(second)
        batch = settled(sdk, created.id)
        assert batch.status == "completed" and batch.request_counts.completed == 4
        assert sorted(results(sdk, batch.output_file_id)) == sorted(line["custom_id"] for line in lines)
    finally:
        second.stop()
    assert paths(upstream).count("/v1/files") == 1 and "/v1/chat/completions" not in paths(upstream)
    rows = batch_rows(tmp_path / "ledger.db")
    assert rows == [("open", "cloud", 200)] * 4  # each line settled exactly once, by the second gateway


def test_parked_lines_go_to_their_provider_while_the_edge_still_works_through_the_rest(upstream, tmp_path):
    config = batch_config(upstream.url, tmp_path, provider_lines=2)  # two waiting lines are enough to send
    cloud = [chat_line(f"cloud-{i}", f"Question {i}?", "gpt-fake") for i in range(2)]
    edge = [chat_line(f"edge-{i}", f"Tell me a story about the number {i}.", max_tokens=40) for i in range(4)]
    gateway = GatewayProcess(config, tmp_path).wait_ready()
    try:
        sdk = client(gateway)
        created = run(sdk, cloud + edge)
        wait_for(lambda: upstream.provider_batches, "the provider's batch was never made")
        # the edge still at its lines (with the two cloud lines counted, fewer than all of them are done)
        assert sdk.batches.retrieve(created.id).request_counts.completed < len(edge)
        batch = settled(sdk, created.id)
        assert batch.status == "completed" and batch.request_counts.completed == 6
        assert len(upstream.provider_batches) == 1
    finally:
        gateway.stop()


def wait_for(condition, message: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.05)


def test_a_line_whose_app_is_no_longer_configured_is_refused_not_run(tmp_path):
    """A batch outlives a change of the config: once its app is gone, each line is that app's 401
    in the endpoint's shape, and no model runs it for anyone."""
    import asyncio

    from gateway.batch_runner import BatchRunner
    from gateway.batches import Batch, Line
    from gateway.config import GatewayConfig
    from gateway.running import build_gateway

    gateway = build_gateway(GatewayConfig.model_validate(gateway_config("http://127.0.0.1:9", tmp_path)))
    runner = BatchRunner(gateway)
    batch = Batch("batch_gone", "gone", "/v1/responses", "file_gone", "24h", 0, int(time.time()) + 60, 1)
    line = Line(0, "only", {"model": "smollm2", "input": "Hi"})
    whole = asyncio.run(runner.send(batch, line, False))
    assert whole is not None and whole.status == 401 and whole.parked is None
    assert whole.body["error"]["code"] == "invalid_api_key" and "'gone'" in whole.body["error"]["message"]
    assert gateway.ledger.rows() == []  # refused before any request was made of it
