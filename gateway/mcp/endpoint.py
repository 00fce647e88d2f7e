"""`/mcp`: one MCP endpoint (Streamable HTTP) serving each app the tools its policy allows.

The MCP SDK's low-level `Server` speaks the protocol and its session manager the transport
(stateless, answers as JSON: every request stands alone, so any replica can serve it); edgeway
identifies the app from its key as the bearer token, before the request reaches the SDK, and
each handler reads the app from the request it serves. A client that sends no key, or a wrong
one, is answered 401 with a JSON-RPC error.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from gateway.auth import App, AppKeys
from gateway.mcp.calls import ToolCalls
from router.errors import Unauthorized

# the SDK's loggers say every HTTP request and session at INFO: edgeway's access log says them once
for _chatty in ("httpx2", "mcp.server.streamable_http", "mcp.server.streamable_http_manager", "mcp.client"):
    logging.getLogger(_chatty).setLevel(logging.WARNING)

APP = "edgeway.app"  # the key of the identified app in the ASGI scope the SDK's handlers see
UNAUTHORIZED_CODE = -32001


class McpEndpoint:
    """The ASGI app of `/mcp` (a `service.McpService`); `running()` holds the servers' sessions and
    its session manager (in the gateway's lifespan)."""

    def __init__(self, calls: ToolCalls, keys: AppKeys) -> None:
        self.calls = calls
        self.keys = keys
        self.server: Server[Any] = Server(
            "edgeway",
            version=version("edgeway"),
            instructions="The tools this app's policy allows, each named <server>.<tool>.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.sessions = StreamableHTTPSessionManager(app=self.server, json_response=True, stateless=True)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The servers' sessions (started beside the edge's load) and /mcp's own."""
        async with self.calls.upstreams.running(), self.sessions.run():
            yield

    async def ready(self) -> None:
        """Once every server's first session has opened or failed."""
        await self.calls.upstreams.first_tried()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            # every answer goes back on its POST: no stream of the server's own to GET, no session
            # to DELETE (the spec's answer for an endpoint that offers no such stream: 405)
            await _refuse(405, -32600, f"{scope['method']} is not served at /mcp: POST JSON-RPC messages.", send)
            return
        authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        try:
            app = self.keys.identify(authorization)
        except Unauthorized as exc:
            await _refuse(401, UNAUTHORIZED_CODE, exc.message, send)
            return
        scope[APP] = app
        scope.setdefault("state", {})["app_name"] = app.name  # for the request's access line
        await self.sessions.handle_request(scope, receive, send)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        app = _app_of(ctx)
        return types.ListToolsResult(tools=[t.listed() for t in self.calls.tools_for(app.name)])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        app = _app_of(ctx)
        if ctx.request is not None:  # the access line names the tool where a request names its model
            ctx.request.scope.setdefault("state", {})["model"] = params.name[:200]
        return await self.calls.call(app.name, params.name, dict(params.arguments or {}))


def _app_of(ctx: ServerRequestContext[Any, Any]) -> App:
    """The app `McpEndpoint.__call__` identified for the HTTP request this message came in."""
    request = ctx.request
    app = request.scope.get(APP) if request is not None else None
    if not isinstance(app, App):  # (every request passes through __call__ first)
        raise RuntimeError("an MCP request reached its handler without an identified app")
    return app


async def _refuse(status: int, code: int, message: str, send: Send) -> None:
    """An HTTP error with a JSON-RPC error body, as the SDK's transport answers its own."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="edgeway"'))
    elif status == 405:
        headers.append((b"allow", b"POST"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
