"""The usage ledger: one row per request, priced, queried through /api/usage, behind the right key."""

from __future__ import annotations

import csv
import io
import re
import sqlite3
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from router.budget import Caps, Period
from router.ledger import MemoryStore, SqliteStore, UsageRow
from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config
from tests.fake_upstream import Fault

ADMIN = "admin-key-for-tests-0123"
GAMMA_KEY = "gamma-key-0123456789"  # an app that opted in to keeping its prompts
HOUSE_KEY = "house-key-0123456789"  # an app that uses the model with no known price
DAY = 86400


# --- the stores, one behaviour for each ----------------------------------------------------
@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "redis":
        from router.ledger.redis_store import RedisStore

        made = RedisStore(request.getfixturevalue("redis_server").url)
    else:
        made = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "ledger.db")
    yield made
    made.close()


def row(app: str, ts: float, cost: float = 0.0, route: str = "cloud", **kw) -> UsageRow:
    return UsageRow(request_id=f"{app}-{ts}-{cost}-{route}", app=app, ts=ts, route=route, cost_usd=cost, **kw)


def test_a_store_keeps_rows_and_filters_them_by_app_and_time(store):
    now = time.time()
    store.append(row("a", now - 2 * DAY, 1.0))
    store.append(row("a", now, 2.0, prompt_tokens=10, completion_tokens=5))
    store.append(row("b", now, 4.0, route="edge"))
    assert [r.cost_usd for r in store.rows(app="a")] == [1.0, 2.0]
    assert [r.app for r in store.rows(since=now - DAY)] == ["a", "b"]
    assert store.rows(app="a", since=now - DAY)[0].prompt_tokens == 10
    assert store.rows(until=now - DAY)[0].cost_usd == 1.0


def test_a_store_counts_spend_against_daily_and_monthly_caps(store):
    now = time.time()
    store.append(row("a", now, 3.0))
    store.charge("a", 1.5, now)
    assert store.left("a", Caps(daily_usd=10.0), now) == pytest.approx(5.5)
    assert store.left("a", Caps(daily_usd=10.0, monthly_usd=6.0), now) == pytest.approx(1.5)
    assert store.left("b", Caps(daily_usd=10.0), now) == pytest.approx(10.0)
    assert store.left("a", Caps(), now) is None


def test_admission_reserves_the_worst_case_only_where_it_fits_until_the_row_settles_it(store):
    caps = Caps(daily_usd=1.0, monthly_usd=50.0)
    assert store.reserve("a", caps, 0.6) is None
    short = store.reserve("a", caps, 0.6)  # 0.6 held: 0.6 more would end the day at 1.2
    assert short is not None and (short.period, short.cap_usd, short.estimate_usd) == (Period.DAILY, 1.0, 0.6)
    assert short.spent_usd == pytest.approx(0.6) and 0 < short.resets_at - time.time() <= DAY
    assert store.reserve("a", caps, 0.4) is None  # exactly what is left fits
    assert store.reserve("a", caps, 0.0) is not None  # and the day is spent, for anything
    store.append(row("a", time.time(), 0.1), reserved=0.6)
    store.append(row("a", time.time(), 0.1), reserved=0.4)
    assert store.left("a", caps) == pytest.approx(0.8)
    store.flush()  # shared stores settle in the background
    assert store.reserve("a", caps, 0.6) is None


def test_rate_limits_count_requests_and_tokens_per_minute(store):
    from router.limits import Limits

    assert store.take("a", 100, Limits(requests_per_minute=2)) is None
    assert store.take("a", 100, Limits(requests_per_minute=2)) is None
    wait = store.take("a", 100, Limits(requests_per_minute=2))
    assert wait is not None and 0 < wait <= 60
    assert store.take("b", 900, Limits(tokens_per_minute=1000)) is None
    assert store.take("b", 200, Limits(tokens_per_minute=1000)) is not None
    assert store.take("b", 100, Limits(tokens_per_minute=1000)) is None


def test_sqlite_keeps_history_and_spend_across_restarts(tmp_path):
    path = tmp_path / "ledger.db"
    first = SqliteStore(path)
    first.append(row("a", time.time(), 2.5))
    first.close()
    again = SqliteStore(path)
    assert [r.cost_usd for r in again.rows()] == [2.5]
    assert again.left("a", Caps(daily_usd=3.0)) == pytest.approx(0.5)
    again.close()


