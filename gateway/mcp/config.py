"""The gateway config's `mcp:` key: the MCP servers whose tools `/mcp` serves.

```yaml
mcp:
  servers:
    - name: git                     # its tools are named git.<tool>
      command: [uvx, mcp-server-git, --repository, /srv/repo]
      where: local                  # started by the gateway, on this machine
    - name: crm
      url: https://crm.example.com/mcp
      where: remote                 # the app's privacy rules read what is sent to it
      headers: {Authorization: "Bearer ${CRM_TOKEN}"}
```

Credentials come from here (`headers`, `env`, with `${VAR}` from the environment), never from
the client: the gateway holds them, and an app's key only says which tools it may call.
"""

from __future__ import annotations

from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Where(StrEnum):
    """Whether what a server is sent stays on the premises (`local`) or leaves them (`remote`):
    the app's privacy rules read the arguments of a call to a remote server as they read a prompt."""

    LOCAL = "local"
    REMOTE = "remote"


class Transport(StrEnum):
    STDIO = "stdio"  # `command`: the gateway starts the server and speaks to it on its stdin and stdout
    STREAMABLE_HTTP = "streamable_http"  # `url`: the current HTTP transport
    SSE = "sse"  # `url`: the older HTTP+SSE transport (a URL whose path ends in /sse, unless told)


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # no dot: a tool's name is `<server>.<tool>`, and the first dot ends the server's name
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    command: list[str] | None = Field(None, min_length=1)
    url: str | None = None
    where: Where
    headers: dict[str, str] = Field(default_factory=dict)  # sent to a `url` server
    env: dict[str, str] = Field(default_factory=dict)  # given to a `command` server, over the gateway's own
    transport: Transport | None = None  # for a `url`: streamable_http, or sse (default: by the URL's path)
    timeout_s: float = Field(60.0, gt=0)  # a call that takes longer fails

    @model_validator(mode="after")
    def _one_way_to_reach(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("expected either command: [...] (a server the gateway starts) or url: (one it reaches)")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"url: expected http(s)://host/path, found {self.url!r}")
            if self.transport is Transport.STDIO:
                raise ValueError("transport: stdio is for a command, not a url")
        elif self.transport not in (None, Transport.STDIO):
            raise ValueError(f"transport: {self.transport} needs a url, not a command")
        if self.command is not None and self.headers:
            raise ValueError("headers are sent to a url server; a command server takes env")
        return self

    @property
    def reached_by(self) -> Transport:
        if self.transport is not None:
            return self.transport
        if self.command is not None:
            return Transport.STDIO
        assert self.url is not None
        return Transport.SSE if urlsplit(self.url).path.rstrip("/").endswith("/sse") else Transport.STREAMABLE_HTTP


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: list[McpServerConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> McpConfig:
        names = [s.name for s in self.servers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"MCP server names must be unique: {twice}")
        return self
