"""Per-app policy files, end to end: a real gateway, the OpenAI SDK, the fake cloud upstream."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.conftest import ROOT, GatewayProcess, gateway_config

KEYS = {
    name: f"{name}-key-0123456789"
    for name in ("private", "cascade", "capped", "denied", "local", "reload", "limited", "dry")
}

POLICIES = {
    "private": """
app: private
defaults: {edge: smollm2, cloud: gpt-fake}
rules:
  - name: secrets
    when: {pii: [SECRET]}
    action: deny
    message: "Credentials may not be sent to this assistant."
  - name: pii-stays-local
    when: {pii: [US_SSN, PHONE, CREDIT_CARD]}
    route: edge
    fallback: none
  - name: share-masked
    when: {tags: [share]}
    route: cloud
    redact: true
  - name: default
    route: edge
    fallback: cloud
""",
    "cascade": """
app: cascade
defaults: {cloud: gpt-fake}
rules:
  - name: demanding
    when: {tags: [demanding]}
    route: edge
    cascade: {escalate_to: cloud, when_confidence_below: 0.999}
  - name: lenient
    route: edge
    cascade: {escalate_to: gpt-fake, when_confidence_below: 0.001}
""",
    "capped": """
app: capped
defaults: {cloud: gpt-fake}
budget: {daily_usd: 2.0, on_exhausted: edge}
rules:
  - name: cloud-first
    route: cloud
    fallback: edge
""",
    "denied": """
app: denied
defaults: {cloud: gpt-fake}
budget: {daily_usd: 2.0, monthly_usd: 10, on_exhausted: deny}
rules:
  - name: cloud-first
    route: cloud
""",
    "local": """
app: local
allow_cloud: false
rules:
  - name: edge-only
    route: edge
    fallback: none
""",
    "limited": """
app: limited
limits: {requests_per_minute: 2, max_messages: 3, max_tokens: 5}
rules:
  - name: edge
    route: edge
""",
    "dry": """
app: dry
defaults: {cloud: gpt-fake}
budget: {daily_usd: 1000, on_exhausted: deny}
limits: {requests_per_minute: 2}
rules:
  - name: cloud-first
    route: cloud
""",
    "reload": """
app: reload
rules:
  - name: stay-local
    route: edge
    fallback: none
