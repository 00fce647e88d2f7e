"""The MCP servers of the gateway config, each held open by the gateway for its life.

Each server has one client session (the MCP SDK's `ClientSession`, over `stdio_client` for a
server the gateway starts, `streamable_http_client` or `sse_client` for one it reaches), opened
at start-up and shared by every app's calls (the protocol numbers concurrent requests). A session
that is lost (the process exited, the connection dropped) is opened again, with a backoff, by the
task that holds it; meanwhile its server's tools are not listed and a call to one fails at once.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from classifiers.privacy.known import Known
from gateway.mcp.config import McpServerConfig, Transport, Where

log = logging.getLogger("edgeway.mcp")

SEPARATOR = "."  # a tool's name on /mcp: `<server>.<tool>`
FIRST_CONNECT_S = 30.0  # start-up waits this long at most for the servers' first sessions
MAX_BACKOFF_S = 30.0
PAGES = 100  # of a server's tools/list, at most


class Unavailable(Exception):
    """The server has no session now (it is starting, or was lost): the call did not reach it."""


@dataclass(frozen=True)
class ServedTool:
    """One tool of one server, as /mcp serves it: renamed `<server>.<tool>`."""

    server: str
    tool: types.Tool  # as the server lists it

    @property
    def name(self) -> str:
        return f"{self.server}{SEPARATOR}{self.tool.name}"

    def listed(self) -> types.Tool:
        return self.tool.model_copy(update={"name": self.name})


class Upstream:
    """One configured server and the session to it, while there is one."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.session: ClientSession | None = None
        self.tools: dict[str, ServedTool] = {}  # by the server's own name of the tool
        self.error: str | None = None  # why there is no session, once an attempt failed
        self.tried = anyio.Event()  # set once the first attempt to open the session ended
        self._lost = anyio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def remote(self) -> bool:
        return self.config.where is Where.REMOTE

    async def hold(self) -> None:
        """Open the session, keep it until it is lost, and open it again; until cancelled."""
        delay = 0.5
        while True:
            try:
                async with contextlib.AsyncExitStack() as stack:
                    session = await self._open(stack)
                    with anyio.fail_after(self.config.timeout_s):
                        await session.initialize()
                        self.tools = await self._listed(session)
                    self.session, self.error, delay = session, None, 0.5
                    self._lost = anyio.Event()
                    self.tried.set()
                    log.info("MCP server %s: %d tools", Known(self.name), len(self.tools))
                    await self._lost.wait()
            except Exception as exc:  # an ExceptionGroup of the transport's tasks too
                self.error = _why(exc)
                log.warning("MCP server %s is unavailable: %s", Known(self.name), self.error)
            finally:
                self.session = None
            self.tried.set()
            await anyio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)

    async def _open(self, stack: contextlib.AsyncExitStack) -> ClientSession:
        config = self.config
        transport = config.reached_by
        if transport is Transport.STDIO:
            assert config.command is not None
            command, *args = config.command
            parameters = StdioServerParameters(command=command, args=args, env=config.env or None)
            read, write = await stack.enter_async_context(stdio_client(parameters))
        elif transport is Transport.SSE:
            assert config.url is not None
            read, write = await stack.enter_async_context(
                sse_client(config.url, headers=config.headers, timeout=config.timeout_s)
            )
        else:
            assert config.url is not None
            # the SDK's own defaults (a GET stream may stay open); a call's own wait is `timeout_s`
            client = httpx2.AsyncClient(headers=config.headers, timeout=httpx2.Timeout(30.0, read=300.0))
            await stack.enter_async_context(client)
            read, write = await stack.enter_async_context(streamable_http_client(config.url, http_client=client))
        return await stack.enter_async_context(ClientSession(read, write))

    async def _listed(self, session: ClientSession) -> dict[str, ServedTool]:
        tools: dict[str, ServedTool] = {}
        cursor: str | None = None
        for _ in range(PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.update((t.name, ServedTool(self.name, t)) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """The server's result; MCPError as the server answered it; Unavailable where the call
        could not reach it (the session is then opened again)."""
        session = self.session
        if session is None:
            raise Unavailable(self.error or "its session is opening")
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self.config.timeout_s)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:  # the process exited, or the connection dropped
                self._lost.set()
                raise Unavailable(exc.message) from exc
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            self._lost.set()
            raise Unavailable(_why(exc)) from exc
        except RuntimeError as exc:  # the SDK's check of the result against the tool's output schema
            log.warning("MCP server %s: %s", Known(self.name), exc)
            raise MCPError(
                types.INTERNAL_ERROR, f"{tool} returned a result that its own output schema does not allow"
            ) from None
        if not isinstance(result, types.CallToolResult):
            raise MCPError(types.INTERNAL_ERROR, f"{self.name} answered tools/call with {type(result).__name__}")
        return result


def _why(exc: BaseException) -> str:
    """An error as a log line says it: the first of a group (the transport's tasks raise them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Upstreams:
    """Every configured server: held open while `running()`."""

    def __init__(self, servers: list[McpServerConfig]) -> None:
        self.servers = {s.name: Upstream(s) for s in servers}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Upstreams]:
        """Hold every server's session open, from now until this exits."""
        if not self.servers:
            yield self
            return
        async with anyio.create_task_group() as tasks:
            for upstream in self.servers.values():
                tasks.start_soon(upstream.hold)
            try:
                yield self
            finally:
                tasks.cancel_scope.cancel()

    async def first_tried(self, timeout_s: float = FIRST_CONNECT_S) -> None:
        """Wait until every server's first session has opened or failed (`timeout_s` at most)."""
        if not self.servers:
            return
        started = time.perf_counter()
        with anyio.move_on_after(timeout_s):
            for upstream in self.servers.values():
                await upstream.tried.wait()
        log.info(
            "MCP servers: %s (in %.2f s)",
            Known(", ".join(f"{u.name} ({u.config.where}, {'up' if u.session else 'down'})" for u in self)),
            time.perf_counter() - started,
        )

    def __iter__(self) -> Any:
        return iter(self.servers.values())

    def tools(self) -> list[ServedTool]:
        """Every tool of every server whose session is open, by name."""
        return sorted((t for u in self if u.session is not None for t in u.tools.values()), key=lambda t: t.name)

    def find(self, name: str) -> tuple[Upstream, str] | None:
        """The server and its own name of the tool named `name` on /mcp, if one is configured."""
        server, dot, tool = name.partition(SEPARATOR)
        upstream = self.servers.get(server)
        return (upstream, tool) if upstream is not None and dot and tool else None