def test_a_ledger_from_an_older_edgeway_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:  # the schema before rows could carry a prompt
        db.execute(
            "CREATE TABLE usage (request_id TEXT PRIMARY KEY, app TEXT NOT NULL, ts REAL NOT NULL, route TEXT, "
            "model TEXT, rule TEXT, status INTEGER, stream INTEGER, prompt_tokens INTEGER, "
            "completion_tokens INTEGER, ttft_ms REAL, latency_ms REAL, cost_usd REAL, "
            "counterfactual_usd REAL, error TEXT)"
        )
        db.execute("INSERT INTO usage (request_id, app, ts, cost_usd) VALUES ('old', 'a', ?, 1.0)", (time.time(),))
    store = SqliteStore(path)
    store.append(UsageRow(request_id="new", app="a", prompt="Where is [PERSON]?"))
    assert {r.request_id: r.prompt for r in store.rows()} == {"old": None, "new": "Where is [PERSON]?"}
    store.close()


# --- the gateway writes the rows, /api/usage reads them -----------------------------------
@pytest.fixture(scope="module")
def ledger_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("ledger")
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN, store=f"sqlite:///{tmp / 'ledger.db'}")
    config["cloud"]["models"][0]["price"] = {"input_per_1m": 1.0, "output_per_1m": 2.0}
    # a model no price is known for: neither `price:` nor LiteLLM's map gives one
    config["cloud"]["models"].append({"name": "house", "provider_model": "hosted_vllm/house-model",
                                      "api_base": upstream.url + "/v1"})  # fmt: skip
    config["apps"].append({"name": "gamma", "key": GAMMA_KEY, "log_prompts": True})
    config["apps"].append({"name": "house-app", "key": HOUSE_KEY})
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def usage(gateway, key: str, **params) -> httpx.Response:
    return httpx.get(gateway.url + "/api/usage", params=params, headers={"authorization": f"Bearer {key}"})


def test_a_model_with_no_known_price_is_said_at_start_and_counted_unpriced_not_as_savings(ledger_gateway, upstream):
    assert "cloud model house (hosted_vllm/house-model) has no price" in ledger_gateway.log()
    house_app = openai.OpenAI(base_url=ledger_gateway.url + "/v1", api_key=HOUSE_KEY, max_retries=0)
    answer = house_app.chat.completions.with_raw_response.create(
        model="house", messages=[{"role": "user", "content": "Hi"}], max_tokens=3
    )
    request_id = answer.headers["x-edgeway-request-id"]
    (row,) = [r for r in usage(ledger_gateway, ADMIN).json()["recent"] if r["request_id"] == request_id]
    assert row["priced"] is False and row["cost_usd"] == row["counterfactual_usd"] == 0.0
    totals = usage(ledger_gateway, ADMIN, group_by="model").json()
    house = next(g for g in totals["groups"] if g["key"] == "house")
    assert house["unpriced_requests"] == house["requests"] and house["savings_usd"] == 0.0


def test_every_request_leaves_one_priced_row(ledger_gateway, upstream):
    alpha, beta = client_for(ledger_gateway, "alpha"), client_for(ledger_gateway, "beta")
    alpha.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=3)
    chunks = list(beta.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], stream=True))
    assert chunks
    with pytest.raises(openai.BadRequestError):
        alpha.chat.completions.create(model="auto", messages=[], max_tokens=3)
    rows = {r["app"]: r for r in usage(ledger_gateway, ADMIN).json()["recent"] if r["status"] == 200}
    edge, cloud = rows["alpha"], rows["beta"]
    assert (edge["route"], edge["model"], edge["rule"]) == ("edge", "smollm2", "default-edge")
    assert edge["cost_usd"] == 0 and edge["counterfactual_usd"] > 0 and edge["completion_tokens"] <= 3
    assert (cloud["route"], cloud["stream"]) == ("cloud", True)
    # a streamed answer is priced from its real usage: 13 completion tokens at $2 / 1M
    assert cloud["completion_tokens"] == 13 and cloud["cost_usd"] == pytest.approx(
        cloud["prompt_tokens"] * 1e-6 + 13 * 2e-6
    )
    assert cloud["ttft_ms"] is not None and cloud["latency_ms"] >= cloud["ttft_ms"]
    errors = [r for r in usage(ledger_gateway, ADMIN).json()["recent"] if r["status"] == 400]
    assert errors and errors[0]["error"] == "empty_array" and errors[0]["route"] == "none"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_request_the_provider_refused_has_a_row_naming_the_model_and_the_rule(ledger_gateway, upstream, stream):
    """A provider's 400: the row says which model refused it, on which route, under which rule
    (and the access line the same)."""
    upstream.fail_next(Fault(status=400, message="tools[0].function.name is invalid"))
    beta = client_for(ledger_gateway, "beta")
    with pytest.raises(openai.BadRequestError) as refused:
        beta.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], stream=stream)
    request_id = refused.value.response.headers["x-edgeway-request-id"]
    assert refused.value.response.headers["x-edgeway-rule"] == "app-default-cloud"
    (row,) = [r for r in usage(ledger_gateway, ADMIN).json()["recent"] if r["request_id"] == request_id]
    assert (row["status"], row["route"], row["model"], row["rule"]) == (400, "cloud", "gpt-fake", "app-default-cloud")
    line = ledger_gateway.access_line(request_id)
    assert "route=cloud model=gpt-fake rule=app-default-cloud" in line


