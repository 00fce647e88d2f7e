"""Limits at the door: JSON depth, max_tokens, header deadlines, a connection limit, framing errors
and usage queries, each answered in OpenAI's error shape before any work or reservation."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import APP_KEYS, GatewayProcess, gateway_config

ADMIN = "admin-key-0123456789"
HEADER_TIMEOUT_S = 1.0
MAX_CONNECTIONS = 24


@pytest.fixture(scope="module")
def door(upstream, tmp_path_factory) -> Iterator[GatewayProcess]:
    tmp = tmp_path_factory.mktemp("door")
    server = {"max_body_bytes": 65536, "header_timeout_s": HEADER_TIMEOUT_S, "max_connections": MAX_CONNECTIONS}
    process = GatewayProcess(gateway_config(upstream.url, tmp, admin_key=ADMIN, server=server), tmp)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def post(gateway: GatewayProcess, content: bytes) -> httpx.Response:
    headers = {"authorization": f"Bearer {APP_KEYS['alpha']}", "content-type": "application/json"}
    return httpx.post(gateway.url + "/v1/chat/completions", content=content, headers=headers, timeout=30)


def nested(depth: int) -> str:
    """JSON text of objects nested `depth` deep (json.dumps itself cannot write 2,000 levels)."""
    return '{"a": ' * depth + '"x"' + "}" * depth


def with_metadata(model: str, depth: int) -> bytes:
    head = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})[:-1]
    return f'{head}, "metadata": {nested(depth)}}}'.encode()


def assert_openai_error(answer: httpx.Response, status: int) -> dict:
    assert answer.status_code == status, answer.text[:300]
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


def raw(gateway: GatewayProcess, data: bytes, wait_s: float = 5.0) -> bytes:
    """Send `data` on a new connection and read until the gateway closes it."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=wait_s) as s:
        s.sendall(data)
        received = b""
        while chunk := s.recv(65536):
            received += chunk
    return received


def parsed(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.mark.parametrize("depth", [65, 300, 2000])
def test_a_body_nested_too_deep_is_a_400_that_names_where(door, upstream, depth):
    error = assert_openai_error(post(door, with_metadata("gpt-fake", depth)), 400)
    assert error["code"] == "too_deep" and error["param"]
    assert upstream.requests == []
    assert httpx.get(door.url + "/healthz").status_code == 200


def test_a_body_nested_within_the_limit_is_served(door, upstream):
    assert post(door, with_metadata("gpt-fake", 40)).status_code == 200


@pytest.mark.parametrize("model", ["auto", "gpt-fake", "smollm2"])
def test_a_max_tokens_no_model_can_hold_is_refused_before_anything_is_reserved(door, upstream, model):
    body = {"model": model, "max_tokens": 2**64 - 1, "messages": [{"role": "user", "content": "hi"}]}
    error = assert_openai_error(post(door, json.dumps(body).encode()), 400)
    assert error["param"] in ("max_tokens", "messages")
    assert upstream.requests == []


def test_half_sent_headers_are_answered_408_and_closed_after_the_header_timeout(door):
    started = time.monotonic()
    answer = raw(door, b"POST /v1/chat/completions HTTP/1.1\r\nHost: edgeway\r\nContent-Ty")
    assert HEADER_TIMEOUT_S * 0.8 < time.monotonic() - started < HEADER_TIMEOUT_S + 3
    status, body = parsed(answer)
    assert status == 408 and body["error"]["code"] == "timeout"


def test_a_connection_that_never_sends_a_byte_is_closed_after_the_header_timeout(door):
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", door.port), timeout=10) as s:
        while s.recv(65536):
            pass
    assert time.monotonic() - started < HEADER_TIMEOUT_S + 3


def test_an_http_framing_error_is_answered_in_openais_shape(door):
    answer = raw(
        door,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: edgeway\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nhello",
    )
    status, body = parsed(answer)
    assert status == 400 and body["error"]["code"] == "invalid_http" and body["error"]["message"]


def half_sent(gateway: GatewayProcess, count: int) -> list[socket.socket]:
    """Connections that each send half a request's headers and then nothing."""
    held = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", gateway.port), timeout=5)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: edgeway\r\nContent-Ty")
        held.append(s)
    return held


