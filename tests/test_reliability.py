"""Faults and hostile clients against a real gateway process: nothing hangs, nothing is lost."""

from __future__ import annotations

import signal
import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import APP_KEYS, GatewayProcess, client_for, gateway_config
from tests.fake_upstream import FakeUpstream

HELLO = [{"role": "user", "content": "Tell me about the sea."}]


@pytest.fixture
def own_gateway(upstream, tmp_path):
    config = gateway_config(upstream.url, tmp_path, store=f"sqlite:///{tmp_path / 'ledger.db'}")
    config["server"].update(body_timeout_s=1, write_timeout_s=1, shutdown_grace_s=20)
    process = GatewayProcess(config, tmp_path)
    process.db = tmp_path / "ledger.db"
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def rows(db) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT app, route, status FROM usage").fetchall()


def test_a_slow_loris_body_is_cut_off_with_408(own_gateway):
    with socket.create_connection(("127.0.0.1", own_gateway.port)) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"authorization: Bearer " + APP_KEYS["alpha"].encode() + b"\r\ncontent-length: 500\r\n\r\n{"
        )
        sock.settimeout(15)
        started = time.monotonic()
        answer = b""
        while b"request_timeout" not in answer:
            piece = sock.recv(4096)
            if not piece:
                break
            answer += piece
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"request_timeout"' in answer
    assert time.monotonic() - started < 10


def test_a_reader_that_never_reads_is_dropped_after_the_write_timeout(own_gateway, upstream):
    upstream.answer = "endless " * 200_000  # megabytes of stream, far past every socket buffer
    body = (
        b'{"model": "gpt-fake", "stream": true, "max_tokens": 120000, '  # under gpt-4o-mini's window
        b'"messages": [{"role": "user", "content": "Talk."}]}'
    )
    try:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", own_gateway.port))
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"authorization: Bearer " + APP_KEYS["alpha"].encode() + b"\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
            time.sleep(4)  # read nothing: the gateway's writes back up
            sock.settimeout(10)
            received = 0
            while piece := sock.recv(65536):  # what was buffered, then the end: it hung up
                received += len(piece)
        assert received < 10_000_000  # far from the whole answer (30 MB)
        deadline = time.monotonic() + 10
        while ("alpha", "cloud", 499) not in rows(own_gateway.db):
            assert time.monotonic() < deadline, rows(own_gateway.db)
            time.sleep(0.2)
    finally:
        upstream.answer = FakeUpstream.answer


def test_a_saturated_edge_answers_everyone_and_the_ledger_has_a_row_each(own_gateway):
    client = client_for(own_gateway)

    def ask(i: int) -> str:
        return client.chat.completions.create(model="smollm2", messages=HELLO, max_tokens=6).choices[0].finish_reason

    with ThreadPoolExecutor(12) as pool:
        finishes = list(pool.map(ask, range(12)))
    assert set(finishes) <= {"stop", "length"}
    deadline = time.monotonic() + 5
    while len(rows(own_gateway.db)) < 12:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert rows(own_gateway.db).count(("alpha", "edge", 200)) == 12


def test_sigterm_finishes_the_request_in_flight_then_flushes_the_ledger_and_exits(own_gateway):
    client = client_for(own_gateway, timeout=60)
    stream = client.chat.completions.create(model="smollm2", messages=HELLO, max_tokens=80, stream=True)
    chunks = iter(stream)
    first = next(chunks)
    own_gateway.process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    with pytest.raises(httpx.ConnectError):  # no new connections once shutting down
        httpx.get(own_gateway.url + "/healthz", timeout=2)
    rest = list(chunks)
    assert first.choices and rest[-1].choices[0].finish_reason in ("stop", "length")
    # uvicorn finishes its shutdown, then exits by the signal it caught
    assert own_gateway.process.wait(timeout=30) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in own_gateway.log()
    assert ("alpha", "edge", 200) in rows(own_gateway.db)


def test_a_cloud_that_resets_and_fails_never_hangs_a_request(own_gateway, upstream):
    from tests.fake_upstream import Fault

    upstream.fail_next(Fault(drop_after_chunks=0), times=3)
    client = client_for(own_gateway, "beta", timeout=30)
    started = time.monotonic()
    answer = client.chat.completions.create(model="auto", messages=HELLO, max_tokens=3)  # cloud broken: the edge
    assert answer.choices[0].message.content is not None
    assert time.monotonic() - started < 20
