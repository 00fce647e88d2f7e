"""Batch lines through a provider's own batch API, piece by piece: the batch price, an account
suspended when a line is parked and resumed to write its row, which lines may wait in a provider's
batch, and a provider batch API's answers parsed once (garbage is an UpstreamError, never a crash).
The whole flow, with the OpenAI SDK and a restart, is in tests/test_batches.py."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from pydantic import ValidationError

from classifiers import Scorer
from gateway.config import GatewayConfig
from gateway.provider_lines import LineDeferral
from policies.schema import EdgeReading
from router.answer import Usage
from router.budget import Caps
from router.cloud import CloudModelConfig, HttpPool, connect
from router.cloud.batch_api import AnthropicBatchAPI, BatchStatus, OpenAIBatchAPI, ProviderBatch
from router.decision import AutoRoute, Decision
from router.errors import UpstreamError
from router.ledger import MemoryStore, RowKind
from router.pricing import price_of
from router.request import parse_chat_request
from router.routing import Router
from router.routings import RECORDS, RoutingRecord
from tests.fake_upstream import FakeUpstream, UpstreamServer

HI = {"model": "auto", "messages": [{"role": "user", "content": "Hi"}]}
MINI = {"name": "mini", "provider_model": "openai/gpt-4o-mini", "api_key": "sk-fake"}


def cloud(**fields: Any) -> CloudModelConfig:
    return CloudModelConfig(**{**MINI, **fields})


# --- the batch price ---------------------------------------------------------------------------
def test_the_batch_price_is_the_configs_else_litellms_map_else_half():
    given = price_of(cloud(price={"input_per_1m": 2, "output_per_1m": 8, "batch_input_per_1m": 0.5}))
    assert given.batched().cost(1_000_000, 1_000_000) == pytest.approx(0.5 + 4.0)  # output: half of 8
    mapped = price_of(cloud())  # LiteLLM's map knows gpt-4o-mini's batch prices
    assert mapped.batched().cost(1_000_000, 1_000_000) == pytest.approx(0.075 + 0.3)
    unknown = price_of(cloud(price={"input_per_1m": 1, "output_per_1m": 3}))
    assert unknown.batched().cost(1_000_000, 1_000_000) == pytest.approx(2.0)


def test_openai_groq_and_anthropic_models_use_their_providers_batch_api_unless_told_not_to():
    pool = HttpPool()
    assert isinstance(connect(cloud(), pool).batch_api, OpenAIBatchAPI)
    assert isinstance(connect(cloud(provider_model="groq/llama-3.1-8b-instant"), pool).batch_api, OpenAIBatchAPI)
    assert isinstance(connect(cloud(provider_model="anthropic/claude-haiku-4-5"), pool).batch_api, AnthropicBatchAPI)
    assert connect(cloud(batch_api=False), pool).batch_api is None
    vllm = cloud(provider_model="hosted_vllm/llama", api_base="http://127.0.0.1:1/v1")
    assert connect(vllm, pool).batch_api is None  # a vLLM server has none unless the config says so
    assert isinstance(connect(cloud(**{**vllm.model_dump(), "batch_api": True}), pool).batch_api, OpenAIBatchAPI)
    assert connect(cloud(provider_model="gemini/gemini-2.0-flash"), pool).batch_api is None


def test_a_batch_api_edgeway_does_not_speak_is_a_config_error():
    models = [{"name": "gemini", "provider_model": "gemini/gemini-2.0-flash", "batch_api": True}]
    with pytest.raises(ValidationError, match="batch_api"):
        GatewayConfig.model_validate({"cloud": {"models": models}})


# --- the account of a parked line ----------------------------------------------------------------
def parked_account(
    store: MemoryStore, router: Router, reserved: float, decision: Decision | None = None
) -> dict[str, Any]:
    account = router.account("req-1", "app", kind=RowKind.BATCH, reference="mini")
    assert store.reserve("app", Caps(daily_usd=1.0), reserved) is None
    account.reserve(reserved)
    chat = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": "Hi"}]})
    return account.suspend("mini", "rest", chat, router.signals(chat), decision or Decision(("mini",), "rest"))


def test_a_resumed_account_writes_the_one_row_at_the_batch_price_and_settles_the_reservation():
    store = MemoryStore()
    router = Router({}, Scorer(), {"mini": price_of(cloud())}, store)
    state = parked_account(store, router, reserved=0.01)
    assert store.rows() == [] and store.left("app", Caps(daily_usd=1.0)) == pytest.approx(0.99)
    account = router.account("req-1", "app", kind=RowKind.BATCH)
    account.resume(state)
    row = account.finish(Usage(1000, 200))
    assert (row.request_id, row.kind, row.route, row.model, row.rule) == ("req-1", "batch", "cloud", "mini", "rest")
    assert row.cost_usd == pytest.approx(1000 * 0.075e-6 + 200 * 0.3e-6)
    assert row.counterfactual_usd == pytest.approx(row.cost_usd)  # the reference, batched too
    assert store.rows() == [row]
    assert store.left("app", Caps(daily_usd=1.0)) == pytest.approx(1.0 - row.cost_usd)  # reservation settled


def test_a_line_no_provider_answered_gives_its_reservation_back_and_writes_no_row():
    store = MemoryStore()
    router = Router({}, Scorer(), {"mini": price_of(cloud())}, store)
    state = parked_account(store, router, reserved=0.01)
    account = router.account("req-1", "app", kind=RowKind.BATCH)
    account.resume(state)
    account.release()
    assert store.rows() == [] and store.left("app", Caps(daily_usd=1.0)) == pytest.approx(1.0)


# What the app's router knew of a line an `auto` rule sent to the cloud: kept when its answer comes
AUTO = Decision(
    ("edge", "mini"),
    "smart",
    auto=AutoRoute(EdgeReading.NEVER, (0.3, 0.7), 0.5, text_score=0.82, router_version=3),
    score=0.82,
)


def test_an_auto_lines_routing_record_is_kept_when_its_providers_batch_answers_it():
    store = MemoryStore()
    router = Router({}, Scorer(), {"mini": price_of(cloud())}, store)
    state = parked_account(store, router, reserved=0.0, decision=AUTO)
    assert router.routers.documents.get(RECORDS, "req-1") is None  # not while it waits
    account = router.account("req-1", "app", kind=RowKind.BATCH)
    account.resume(json.loads(json.dumps(state)))  # as stored, and read back after a restart
    account.finish(Usage(1000, 200))
    kept = router.routers.documents.get(RECORDS, "req-1")
    assert kept is not None
    record = RoutingRecord.of(kept.data)
    assert (record.app, record.served, record.score, record.router_version) == ("app", "cloud", 0.82, 3)
    assert record.prior == pytest.approx(router.signals(parse_chat_request(HI)).complexity)
    assert record.asks  # the request's features, as a live request's record has them


def test_a_line_the_provider_refused_or_a_rule_not_auto_leaves_no_routing_record():
    store = MemoryStore()
    router = Router({}, Scorer(), {"mini": price_of(cloud())}, store)
    refused = router.account("req-1", "app", kind=RowKind.BATCH)
    refused.resume(parked_account(store, router, reserved=0.0, decision=AUTO))
    refused.abort(400, "invalid_request")
    plain = router.account("req-2", "app", kind=RowKind.BATCH)
    plain.resume(parked_account(store, router, reserved=0.0))
    plain.finish(Usage(10, 10))
    older = parked_account(store, router, reserved=0.0, decision=AUTO)
    del older["routing"]  # parked by a gateway that kept no routing with its lines
    resumed = router.account("req-3", "app", kind=RowKind.BATCH)
    resumed.resume(older)
    resumed.finish(Usage(10, 10))
    assert router.routers.documents.find(RECORDS) == []


def test_a_resumed_row_counts_its_latency_from_when_the_line_arrived():
    store = MemoryStore()
    router = Router({}, Scorer(), {}, store)
    state = parked_account(store, router, reserved=0.0)
    state["row"]["ts"] -= 3600  # parked an hour ago
    account = router.account("req-1", "app", kind=RowKind.BATCH)
    account.resume(state)
    assert account.finish(Usage(1, 1)).latency_ms >= 3600e3


# --- which lines wait --------------------------------------------------------------------------
class Account:
    def suspend(self, *args: Any) -> dict[str, Any]:
        return {}


@pytest.mark.parametrize(
    ("body", "model", "window_s", "takes"),
    [
        ({}, "openai", 24 * 3600, True),
        ({"stream": True}, "openai", 24 * 3600, False),  # (refused for batch lines earlier; never parked)
        ({}, "openai", 600, False),  # the batch must end sooner than min_window_s: sent live
        ({}, "vllm", 24 * 3600, False),  # its provider has no batch API
    ],
)
def test_a_line_waits_in_a_providers_batch_only_where_it_can(body, model, window_s, takes):
    pool = HttpPool()
    models = {
        "openai": connect(cloud(), pool),
        "vllm": connect(cloud(provider_model="hosted_vllm/m", api_base="http://127.0.0.1:1/v1"), pool),
    }
    deferral = LineDeferral(None, "k", "app", 0, time.time() + window_s, 3600, Account())  # type: ignore[arg-type]
    chat = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": "Hi"}], **body})
    assert deferral.takes(models[model], chat) is takes


# --- a provider batch API's answers ------------------------------------------------------------
@pytest.fixture(scope="module")
def server():
    upstream = FakeUpstream()
    with UpstreamServer(upstream) as running:
        yield upstream, running.url


@pytest.fixture
def provider(server):
    """The fake provider and its batch API, on connections of this test's own (each asyncio.run
    is a new event loop)."""
    upstream, url = server
    return upstream, connect(cloud(api_base=url + "/v1"), HttpPool()).batch_api


def test_the_batch_api_uploads_creates_reads_and_fetches_results(provider):
    upstream, api = provider
    chat = parse_chat_request({"model": "auto", "max_tokens": 3, "messages": [{"role": "user", "content": "Hi"}]})

    async def flow():
        made = await api.submit([await api.line("000000", chat)], {"edgeway_batch": "b1"})
        read = await api.retrieve(made.id)
        return made, read, await api.results(read)

    made, read, found = asyncio.run(flow())
    assert made.status == read.status == BatchStatus.COMPLETED and read.status.ended
    assert [(r.custom_id, r.status_code) for r in found] == [("000000", 200)]
    assert found[0].body["object"] == "chat.completion"
    assert upstream.provider_batches[made.id]["metadata"] == {"edgeway_batch": "b1"}


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"not json\n", "not a result"),
        (b"[1, 2]\n", "not a result"),
        (b'{"custom_id": 7, "response": null}\n', "not a result"),
        (b'{"custom_id": "1", "response": {"status_code": "200"}}\n', "not a result"),
    ],
)
def test_a_garbled_result_file_is_an_upstream_error(provider, content, says):
    upstream, api = provider
    upstream.batch_files["file-garbled"] = content
    with pytest.raises(UpstreamError, match=says):
        asyncio.run(api.results(ProviderBatch("b", BatchStatus.COMPLETED, ("file-garbled",))))


def test_a_batch_with_no_known_status_is_an_upstream_error(provider):
    upstream, api = provider
    upstream.provider_batches["batch-odd"] = {"id": "batch-odd", "status": "pondering"}

    async def both() -> None:
        with pytest.raises(UpstreamError, match="no known batch status"):
            await api.retrieve("batch-odd")
        with pytest.raises(UpstreamError, match="404"):
            await api.retrieve("batch-missing")

    asyncio.run(both())


def test_a_line_the_provider_never_answered_reads_as_unanswered(provider):
    upstream, api = provider
    upstream.batch_files["file-expired"] = (
        b'{"custom_id": "000003", "response": null, "error": {"code": "batch_expired", "message": "expired"}}\n'
    )
    (found,) = asyncio.run(api.results(ProviderBatch("b", BatchStatus.EXPIRED, ("file-expired",))))
    assert (found.custom_id, found.status_code, found.error) == ("000003", None, "expired")


# --- Anthropic's Message Batches ---------------------------------------------------------------
JSON_ASKED = {  # a JSON answer of a schema
    "model": "auto",
    "max_tokens": 20,
    "messages": [{"role": "user", "content": "Where?"}],
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "place", "schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
    },
}


def anthropic_api(url: str, model: str = "claude-haiku-4-5"):
    config = cloud(provider_model=f"anthropic/{model}", api_base=url, api_key="sk-ant-fake")
    return connect(config, HttpPool()).batch_api


def test_a_line_goes_to_anthropic_as_litellms_live_call_would_send_it_and_comes_back_as_a_chat_completion(server):
    upstream, url = server
    api = anthropic_api(url)
    body = {
        "model": "auto",
        "max_tokens": 20,
        "temperature": 0.2,
        "stop": ["x"],
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}],
    }

    async def flow():
        line = await api.line("000004", parse_chat_request(body))
        made = await api.submit([line], {})
        return line, made, await api.results(await api.retrieve(made.id))

    line, made, found = asyncio.run(flow())
    params = line["params"]
    assert params["model"] == "claude-haiku-4-5" and params["system"] == [{"type": "text", "text": "Be brief."}]
    assert params["stop_sequences"] == ["x"] and params["max_tokens"] == 20 and "json_mode" not in params
    assert upstream.message_batches[made.id]["_requests"] == [{"custom_id": "000004", "params": params}]
    (result,) = found
    assert (result.custom_id, result.status_code) == ("000004", 200)
    answer = asyncio.run(api.answer(result.body, line))
    assert answer["object"] == "chat.completion" and answer["choices"][0]["message"]["content"]
    assert answer["usage"]["prompt_tokens"] > 0 and answer["usage"]["completion_tokens"] > 0


def test_a_json_answer_asked_of_an_older_claude_is_a_forced_tool_read_back_as_the_json_text(server):
    _, url = server
    api = anthropic_api(url, "claude-3-5-haiku-latest")
    body = JSON_ASKED
    line = asyncio.run(api.line("000000", parse_chat_request(body)))
    assert line["json_mode"] is True  # (asked as a forced tool; its input is the answer)
    tool = line["params"]["tool_choice"]["name"]
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"city": "Paris"}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 4},
    }
    answer = asyncio.run(api.answer(message, line))
    assert answer["choices"][0]["message"]["content"] == '{"city": "Paris"}'


@pytest.mark.parametrize(
    ("result", "status", "error"),
    [
        (
            {
                "type": "errored",
                "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
            },
            400,
            "bad",
        ),
        (
            {"type": "errored", "error": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}},
            529,
            "busy",
        ),
        ({"type": "expired"}, None, "expired"),
        ({"type": "canceled"}, None, "canceled"),
    ],
)
def test_anthropics_unanswered_results_read_as_their_status(server, result, status, error):
    upstream, url = server
    upstream.message_batches["msgbatch_x"] = {
        "id": "msgbatch_x",
        "processing_status": "ended",
        "_results": json.dumps({"custom_id": "000001", "result": result}).encode(),
    }
    api = anthropic_api(url)
    ended = ProviderBatch("msgbatch_x", BatchStatus.COMPLETED, (url + "/v1/messages/batches/msgbatch_x/results",))
    (found,) = asyncio.run(api.results(ended))
    assert (found.status_code, found.error) == (status, error)


def test_an_anthropic_batch_with_no_known_status_is_an_upstream_error(server):
    upstream, url = server
    upstream.message_batches["msgbatch_odd"] = {"id": "msgbatch_odd", "processing_status": "thinking"}
    with pytest.raises(UpstreamError, match="no known batch status"):
        asyncio.run(anthropic_api(url).retrieve("msgbatch_odd"))


def test_a_structured_output_goes_with_the_beta_it_needs_on_the_batch(server):
    upstream, url = server
    api = anthropic_api(url)  # claude-haiku-4-5: Anthropic's own structured outputs
    body = JSON_ASKED

    async def flow():
        line = await api.line("000000", parse_chat_request(body))
        return line, await api.submit([line], {})

    line, made = asyncio.run(flow())
    assert line["json_mode"] is True and line["params"]["output_format"]["type"] == "json_schema"
    created = [r for r in upstream.requests if r.path == "/v1/messages/batches"][-1]
    assert created.headers["anthropic-beta"] == "structured-outputs-2025-11-13"
    assert created.headers["x-api-key"] == "sk-ant-fake" and created.headers["anthropic-version"] == "2023-06-01"
