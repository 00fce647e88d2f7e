"""The egress audit: every request that reached a cloud provider, what left (masked as it left),
the findings, the rule and the provider, kept sealed; `GET /api/audit` and `edgeway audit` list
them, and `edgeway audit --check` proves for a period that nothing a local-only rule covers left.

Three apps share one gateway and its SQLite store: `masked` masks private values for the cloud,
`private` keeps them on the edge, `beta` sends everything to the cloud as written."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import anthropic
import httpx
import pytest

from classifiers.signals import Scorer
from gateway.audit import check
from policies.policy import Models, parse_policy
from router.egress import Egress, FoundLeft, Left, Purpose
from tests.conftest import APP_KEYS, BETA_POLICY, PRIVATE_POLICY, GatewayProcess, gateway_config
from tests.fake_upstream import Fault
from tests.test_batches import MASKING_POLICY
from tests.test_cli import edgeway

ADMIN = "admin-key-audit-0123"
KEYS = {"masked": "masked-key-0123456789", "private": "private-key-0123456789", "beta": APP_KEYS["beta"]}
SSN, EMAIL = "123-45-6789", "jane.roe@example.com"
SAID = f"My SSN is {SSN}; write to {EMAIL} about the refund."
ADMIN_HEADERS = {"authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="module")
def audited(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("audit")
    (tmp / "masked.yaml").write_text(MASKING_POLICY)
    (tmp / "private.yaml").write_text(PRIVATE_POLICY)
    config = gateway_config(upstream.url, tmp, admin_key=ADMIN, store=f"sqlite:///{tmp / 'ledger.db'}")
    config["apps"] = [
        {"name": "masked", "key": KEYS["masked"], "policy": str(tmp / "masked.yaml")},
        {"name": "private", "key": KEYS["private"], "policy": str(tmp / "private.yaml")},
        {"name": "beta", "key": KEYS["beta"], "policy": str(tmp / "beta.yaml")},
    ]
    process = GatewayProcess(config, tmp)
    process.config_path = tmp / f"gateway-{process.port}.yaml"  # type: ignore[attr-defined]
    process.tmp = tmp  # type: ignore[attr-defined]
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client(gateway: GatewayProcess, app: str):
    import openai

    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEYS[app], max_retries=0)


def audit(gateway: GatewayProcess, **params: str) -> dict:
    answer = httpx.get(gateway.url + "/api/audit", params=params, headers=ADMIN_HEADERS)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_masked_request_is_recorded_as_the_provider_received_it(audited, upstream):
    answer = client(audited, "masked").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=8
    )
    (received,) = upstream.requests
    records = audit(audited, app="masked")["records"]
    (record,) = [r for r in records if r["request_id"] == answer.headers["x-edgeway-request-id"]]
    assert (record["provider"], record["model"], record["provider_model"]) == ("openai", "gpt-fake", "gpt-4o-mini")
    assert (record["api"], record["purpose"], record["rule"], record["outcome"]) == (
        "chat_completions", "answer", "masked-to-the-cloud", "sent",
    )  # fmt: skip
    assert {(f["type"], f["where"], f["left"]) for f in record["findings"]} == {
        ("US_SSN", "messages[0].content", "masked"),
        ("EMAIL", "messages[0].content", "masked"),
    }
    # what left is what the provider read: the same messages, placeholders where the values were
    assert record["body"]["messages"] == received.body["messages"]
    assert "[US_SSN_1]" in record["body"]["messages"][0]["content"]
    assert record["facts"]["pii"] == ["EMAIL", "US_SSN"]
    assert SSN not in json.dumps(records) and EMAIL not in json.dumps(records)


def test_what_stays_on_the_edge_is_not_in_the_audit_and_what_leaves_is(audited, upstream):
    private = client(audited, "private")
    private.chat.completions.create(model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=4)
    assert upstream.requests == []  # pii-stays-local: answered on the edge
    assert audit(audited, app="private")["records"] == []
    private.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "Name three rivers."}], max_tokens=4
    )
    (record,) = audit(audited, app="private")["records"]
    assert (record["rule"], record["findings"], record["purpose"]) == ("rest", [], "answer")


def test_a_value_sent_readable_is_recorded_readable_and_kept_masked(audited, upstream):
    claude = anthropic.Anthropic(base_url=audited.url, api_key=KEYS["beta"], max_retries=0)
    answer = claude.messages.with_raw_response.create(
        model="claude-fake", max_tokens=8, system="Reply briefly.", messages=[{"role": "user", "content": SAID}]
    )
    assert upstream.saw_text(SSN)  # beta's rule sends what it is given, as written
    records = audit(audited, app="beta")["records"]
    (record,) = [r for r in records if r["request_id"] == answer.headers["x-edgeway-request-id"]]
    assert (record["provider"], record["api"], record["provider_model"]) == (
        "anthropic", "messages", "claude-3-5-haiku-latest",
    )  # fmt: skip
    assert {f["left"] for f in record["findings"]} == {"readable"}
    assert record["body"]["system"] == "Reply briefly."  # the Messages body, as the client wrote it
    kept = json.dumps(record)
    assert SSN not in kept and EMAIL not in kept and "[US_SSN_1]" in kept  # masked at rest all the same
    assert SSN.encode() not in (audited.tmp / "ledger.db").read_bytes()  # and sealed


def test_a_call_that_failed_is_recorded_with_its_code_never_the_providers_words(audited, upstream):
    upstream.fail_next(Fault(status=500, message=f"could not process the input: {SAID}"), times=5)
    answer = client(audited, "beta").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=4
    )
    assert answer.headers["x-edgeway-route"] == "edge"  # beta's fallback answered
    upstream.reset()
    records = audit(audited, app="beta")["records"]
    (record,) = [r for r in records if r["request_id"] == answer.headers["x-edgeway-request-id"]]
    assert record["outcome"].startswith("failed: ") and record["purpose"] == "answer"
    assert "could not process" not in json.dumps(record) and SSN not in json.dumps(record)


def test_the_audit_is_the_admin_keys_and_refuses_what_it_cannot_read(audited):
    url = audited.url + "/api/audit"
    app_key = httpx.get(url, headers={"authorization": f"Bearer {KEYS['beta']}"})
    assert app_key.status_code == 401 and "admin key" in app_key.json()["error"]["message"]
    for params, word in (({"format": "xml"}, "format"), ({"limit": "3"}, "limit"), ({"from": "yesterday"}, "from")):
        refused = httpx.get(url, params=params, headers=ADMIN_HEADERS)
        assert refused.status_code == 400 and word in refused.json()["error"]["message"], refused.text
    backwards = httpx.get(url, params={"from": "2026-12-02", "to": "2026-12-01"}, headers=ADMIN_HEADERS)
    assert backwards.status_code == 400


def test_the_audit_exports_as_csv_and_from_the_command(audited, upstream):
    client(audited, "masked").chat.completions.create(
        model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=4
    )
    spreadsheet = httpx.get(audited.url + "/api/audit", params={"format": "csv"}, headers=ADMIN_HEADERS)
    rows = list(csv.DictReader(io.StringIO(spreadsheet.text)))
    assert spreadsheet.headers["content-type"].startswith("text/csv") and rows
    assert "US_SSN@messages[0].content:masked" in rows[-1]["findings"] and SSN not in spreadsheet.text
    listed = edgeway("audit", "--config", str(audited.config_path), "--app", "masked")
    assert listed.returncode == 0, listed.stderr
    lines = [json.loads(line) for line in listed.stdout.splitlines()]
    assert lines and {line["app"] for line in lines} == {"masked"} and SSN not in listed.stdout
    as_csv = edgeway("audit", "--config", str(audited.config_path), "--format", "csv", "--from", "2026-01-01")
    assert as_csv.returncode == 0 and as_csv.stdout.startswith("ts,request_id,app,provider")


def test_the_check_passes_under_the_policies_that_sent_them_and_fails_under_one_that_keeps_them(audited):
    config = str(audited.config_path)
    client(audited, "beta").chat.completions.create(
        model="auto", messages=[{"role": "user", "content": SAID}], max_tokens=4
    )
    passed = edgeway("audit", "--check", "--config", config)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "none a local-only rule" in passed.stdout
    beta = audited.tmp / "beta.yaml"
    beta.write_text(PRIVATE_POLICY.replace("app: private", "app: beta"))  # beta's private requests now stay
    try:
        failed = edgeway("audit", "--check", "--config", config)
    finally:
        beta.write_text(BETA_POLICY)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    breaches = [json.loads(line) for line in failed.stderr.splitlines()]
    assert breaches and {b["app"] for b in breaches} == {"beta"}
    assert all(b["rule"] == "pii-stays-local" and "keeps it on the premises" in b["why"] for b in breaches)


def test_the_command_says_where_a_memory_stores_records_are(tmp_path, upstream):
    config = tmp_path / "memory.yaml"
    config.write_text(json.dumps(gateway_config(upstream.url, tmp_path)))
    said = edgeway("audit", "--config", str(config))
    assert said.returncode == 2 and "GET /api/audit" in said.stderr


MODELS = Models(("smollm2",), ("gpt-fake",))


def record(body: dict, pii: list[str], findings: tuple[FoundLeft, ...] = (), app: str = "private") -> Egress:
    facts = {"pii": pii, "prompt_tokens": 20, "model": "auto", "language": "en", "complexity": 0.2}
    return Egress("req-1", app, "openai", "gpt-fake", "gpt-4o-mini", "chat_completions", Purpose.ANSWER,
                  "rest", findings, facts, body)  # fmt: skip


def test_the_check_rescans_what_left_and_finds_what_the_scan_missed_then():
    """A record whose findings were empty then, but whose body holds an address: the scan of the
    check finds it, and the private app's rule would have kept it local."""
    policy = parse_policy(PRIVATE_POLICY, MODELS)
    left = record({"messages": [{"role": "user", "content": f"Mail {EMAIL} the report"}]}, [])
    (breach,) = check([left], lambda app: policy, Scorer())
    assert "keeps it on the premises (found now: EMAIL in messages[0].content)" in breach.why
    assert check([left], lambda app: policy) == []  # on its facts alone, nothing was found then
    clean = record({"messages": [{"role": "user", "content": "Name three rivers."}]}, [])
    assert check([clean], lambda app: policy, Scorer()) == []


