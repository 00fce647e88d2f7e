"""Where the gateway listens (the config's `server:`), read before anything heavy is imported:
`edgeway serve` binds its port first, so that a port in use is refused at once, not after the
seconds its models, classifiers and tables take to load. This module imports PyYAML and pydantic
only (`python -X importtime -m gateway.cli serve --port N` shows what loads before the refusal).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

MiB = 1024 * 1024


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    max_body_bytes: int = Field(4 * MiB, ge=1024)
    body_timeout_s: float = Field(30.0, gt=0)  # a client must send its whole body within this
    write_timeout_s: float = Field(60.0, gt=0)  # a client that stops reading a stream is dropped after this
    shutdown_grace_s: float = Field(30.0, ge=0)  # on SIGTERM, in-flight requests get this long to finish
    max_json_depth: int = Field(64, ge=8, le=250)  # nesting of objects and arrays in a body
    max_messages: int = Field(1024, ge=1)  # per request, for every app (a policy's limits may say fewer)
    header_timeout_s: float = Field(
        10.0, gt=0
    )  # a request's headers must arrive within this (also idle new connections)
    max_connections: int = Field(2048, ge=1)  # open at once; more are answered 503 and closed


def address(config: str | None, host: str | None, port: int | None) -> tuple[str, int] | None:
    """The host and port `edgeway serve` will listen on, from its options and the config file's
    `server:` as written; None where only the whole config can say (a file that does not read,
    a `${VARIABLE}` in `server:`, a value the schema refuses: its load then says what is wrong)."""
    server: Any = {}
    if config is not None:
        try:
            document = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return None
        server = document.get("server", {}) if isinstance(document, dict) else None
        if not isinstance(server, dict) or "${" in repr(server):
            return None
    try:
        read = ServerConfig.model_validate(server)
    except ValidationError:
        return None
    return (host or read.host, read.port if port is None else port)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, for uvicorn to serve on."""
    family, kind, proto, _, bound_to = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    listening = socket.socket(family, kind, proto)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(bound_to)
    except OSError:
        listening.close()
        raise
    listening.set_inheritable(True)
    return listening
