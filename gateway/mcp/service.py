"""What the gateway holds of `/mcp` (`McpService`), and `/mcp` of a gateway whose config names no
MCP server (`NoServers`).

The MCP SDK takes about 0.46 s to import (its pydantic models), more than a fifth of a quiet
start: a gateway whose config names no MCP server never imports it, and its `/mcp` says why it
serves no tools. `gateway/mcp/endpoint.py` serves the configured servers' tools.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from starlette.types import Receive, Scope, Send

NO_METHOD_CODE = -32601  # JSON-RPC's "method not found": no tool is served here


class McpService(Protocol):
    """`/mcp` as the gateway runs it: held for the gateway's life, ready once its servers' first
    sessions were tried, and an ASGI app."""

    def running(self) -> AbstractAsyncContextManager[None]: ...

    async def ready(self) -> None: ...

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


class NoServers:
    """`/mcp` with no MCP server configured: every request is answered 404 with a JSON-RPC error
    that names the config key to set."""

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield

    async def ready(self) -> None:
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        message = "This gateway serves no MCP tools: its config names no MCP server (mcp: {servers: [...]})."
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": NO_METHOD_CODE, "message": message}})
        encoded = body.encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(encoded)).encode())]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": encoded})