def test_usage_groups_and_the_savings_against_all_cloud(ledger_gateway, upstream):
    body = usage(ledger_gateway, ADMIN, group_by="route").json()
    keys = {g["key"]: g for g in body["groups"]}
    assert {"edge", "cloud"} <= set(keys)
    assert keys["edge"]["savings_usd"] > 0
    totals = body["totals"]
    assert totals["requests"] == sum(g["requests"] for g in body["groups"])
    assert totals["savings_pct"] == pytest.approx(
        100 * (totals["counterfactual_usd"] - totals["cost_usd"]) / totals["counterfactual_usd"], abs=0.1
    )
    assert {g["key"] for g in usage(ledger_gateway, ADMIN, group_by="app").json()["groups"]} >= {"alpha", "beta"}
    assert usage(ledger_gateway, ADMIN, group_by="colour").status_code == 400
    assert usage(ledger_gateway, ADMIN, **{"from": "2999-01-01"}).json()["totals"]["requests"] == 0
    assert usage(ledger_gateway, ADMIN, **{"from": "yesterday"}).status_code == 400


def test_an_app_key_sees_only_its_own_app_and_no_key_sees_nothing(ledger_gateway, upstream):
    mine = usage(ledger_gateway, APP_KEYS["alpha"], group_by="app").json()
    assert [g["key"] for g in mine["groups"]] == ["alpha"]
    assert usage(ledger_gateway, APP_KEYS["alpha"], app="beta").status_code == 401
    assert httpx.get(ledger_gateway.url + "/api/usage").status_code == 401
    assert httpx.get(ledger_gateway.url + "/dashboard", params={"key": APP_KEYS["alpha"]}).status_code == 401


def test_usage_exports_as_csv(ledger_gateway, upstream):
    response = usage(ledger_gateway, ADMIN, format="csv")
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert rows and set(UsageRow.columns()) == set(rows[0])
    assert "Hi" not in response.text  # metadata only: no prompt text
    # as a spreadsheet reads it: times, booleans and amounts written plainly
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", rows[0]["ts"])
    amounts = [r[c] for r in rows for c in ("cost_usd", "counterfactual_usd", "latency_ms")]
    assert {r["stream"] for r in rows} <= {"true", "false"} and all(re.fullmatch(r"\d+(\.\d+)?", a) for a in amounts)


def test_metrics_count_requests_tokens_cost_and_latency(ledger_gateway, upstream):
    client_for(ledger_gateway, "beta").chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "Hi"}]
    )
    text = httpx.get(ledger_gateway.url + "/metrics").text
    assert 'edgeway_requests_total{app="beta",model="gpt-fake",route="cloud",status="200"}' in text
    assert 'edgeway_tokens_total{app="beta",kind="completion",model="gpt-fake",route="cloud",status="200"}' in text
    assert "edgeway_cost_usd_total" in text and "edgeway_savings_usd_total" in text
    assert 'edgeway_request_duration_seconds_bucket{app="beta",le="0.005",route="cloud"}' in text
    assert 'edgeway_edge_queue_depth{model="smollm2"} 0.0' in text


