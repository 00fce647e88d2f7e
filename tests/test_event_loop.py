"""The event loop does only I/O: while the largest body the config allows is being handled, for
either tier, /healthz keeps answering, many times over. How fast it answers is a figure, not a
test: `edgeway bench event-loop` prints it against the 100 ms target."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import APP_KEYS, GatewayProcess, gateway_config

MAX_BODY = 4 * 1024 * 1024  # the defaults of server.max_body_bytes and server.max_messages
MAX_MESSAGES = 1024


@pytest.fixture(scope="module")
def roomy(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("roomy")
    config = gateway_config(upstream.url, tmp, server={})  # every server limit at its default
    # No LiteLLM model: its import after start-up (seconds of a thread holding the GIL) is not
    # what this measures.
    config["cloud"]["models"] = [m for m in config["cloud"]["models"] if m["name"] == "gpt-fake"]
    config["cloud"]["models"][0]["timeout_s"] = 60
    config["cloud"]["models"][0]["read_timeout_s"] = 60
    process = GatewayProcess(config, tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def worst_case_body(model: str) -> bytes:
    """As many messages as allowed, as much text as allowed: words, numbers and names to scan."""
    sentence = "Jane Roe of 12 Main Street called 555 0100 about invoice 4471. "
    room = (MAX_BODY - 300) // MAX_MESSAGES - len(json.dumps({"role": "user", "content": ""})) - 2
    text = sentence * (room // len(sentence) - 1)
    messages = [{"role": "user", "content": f"{i:06d} {text}"} for i in range(MAX_MESSAGES)]  # none seen before
    body = json.dumps({"model": model, "max_tokens": 4, "messages": messages}).encode()
    assert len(body) <= MAX_BODY and len(body) > MAX_BODY * 0.95
    return body


# Polled from a process of its own: in this one, the fake upstream's parsing of the 4 MiB body
# would hold the GIL and stall the polls for reasons the gateway did not cause.
POLLER = """
import sys, time, httpx
with httpx.Client(base_url=sys.argv[1], timeout=30) as client:
    while True:
        status = client.get("/healthz").status_code
        print(status, time.time(), flush=True)
        time.sleep(0.01)
"""


def healthz_answers_while(gateway: GatewayProcess, body: bytes) -> tuple[list[str], httpx.Response]:
    """The statuses of the /healthz polls answered while `body` was being handled."""
    poller = subprocess.Popen([sys.executable, "-c", POLLER, gateway.url], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # the poller's imports, then some quiet polls
        headers = {"authorization": f"Bearer {APP_KEYS['alpha']}", "content-type": "application/json"}
        started = time.time()
        answer = httpx.post(gateway.url + "/v1/chat/completions", content=body, headers=headers, timeout=120)
        ended = time.time()
    finally:
        poller.terminate()
        out, _ = poller.communicate(timeout=10)
    polls = [line.split() for line in out.splitlines()]
    return [status for status, at in polls if started < float(at) < ended], answer


@pytest.mark.parametrize("model", ["smollm2", "gpt-fake"])
def test_healthz_keeps_answering_while_the_largest_allowed_body_is_handled(roomy, upstream, model):
    during, answer = healthz_answers_while(roomy, worst_case_body(model))
    assert answer.status_code < 500, answer.text[:300]
    if model == "smollm2":  # far more than the edge model's context: refused, after reading all of it
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "context_length_exceeded"
    else:
        assert answer.status_code == 200 and len(upstream.requests) == 1
    # a loop held by the parse, the scan or the templating would answer none until the request is done
    assert len(during) >= 10 and set(during) == {"200"}
