"""A remote MCP server on loopback that records what reaches it: each tool call's arguments and
the Authorization header it came with, one JSON line each in the file given.

    python -m tests.mcp_recorder --port 8765 --record calls.jsonl [--transport sse]
    python -m tests.mcp_recorder --record calls.jsonl --transport stdio

Its CRM tool answers with the address it was asked about and an account manager's own (a name,
an address, a phone number): what a masking app's client should get back restored, and masked.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

MANAGER = "Dana Whitfield, dana.whitfield@northwind-example.com, +44 20 7946 0958"


def build(record: Path, transport: str) -> ASGIApp | MCPServer:
    server = MCPServer("crm")
    seen: dict[str, Any] = {}

    def write(tool: str, arguments: dict[str, Any]) -> None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments, **seen}) + "\n")

    @server.tool()
    def lookup_orders(email: str) -> str:
        """The orders of the customer with this email address."""
        write("lookup_orders", {"email": email})
        return f"Orders of {email}: #4411 (shipped), #4420 (open). Account manager: {MANAGER}."

    @server.tool()
    def echo(text: str) -> str:
        """The text, as it arrived."""
        write("echo", {"text": text})
        return text

    @server.tool()
    def token() -> str:
        """The token this server was started with (VAULT_TOKEN), where the gateway started it."""
        return os.environ.get("VAULT_TOKEN", "")

    if transport == "stdio":
        return server
    app = server.sse_app() if transport == "sse" else server.streamable_http_app(json_response=True)

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            seen["authorization"] = headers.get(b"authorization", b"").decode()
        await app(scope, receive, send)

    return recording


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--transport", choices=["streamable-http", "sse", "stdio"], default="streamable-http")
    args = parser.parse_args()
    built = build(args.record, args.transport)
    if isinstance(built, MCPServer):
        built.run("stdio")
        return
    uvicorn.run(built, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