""",
}


@pytest.fixture(scope="module")
def policy_gateway(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("policies")
    config = gateway_config(upstream.url, tmp)
    config["cloud"]["models"][0]["price"] = {"input_per_1m": 100_000, "output_per_1m": 100_000}
    config["apps"] = [{"name": name, "key": key, "policy": f"{name}.yaml"} for name, key in KEYS.items()]
    for name, text in POLICIES.items():
        (tmp / f"{name}.yaml").write_text(text)
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def client(gateway: GatewayProcess, app: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=gateway.url + "/v1", api_key=KEYS[app], max_retries=0, default_headers=headers or None
    )


def ask(gateway, app, text, **kwargs):
    headers = kwargs.pop("headers", {})
    return client(gateway, app, **headers).chat.completions.with_raw_response.create(
        model=kwargs.pop("model", "auto"), messages=[{"role": "user", "content": text}], max_tokens=4, **kwargs
    )


def test_a_prompt_with_an_ssn_stays_on_the_edge(policy_gateway, upstream):
    raw = ask(policy_gateway, "private", "My SSN is 123-45-6789, which form do I need?")
    assert (raw.headers["x-edgeway-route"], raw.headers["x-edgeway-rule"]) == ("edge", "pii-stays-local")
    assert upstream.requests == []


def test_a_named_model_its_policy_overrides_is_said_not_silently_replaced(policy_gateway, upstream):
    raw = ask(policy_gateway, "private", "My SSN is 123-45-6789, which form do I need?", model="gpt-fake")
    assert raw.headers["x-edgeway-model"] == "smollm2" and raw.headers["x-edgeway-requested-model"] == "gpt-fake"
    assert upstream.requests == []
    honored = ask(policy_gateway, "private", "Which form do I need for a refund?", model="smollm2")
    assert "x-edgeway-requested-model" not in honored.headers


def test_a_private_prompt_the_edge_cannot_hold_fails_closed_instead_of_going_to_the_cloud(policy_gateway, upstream):
    text = "My SSN is 123-45-6789. " + "Here is my whole tax history, line by line. " * 400
    with pytest.raises(openai.APIStatusError) as caught:
        ask(policy_gateway, "private", text)
    assert caught.value.status_code == 400 and caught.value.code == "context_length_exceeded"
    assert upstream.requests == []
    # without private data the same prompt may go to the cloud
    raw = ask(policy_gateway, "private", text.replace("My SSN is 123-45-6789. ", ""))
    assert raw.headers["x-edgeway-route"] == "cloud"


def test_a_secret_is_refused_with_403_and_the_policys_message(policy_gateway, upstream):
    with pytest.raises(openai.PermissionDeniedError) as caught:
        ask(policy_gateway, "private", "why does sk-proj-" + "Ab12" * 12 + " not work?")
    assert caught.value.code == "forbidden_by_policy"
    assert "Credentials may not be sent" in caught.value.message
    assert upstream.requests == []
    # which rule refused it is said where an operator looks: the answer, its row, its log line
    rule = caught.value.response.headers["x-edgeway-rule"]
    request_id = caught.value.response.headers["x-edgeway-request-id"]
    rows = httpx.get(policy_gateway.url + "/api/usage", headers={"authorization": f"Bearer {KEYS['private']}"})
    (row,) = [r for r in rows.json()["recent"] if r["request_id"] == request_id]
    assert (row["status"], row["rule"], row["error"]) == (403, rule, "forbidden_by_policy") and rule
    (line,) = [line for line in policy_gateway.log().splitlines() if request_id in line and "edgeway.access" in line]
    assert "403" in line and f"rule={rule} error=forbidden_by_policy" in line


def test_redaction_masks_private_data_for_the_cloud_and_restores_it_in_the_answer(policy_gateway, upstream):
    upstream.echo = True
    text = "Please write to jane.doe@example.com and ring +44 20 7946 0958 today"
    raw = ask(
        policy_gateway, "private", text.replace(" and ring +44 20 7946 0958", ""), headers={"x-edgeway-tags": "share"}
    )
    assert raw.headers["x-edgeway-route"] == "cloud" and raw.headers["x-edgeway-redacted"] == "1"
    sent = upstream.requests[-1].body["messages"][0]["content"]
    assert sent == "Please write to [EMAIL_1] today"
    assert raw.parse().choices[0].message.content == "Please write to jane.doe@example.com today"


def test_redaction_restores_placeholders_split_across_stream_chunks(policy_gateway, upstream):
    upstream.echo = True
    text = "Mail jane.doe@example.com or j.smith@example.org, then jane.doe@example.com again."
    stream = client(policy_gateway, "private", **{"x-edgeway-tags": "share"}).chat.completions.create(
        model="auto", messages=[{"role": "user", "content": text}], stream=True
    )
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(pieces) == text
    assert upstream.requests[-1].body["messages"][0]["content"] == "Mail [EMAIL_1] or [EMAIL_2], then [EMAIL_1] again."
    # The echoing upstream streams 4-character chunks, so every 9-character placeholder was split.


def test_route_explains_each_rule_and_the_values_it_looked_at(policy_gateway, upstream):
    body = {"model": "auto", "messages": [{"role": "user", "content": "Call me on +1 (415) 555-0132"}]}
    decision = httpx.post(
        policy_gateway.url + "/v1/route", json=body, headers={"authorization": f"Bearer {KEYS['private']}"}
    ).json()["decision"]
    assert decision["rule"] == "pii-stays-local" and decision["targets"] == ["smollm2"]
    assert decision["cloud_allowed"] is False
    assert [(t["rule"], t["matched"]) for t in decision["trace"]] == [("secrets", False), ("pii-stays-local", True)]
    assert decision["trace"][1]["observed"] == {"pii": ["PHONE"]}
    assert upstream.requests == []


def test_a_cascade_escalates_when_the_edge_is_not_confident_and_keeps_it_otherwise(policy_gateway, upstream):
    kept = ask(policy_gateway, "cascade", "Say hi.")
    assert kept.headers["x-edgeway-route"] == "edge" and kept.headers["x-edgeway-cascade"] == "edge answer kept"
    assert upstream.requests == []
    escalated = ask(policy_gateway, "cascade", "Say hi.", headers={"x-edgeway-tags": "demanding"})
    assert escalated.headers["x-edgeway-route"] == "cloud"
    assert escalated.headers["x-edgeway-cascade"].startswith("escalated: edge confidence 0.")
    assert len(upstream.requests) == 1


def test_a_streamed_cascade_holds_the_edge_answer_back_then_streams_the_winner(policy_gateway, upstream):
    for tags, route in (("", "edge"), ("demanding", "cloud")):
        response = client(
            policy_gateway, "cascade", **{"x-edgeway-tags": tags}
        ).chat.completions.with_raw_response.create(
            model="auto", messages=[{"role": "user", "content": "Say hi."}], max_tokens=4, stream=True
        )
        assert response.headers["x-edgeway-route"] == route
        chunks = list(response.parse())
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip()


def test_an_edge_only_app_gets_the_edge_even_when_it_names_a_cloud_model(policy_gateway, upstream):
    raw = ask(policy_gateway, "local", "What is 2+2?", model="gpt-fake")
    assert raw.headers["x-edgeway-route"] == "edge"
    assert upstream.requests == []


def test_when_the_budget_is_spent_the_edge_answers(policy_gateway, upstream):
    # at $0.1 a token the first fits ($1.70 at most: 17 tokens, its max_tokens 4 among them) and
    # costs about $0.70, which leaves no room for another's worst case in the $2 day
    first = ask(policy_gateway, "capped", "What is 2+2?")
    assert first.headers["x-edgeway-route"] == "cloud"
    second = ask(policy_gateway, "capped", "What is 2+2?")
    assert second.headers["x-edgeway-route"] == "edge"
    assert len(upstream.requests) == 1


def test_when_the_budget_is_spent_and_the_policy_says_deny_it_is_429_with_retry_after(policy_gateway, upstream):
    ask(policy_gateway, "denied", "What is 2+2?")
    with pytest.raises(openai.RateLimitError) as caught:
        ask(policy_gateway, "denied", "What is 2+2?")
    assert caught.value.code == "budget_exhausted"
    assert 0 < int(caught.value.response.headers["retry-after"]) <= 86400


def test_per_app_caps_on_messages_and_max_tokens(policy_gateway, upstream):
    limited = client(policy_gateway, "limited")
    with pytest.raises(openai.BadRequestError) as caught:
        limited.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}] * 4)
    assert caught.value.code == "too_many_messages"
    with pytest.raises(openai.BadRequestError) as caught:
        limited.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}], max_tokens=50)
    assert caught.value.code == "max_tokens_too_large"


def test_a_thousand_dry_runs_leave_the_budget_the_rate_limit_and_the_ledger_untouched(policy_gateway, upstream):
    if time.time() % 60 > 50:  # the rate limit counts in one-minute windows: start in a fresh one
        time.sleep(60 - time.time() % 60 + 0.1)
    body = {"model": "auto", "max_tokens": 1000, "messages": [{"role": "user", "content": "What is 2+2?"}]}
    headers = {"authorization": f"Bearer {KEYS['dry']}"}
    with httpx.Client(base_url=policy_gateway.url, headers=headers, timeout=10) as http:
        for _ in range(1000):  # each would reserve over $100 (1,000 tokens at $0.1) if a dry run admitted
            route = http.post("/v1/route", json=body)
            assert route.status_code == 200 and route.json()["decision"]["targets"] == ["gpt-fake"]
        usage = http.get("/api/usage").json()
        assert usage["totals"]["requests"] == 0
        assert usage["budgets"] == [
            {"app": "dry", "daily_usd": 1000, "monthly_usd": None, "left_usd": 1000, "on_exhausted": "deny"}
        ]
    assert upstream.requests == []
    # The whole rate limit is still there: two requests a minute, then 429.
    ask(policy_gateway, "dry", "Hi")
    ask(policy_gateway, "dry", "Hi")
    with pytest.raises(openai.RateLimitError) as caught:
        ask(policy_gateway, "dry", "Hi")
    assert caught.value.code == "rate_limit_exceeded"


def test_a_rate_limit_answers_429_with_retry_after(policy_gateway, upstream):
    if time.time() % 60 > 55:  # the limit counts in one-minute windows: start in a fresh one
        time.sleep(60 - time.time() % 60 + 0.1)
    ask(policy_gateway, "limited", "Hi")
    ask(policy_gateway, "limited", "Hi")
    with pytest.raises(openai.RateLimitError) as caught:
        ask(policy_gateway, "limited", "Hi")
    assert caught.value.code == "rate_limit_exceeded"
    assert 0 < int(caught.value.response.headers["retry-after"]) <= 60


def test_a_changed_policy_applies_within_two_seconds_and_a_broken_one_keeps_the_last_good(
    policy_gateway, upstream, tmp_path
):
    path = Path(policy_gateway.log_path).parent / "reload.yaml"
    assert ask(policy_gateway, "reload", "Hi").headers["x-edgeway-route"] == "edge"
    # a long edge answer is in flight while the file changes; it must finish
    inflight = client(policy_gateway, "reload").chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=60, stream=True
    )
    first = next(iter(inflight))
    path.write_text(POLICIES["reload"].replace("route: edge\n    fallback: none", "route: cloud"))
    deadline = time.monotonic() + 2.5
    while ask(policy_gateway, "reload", "Hi").headers["x-edgeway-route"] != "cloud":
        assert time.monotonic() < deadline, "the new policy did not apply within 2 s"
        time.sleep(0.1)
    rest = list(inflight)
    assert first.choices and rest[-1].choices[0].finish_reason in ("stop", "length")

    path.write_text("app: reload\nrules:\n  - name: broken\n    route: clowd\n")
    deadline = time.monotonic() + 3
    while not (status := httpx.get(policy_gateway.url + "/readyz").json()["policies"]["reload"])["error"]:
        assert time.monotonic() < deadline, "the broken policy was not noticed within 3 s"
        time.sleep(0.1)
    assert "unknown model 'clowd'" in status["error"]
    assert ask(policy_gateway, "reload", "Hi").headers["x-edgeway-route"] == "cloud"
    assert "NOT reloaded" in policy_gateway.log()
    metrics = httpx.get(policy_gateway.url + "/metrics").text
    assert 'edgeway_policy_valid{app="reload"} 0.0' in metrics
    assert 'edgeway_policy_reload_failures_total{app="reload"} 1.0' in metrics


def test_a_file_is_read_once_it_stops_changing_so_a_half_written_edit_is_no_failure(tmp_path):
    """`Path.write_text` truncates, then writes: a look between the two saw an empty file and
    reported a failed reload (and a broken edit counted twice)."""
    from policies.policy import Models
    from policies.reload import PolicyFiles

    path = tmp_path / "reload.yaml"
    path.write_text(POLICIES["reload"])
    files = PolicyFiles({"reload": path}, Models(("smollm2",), ("gpt-fake",)))
    entry = files.loaded["reload"]

    path.write_text("")  # the truncation, seen by one look ...
    files.refresh()
    path.write_text("app: reload\nrules:\n  - name: broken\n    route: clowd\n")  # ... then the content
    files.refresh()
    assert entry.failed_reloads == 0 and entry.error is None  # still changing: not read yet
    files.refresh()
    assert entry.failed_reloads == 1 and "unknown model 'clowd'" in str(entry.error)
    assert files.current("reload").spec.rules[0].route == "edge"  # the last good policy stays

    path.write_text(POLICIES["reload"].replace("route: edge\n    fallback: none", "route: cloud"))
    files.refresh()
    files.refresh()
    assert entry.error is None and entry.reloads == 1 and files.current("reload").spec.rules[0].route == "cloud"


def test_a_policy_for_another_app_is_refused_with_its_file_and_line(tmp_path):
    """A policy's `app:` names the app it is for: given to another app by the config, at start-up,
    on a reload and in `edgeway policy check --config`, it is an error at that line (the default
    policy, which any app may decide by, names none of them)."""
    from policies.policy import Models
    from policies.reload import PolicyFiles
    from policies.yaml_source import FileError

    models = Models(("smollm2",), ("gpt-fake",))
    path = tmp_path / "support.yaml"
    path.write_text("# the support team's\napp: support\nrules:\n  - {name: all, route: edge}\n")
    with pytest.raises(FileError) as refused:
        PolicyFiles({"billing": path}, models)
    assert str(refused.value) == (
        f"{path}:2:6: app: this file is for app 'support', but the config gives it to app 'billing': "
        "name 'billing' here, or give it to 'support'"
    )
    assert PolicyFiles({"(default policy)": path}, models, shared="(default policy)").current("(default policy)")
    files = PolicyFiles({"support": path}, models)
    path.write_text(path.read_text().replace("app: support", "app: sales"))
    files.refresh()
    files.refresh()
    assert "this file is for app 'sales', but the config gives it to app 'support'" in str(
        files.loaded["support"].error
    )

    config = tmp_path / "edgeway.yaml"
    config.write_text("apps:\n  - {name: billing, key: billing-key-0123, policy: support.yaml}\n")
    result = edgeway("policy", "check", "--config", str(config), str(path))
    assert result.returncode == 1
    assert f"{path}:2:6: app: this file is for app 'sales', but the config gives it to app 'billing'" in result.stderr
    path.write_text(path.read_text().replace("app: sales", "app: billing"))
    assert edgeway("policy", "check", "--config", str(config), str(path)).returncode == 0


def edgeway(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_policy_check_passes_the_examples_and_names_file_line_and_key_of_each_error(tmp_path):
    examples = sorted(str(p) for p in (ROOT / "configs" / "policies").glob("*.yaml"))
    result = edgeway("policy", "check", "--config", str(ROOT / "configs" / "edgeway.yaml"), *examples)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(": ok") == 4

    bad = tmp_path / "bad.yaml"
    bad.write_text("app: x\nrules:\n  - name: a\n    when: {pii: [PASSPORT]}\n    route: edge\n    colour: blue\n")
    result = edgeway("policy", "check", str(bad))
    assert result.returncode == 1
    assert f"{bad}:4:17: rules[0].when.pii: unknown entity type(s) ['PASSPORT']" in result.stderr
    assert f"{bad}:6:13: rules[0].colour: unknown key" in result.stderr

    bad.write_text("app: x\nrules:\n  - name: all\n    route: edge\n  - name: later\n    route: gpt-9\n")
    result = edgeway("policy", "check", str(bad))
    assert result.returncode == 1
    assert f"{bad}:6:12: rules[1].route: unknown model 'gpt-9'" in result.stderr
    assert f"{bad}:5:5: rules[1]: unreachable: rule 'all' above has no 'when'" in result.stderr