def test_connections_waiting_for_headers_make_room_for_new_ones_near_the_limit(door):
    held = half_sent(door, MAX_CONNECTIONS * 2)
    try:
        time.sleep(0.2)
        assert httpx.get(door.url + "/healthz", timeout=5).status_code == 200
        status, body = parsed(held[0].recv(65536))  # the longest-waiting was closed first, told why
        assert status == 408 and body["error"]["code"] == "timeout"
        readable, _, _ = select.select([held[-1]], [], [], 0)
        assert readable == []  # the newest is still open, waiting for the rest of its headers
    finally:
        for s in held:
            s.close()


def test_connections_past_the_limit_are_answered_503_only_when_all_are_serving_requests(door):
    # headers whole, body half-sent: each is a request the app is serving, which is never displaced
    busy = []
    for _ in range(MAX_CONNECTIONS):
        s = socket.create_connection(("127.0.0.1", door.port), timeout=5)
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: edgeway\r\ncontent-type: application/json\r\n"
            + f"authorization: Bearer {APP_KEYS['alpha']}\r\n".encode()
            + b'content-length: 1000\r\n\r\n{"model"'
        )
        busy.append(s)
    try:
        time.sleep(0.3)
        assert select.select(busy, [], [], 0)[0] == []  # each is still waiting for its body
        status, body = parsed(raw(door, b"GET /healthz HTTP/1.1\r\nHost: edgeway\r\n\r\n"))
        assert status == 503 and body["error"]["code"] == "too_busy"
    finally:
        for s in busy:
            s.close()
    time.sleep(0.3)
    assert httpx.get(door.url + "/healthz").status_code == 200


def test_idle_keep_alive_connections_are_closed_silently_to_make_room(door):
    clients = [httpx.Client(base_url=door.url, timeout=5) for _ in range(MAX_CONNECTIONS)]
    try:
        for client in clients:  # each holds one idle keep-alive connection after its request
            assert client.get("/healthz").status_code == 200
        assert httpx.get(door.url + "/healthz", timeout=5).status_code == 200
        # a client whose idle connection was closed opens a new one and is served
        assert all(client.get("/healthz").status_code == 200 for client in clients)
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"from": "nan"}, "from"),
        ({"to": "inf"}, "to"),
        ({"from": "-5"}, "from"),
        ({"from": "2026-13-40"}, "from"),
        ({"from": "2026-12-02", "to": "2026-12-01"}, "from"),
        ({"group_by": "weather"}, "group_by"),
        ({"format": "xml"}, "format"),
        ({"form": "csv"}, "form"),
    ],
)
def test_usage_queries_are_validated(door, query, param):
    answer = httpx.get(door.url + "/api/usage", params=query, headers={"authorization": f"Bearer {ADMIN}"})
    assert assert_openai_error(answer, 400)["param"] == param


def _request_with(headers: list[tuple[str, str]]) -> bytes:
    body = json.dumps({"model": "gpt-fake", "messages": [{"role": "user", "content": "hi"}]}).encode()
    lines = [
        "POST /v1/chat/completions HTTP/1.1",
        "host: 127.0.0.1",
        f"authorization: Bearer {APP_KEYS['alpha']}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize(
    "headers",
    [
        [("x-big", "a" * (8 * 1024 * 1024))],  # one 8 MB header
        [(f"x-h{i}", "v") for i in range(5000)],  # 5,000 headers
        [(f"x-h{i}", "b" * 1000) for i in range(70)],  # 70 KiB over fields within the count
    ],
    ids=["one 8 MB header", "5,000 headers", "70 KiB in all"],
)
def test_headers_over_the_limits_are_431_and_reach_nothing(door, upstream, headers):
    answer = raw(door, _request_with(headers), wait_s=10)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 "), answer[:300]
    assert json.loads(body)["error"]["code"] == "request_header_fields_too_large"
    assert upstream.requests == []


def test_headers_within_the_limits_are_served(door, upstream):
    answer = raw(door, _request_with([(f"x-h{i}", "v" * 500) for i in range(90)]), wait_s=10)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