def test_the_check_finds_a_value_left_readable_under_a_masking_rule():
    policy = parse_policy(MASKING_POLICY, MODELS)
    body = {"messages": [{"role": "user", "content": "Call me on [PHONE_1]"}]}
    readable = record(body, ["PHONE"], (FoundLeft("PHONE", "messages[0].content", Left.READABLE),), app="masked")
    (breach,) = check([readable], lambda app: policy)
    assert breach.why == "rule 'masked-to-the-cloud' masks it, and PHONE left readable"
    masked = record(body, ["PHONE"], (FoundLeft("PHONE", "messages[0].content", Left.MASKED),), app="masked")
    assert check([masked], lambda app: policy) == []
    assert check([readable], lambda app: None) == []  # an app without a policy file keeps nothing local


def test_an_image_that_left_is_kept_as_its_size_and_digest(audited, upstream):
    image = "data:image/png;base64,iVBORw0KGgo" + "A" * 4000
    parts = [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": image}}]
    client(audited, "beta").chat.completions.create(
        model="gpt-fake", messages=[{"role": "user", "content": parts}], max_tokens=4
    )
    assert upstream.saw_text(image)
    record = audit(audited, app="beta")["records"][-1]
    kept = record["body"]["messages"][0]["content"][1]["image_url"]["url"]
    assert kept.startswith("[base64: 4033 characters, sha256 ") and len(kept) < 120
    assert {(f["type"], f["left"]) for f in record["findings"]} == {("UNSCANNED", "readable")}