@pytest.mark.parametrize("stream", [False, True])
def test_usage_no_answer_could_have_is_charged_at_the_requests_bound(ledger_gateway, upstream, stream):
    """A provider that says 500,000 completion tokens for `max_tokens: 4` (a bug, or a hostile
    endpoint) is not believed: the row and the client's usage say 4, and the anomaly is logged and
    counted."""
    upstream.fail_next(Fault(usage={"prompt_tokens": 9, "completion_tokens": 500_000, "total_tokens": 500_009}))
    beta = client_for(ledger_gateway, "beta")
    asked = {"model": "auto", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    if stream:
        chunks = list(beta.chat.completions.create(**asked, stream=True, stream_options={"include_usage": True}))
        said = chunks[-1].usage
    else:
        said = beta.chat.completions.create(**asked).usage
    assert said.completion_tokens == 4 and said.prompt_tokens == 9
    (row,) = [r for r in usage(ledger_gateway, ADMIN, app="beta").json()["recent"][:1]]
    assert row["completion_tokens"] == 4 and row["cost_usd"] == pytest.approx(9 * 1e-6 + 4 * 2e-6)
    metrics = httpx.get(ledger_gateway.url + "/metrics").text
    assert 'edgeway_usage_anomalies_total{app="beta",model="gpt-fake"}' in metrics
    assert "where the request could have" in ledger_gateway.log() and "500000 completion tokens" in ledger_gateway.log()


def test_an_app_that_opted_in_keeps_its_prompts_masked_and_others_keep_none(ledger_gateway, upstream):
    gamma = openai.OpenAI(base_url=ledger_gateway.url + "/v1", api_key=GAMMA_KEY, max_retries=0)
    gamma.chat.completions.create(
        model="smollm2",
        max_tokens=2,
        messages=[
            {"role": "user", "content": "An earlier question."},
            {"role": "assistant", "content": "An answer."},
            {"role": "user", "content": "Please write to jane.doe@example.com about invoice 7."},
        ],
    )
    recent = usage(ledger_gateway, ADMIN).json()["recent"]
    kept = [r["prompt"] for r in recent if r["app"] == "gamma"]
    assert kept == ["Please write to [EMAIL] about invoice 7."]
    assert all(r["prompt"] is None for r in recent if r["app"] != "gamma")


@pytest.mark.parametrize("outage, expect", [("deny", 503), ("edge", "edge"), (None, 503)])
def test_a_store_that_cannot_be_reached_applies_the_apps_store_outage(outage, expect):
    """Redis away: `deny` (and the default under `on_exhausted: deny`) refuses what would spend,
    `edge` keeps it local."""
    import asyncio

    from classifiers import Scorer
    from router.budget import AppBudget, Caps
    from router.errors import NoCapacity
    from router.ledger.redis_store import RedisStore
    from router.pricing import Price
    from router.request import parse_chat_request
    from router.routing import Caller, Router
    from router.rules import PlainRules
    from tests.fakes import FakeTier

    store = RedisStore("redis://127.0.0.1:9/0")  # nothing listens there
    edge, cloud = FakeTier("edge", "edge"), FakeTier("cloud", "cloud")
    router = Router({"edge": edge, "cloud": cloud}, Scorer(), {"cloud": Price(1e-3, 1e-3)}, store)
    budget = AppBudget(Caps(daily_usd=1.0), on_exhausted="deny", store_outage=outage)
    caller = Caller("t", PlainRules(router.catalog, prefer="cloud"), budget)
    request = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5})
    try:
        if expect == 503:
            with pytest.raises(NoCapacity) as refused:
                asyncio.run(router.complete(request, caller))
            assert refused.value.code == "budget_store_unavailable" and cloud.requests == []
        else:
            assert asyncio.run(router.complete(request, caller)).route == "edge" and cloud.requests == []
    finally:
        store.close()


def test_alone_a_replica_spends_its_share_of_what_was_left():
    from router.budget import Caps
    from router.ledger.redis_store import RedisStore

    store = RedisStore("redis://127.0.0.1:9/0")
    try:
        store._seen["t"], store._replicas = (0.4, 0.4), 2  # Redis last said: $0.4 spent, two replicas
        caps = Caps(daily_usd=1.0)  # $0.6 left: $0.3 this replica's share
        assert [store.reserve_alone("t", caps, 0.2) is None for _ in range(3)] == [
            True,
            False,
            False,
        ]  # within its share: $0.2, then $0.2 more would be $0.4
        assert store.reserve_alone("t", caps, 0.1) is None  # what is left of it fits
    finally:
        store.close()
