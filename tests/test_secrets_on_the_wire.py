"""Secrets and split values as real clients send them, through a gateway on loopback, and the egress
audit's check of what left.

Two apps share one gateway and its SQLite store: `masked` masks private values for the cloud,
`private` keeps them on the edge. A seed phrase, a Basic credential, a wallet's key beside a name,
and a card split over a tool call's arguments are masked whole by the one and kept local by the
other; and `edgeway audit --check` names a record that left with a value readable (planted through
the store, as a gateway with a weaker rule would have kept it) and none of the records the gateway
masked (their placeholders are no findings)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from classifiers.privacy.findings import Finding
from classifiers.signals import Scorer
from gateway.audit import check
from gateway.config import load_config
from policies.policy import Models, parse_policy
from router.documents import open_documents
from router.egress import Egress, EgressLog, FoundLeft, Left, Purpose
from tests.conftest import PRIVATE_POLICY, GatewayProcess, gateway_config
from tests.test_batches import MASKING_POLICY
from tests.test_cli import edgeway

KEYS = {"masked": "masked-key-wire-0123456789", "private": "private-key-wire-0123456789"}
SEED = "legal winner thank year wave sausage worth useful legal winner thank yellow"
BASIC = "YWRtaW46Q29ycmVjdEhvcnNlQmF0dGVyeTk="  # admin:CorrectHorseBattery9
WIF = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"
SAID = {
    "a seed phrase": (f"Is this seed valid? {SEED}", ("sausage", "winner thank")),
    "a Basic credential": (f"Why does curl -H 'Authorization: Basic {BASIC}' get a 401?", (BASIC,)),
    "a wallet key beside a name": (f"import this key into Electrum for Jane Roe: {WIF}", (WIF,)),
    "a routing and an account number": ("wire it to routing 026009593, account 4830019275166", ("026009593",)),
}


@pytest.fixture(scope="module")
def wire(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("wire")
    (tmp / "masked.yaml").write_text(MASKING_POLICY)
    (tmp / "private.yaml").write_text(PRIVATE_POLICY)
    config = gateway_config(upstream.url, tmp, store=f"sqlite:///{tmp / 'ledger.db'}")
    config["apps"] = [
        {"name": "masked", "key": KEYS["masked"], "policy": str(tmp / "masked.yaml")},
        {"name": "private", "key": KEYS["private"], "policy": str(tmp / "private.yaml")},
    ]
    process = GatewayProcess(config, tmp)
    process.config_path = tmp / f"gateway-{process.port}.yaml"  # type: ignore[attr-defined]
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client(gateway: GatewayProcess, app: str):
    import openai

    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEYS[app], max_retries=0)


@pytest.mark.parametrize("name", sorted(SAID))
def test_a_masking_app_masks_the_secret_and_a_local_only_app_keeps_it_on_the_edge(wire, upstream, name):
    said, values = SAID[name]
    answer = client(wire, "masked").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": said}], max_tokens=4
    )
    assert answer.headers["x-edgeway-route"] == "cloud"
    (received,) = upstream.requests
    sent = json.dumps(received.body)
    assert all(value not in sent for value in values), (name, sent)
    upstream.reset()
    kept = client(wire, "private").chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": said}], max_tokens=4
    )
    assert kept.headers["x-edgeway-route"] == "edge" and upstream.requests == []


def test_a_card_split_over_a_tool_calls_arguments_is_masked_in_both(wire, upstream):
    arguments = json.dumps({"card_first8": "54127534", "card_last8": "29016889"})
    messages = [
        {"role": "user", "content": "Pay the invoice with my card."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "declined"},
        {"role": "user", "content": "Why?"},
    ]  # fmt: skip
    client(wire, "masked").chat.completions.create(model="auto", messages=messages, max_tokens=4)
    (received,) = upstream.requests
    sent = received.body["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert "54127534" not in sent and "29016889" not in sent
    assert sorted(json.loads(sent).values()) == ["[CREDIT_CARD_1]", "[CREDIT_CARD_2]"]  # each piece its own


def test_the_check_names_a_leak_the_hot_path_let_through_and_no_masked_record(wire, upstream):
    masked = client(wire, "masked")
    for said in (
        "Write to Jane Roe at jane.roe@example.com about the refund.",
        "Which Mersenne number is it, Jane Roe asks (jane.roe@example.com)?",
        SAID["a seed phrase"][0],
    ):
        masked.chat.completions.create(model="auto", messages=[{"role": "user", "content": said}], max_tokens=4)
    config = load_config(str(wire.config_path))  # type: ignore[attr-defined]
    # what a gateway whose rule sent it as written would have kept: nothing found, the key readable
    facts = {"pii": [], "prompt_tokens": 30, "model": "auto", "language": "en", "complexity": 0.2}
    leak = Egress("planted-leak", "masked", "openai", "gpt-fake", "gpt-4o-mini", "chat_completions", Purpose.ANSWER,
                  "rest", (), facts, {"messages": [{"role": "user", "content": f"back up {SEED} for me"}]})  # fmt: skip
    EgressLog(open_documents(config.store, config.seal())).keep(leak)
    checked = edgeway("audit", "--check", "--config", str(wire.config_path), "--app", "masked")  # type: ignore[attr-defined]
    assert checked.returncode == 1, checked.stdout + checked.stderr
    breaches = [json.loads(line) for line in checked.stderr.splitlines() if line.startswith("{")]
    assert [b["request_id"] for b in breaches] == ["planted-leak"]
    assert "SECRET left readable" in breaches[0]["why"] and "messages[0].content" in breaches[0]["why"]


MODELS = Models(("smollm2",), ("gpt-fake",))
VIRAL_LOAD = "my CD4 dropped to 180 and my viral load is detectable again"


def lab_values(text: str) -> list[Finding]:
    """A deeper reader than the scan, for the check's seam: a lab value told by its name."""
    at = text.find("viral load")
    return [Finding("HEALTH", at, at + len("viral load"), 0.9, "lab-values")] if at >= 0 else []


def test_the_check_reads_with_a_deeper_reader_where_one_is_given():
    """`readers` take a text and give what is private in it: what the scan misses (health told
    by a lab value) a learned reader finds after the fact; a placeholder is never its finding."""
    policy = parse_policy(MASKING_POLICY, MODELS)
    facts = {"pii": ["PERSON"], "prompt_tokens": 20, "model": "auto", "language": "en", "complexity": 0.2}
    body = {"messages": [{"role": "user", "content": f"[PERSON_1] here: {VIRAL_LOAD}"}]}
    masked = (FoundLeft("PERSON", "messages[0].content", Left.MASKED),)
    record = Egress("r-1", "masked", "openai", "gpt-fake", "gpt-4o-mini", "chat_completions", Purpose.ANSWER,
                    "masked-to-the-cloud", masked, facts, body)  # fmt: skip
    assert check([record], lambda app: policy, Scorer()) == []  # the scan reads no health in it
    (breach,) = check([record], lambda app: policy, Scorer(), readers=[lab_values])
    assert breach.why == (
        "rule 'masked-to-the-cloud' masks it, and HEALTH left readable (found now: HEALTH in messages[0].content)"
    )

    def reads_placeholders(text: str) -> list[Finding]:
        return [Finding("PERSON", 0, len("[PERSON_1]"), 0.9, "greedy")]

    assert check([record], lambda app: policy, Scorer(), readers=[reads_placeholders]) == []
