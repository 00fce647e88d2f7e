"""The lean HTTP/1.1 client on the cloud hot path, against small servers on loopback."""

from __future__ import annotations

import asyncio
import base64
import ssl
import subprocess
from collections.abc import Awaitable, Callable

import pytest

from router.cloud.http1 import Client, HTTPError, Timeouts

FAST = Timeouts(connect=2, read=2, total=5)


async def serve(handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]):
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def keep_alive(connections: list, answer: Callable[[asyncio.StreamWriter], Awaitable[None]]):
    """A handler that answers every request on a connection, counting the connections."""

    async def handle(reader, writer):
        connections.append(writer)
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            await answer(writer)

    return handle


async def test_a_keep_alive_connection_serves_the_next_request_and_chunked_bodies_are_joined():
    connections = []

    async def answer(writer):
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")

    server, port = await serve(keep_alive(connections, answer))
    client = Client()
    origin, target = client.origin(f"http://127.0.0.1:{port}/v1/chat/completions")
    assert target == "/v1/chat/completions"
    for _ in range(3):
        response = await origin.request("POST", target, b"content-type: application/json\r\n", b"{}", FAST)
        assert response.status == 200 and await response.read() == b"hello world"
    assert len(connections) == 1
    client.close()
    server.close()


async def test_closing_the_client_closes_a_connection_still_serving_an_answer():
    """A gateway that shuts down mid-answer (or a caller that never reads the rest) closes that
    connection with the client, while its event loop runs: the upstream sees the end at once."""
    upstream_saw_end = asyncio.Event()

    async def handle(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\npart of it")
        await writer.drain()
        await reader.read()  # until the client closes
        upstream_saw_end.set()

    server, port = await serve(handle)
    client = Client()
    origin, target = client.origin(f"http://127.0.0.1:{port}/")
    response = await origin.request("POST", target, b"", b"{}", FAST)
    assert response.status == 200
    client.close()
    await asyncio.wait_for(upstream_saw_end.wait(), 2)
    server.close()


async def test_a_connection_the_upstream_closed_while_idle_is_replaced_without_an_error():
    served = []

    async def handle(reader, writer):
        await read_request(reader)
        served.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # keep-alive promised, then the connection is dropped, as idle upstreams do

    server, port = await serve(handle)
    client = Client()
    origin, target = client.origin(f"http://127.0.0.1:{port}/")
    for _ in range(3):
        response = await origin.request("POST", target, b"", b"{}", FAST)
        assert await response.read() == b"ok"
        await asyncio.sleep(0.05)
    assert len(served) == 3
    client.close()
    server.close()


async def test_lines_of_an_event_stream_arrive_as_they_are_sent_and_a_close_ends_the_body():
    async def handle(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: 1\n\nda")
        await writer.drain()
        await asyncio.sleep(0.1)
        writer.write(b"ta: 2\n\n")
        await writer.drain()
        writer.close()

    server, port = await serve(handle)
    client = Client()
    origin, target = client.origin(f"http://127.0.0.1:{port}/")
    response = await origin.request("POST", target, b"", b"{}", Timeouts(2, 2, None))
    assert [line async for line in response.lines()] == [b"data: 1\n", b"\n", b"data: 2\n", b"\n"]
    client.close()
    server.close()


async def test_silence_longer_than_the_read_timeout_and_a_broken_body_are_errors():
    async def handle(reader, writer):
        request = await read_request(reader)
        if b"/silent" in request:
            await asyncio.sleep(5)
        else:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\ntruncated")
            await writer.drain()
            writer.close()

    server, port = await serve(handle)
    client = Client()
    origin, _ = client.origin(f"http://127.0.0.1:{port}/")
    with pytest.raises(TimeoutError):
        await origin.request("POST", "/silent", b"", b"{}", Timeouts(connect=2, read=0.3, total=5))
    response = await origin.request("POST", "/short", b"", b"{}", FAST)
    with pytest.raises(HTTPError):
        await response.read()
    client.close()
    server.close()


async def test_nothing_listening_is_a_clear_error():
    client = Client()
    origin, target = client.origin("http://127.0.0.1:9/")
    with pytest.raises(HTTPError, match="could not connect"):
        await origin.request("POST", target, b"", b"{}", FAST)
    with pytest.raises(ValueError):
        client.origin("ftp://example.com/")


async def test_a_streamed_answer_read_to_done_leaves_its_connection_for_the_next_request():
    from router.cloud.config import CloudModelConfig
    from router.cloud.openai_compat import HttpPool, OpenAICompatible
    from router.request import parse_chat_request

    connections = []
    events = (
        b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: [DONE]\n\n'
    )

    async def answer(writer):
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"%x\r\n" % len(events)
            + events
            + b"\r\n"
        )
        await writer.drain()
        await asyncio.sleep(0.02)  # the closing chunk comes a moment after [DONE]
        writer.write(b"0\r\n\r\n")

    server, port = await serve(keep_alive(connections, answer))
    pool = HttpPool()
    model = OpenAICompatible(
        CloudModelConfig(name="m", provider_model="openai/m", api_base=f"http://127.0.0.1:{port}/v1"), pool
    )
    request = parse_chat_request({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})
    for _ in range(3):
        stream = await model.stream(request)
        chunks = [chunk async for chunk in stream]
        assert chunks[0]["choices"][0]["delta"]["content"] == "hi" and stream.usage.completion_tokens == 1
    assert len(connections) == 1
    await pool.close()
    server.close()


async def test_plain_http_goes_through_the_environment_proxy_with_the_whole_url(monkeypatch):
    seen = []

    async def answer_as_proxy(writer):
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")

    async def handle(reader, writer):
        seen.append((await read_request(reader)).split(b"\r\n"))
        await answer_as_proxy(writer)
        await writer.drain()
        writer.close()

    proxy, port = await serve(handle)
    monkeypatch.setenv("HTTP_PROXY", f"http://user:s%40cret@127.0.0.1:{port}")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    client = Client()
    origin, target = client.origin("http://api.example:8000/v1/chat/completions")
    response = await origin.request("POST", target, b"", b"{}", FAST)
    assert await response.read() == b"ok"
    request_line, *headers = seen[0]
    assert request_line == b"POST http://api.example:8000/v1/chat/completions HTTP/1.1"
    assert b"proxy-authorization: Basic " + base64.b64encode(b"user:s@cret") in headers
    assert client.origin("http://internal.example/v1")[0].proxy is None  # NO_PROXY
    assert client.origin("http://127.0.0.1:8000/v1")[0].proxy is None  # loopback, always
    client.close()
    proxy.close()


async def test_https_is_tunnelled_through_the_proxy_and_verified_end_to_end(monkeypatch, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=api.test",
            "-addext",
            "subjectAltName=DNS:api.test",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)

    async def upstream_handle(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret")
        await writer.drain()

    upstream = await asyncio.start_server(upstream_handle, "127.0.0.1", 0, ssl=tls)
    upstream_port = upstream.sockets[0].getsockname()[1]
    tunnels = []

    async def pipe(reader, writer):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    async def proxy_handle(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        tunnels.append(head.split(b"\r\n", 1)[0])
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    proxy, proxy_port = await serve(proxy_handle)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy_port}")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust the test's own certificate
    client = Client()
    # api.test resolves nowhere: only the proxy connects, and TLS is checked against that name.
    origin, target = client.origin(f"https://api.test:{upstream_port}/v1/chat/completions")
    response = await origin.request("POST", target, b"", b"{}", FAST)
    assert await response.read() == b"secret"
    assert tunnels == [f"CONNECT api.test:{upstream_port} HTTP/1.1".encode()]
    client.close()
    proxy.close()
    upstream.close()
