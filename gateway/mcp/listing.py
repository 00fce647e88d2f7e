"""`edgeway mcp tools --config CFG --app NAME`: the tools an app may call through /mcp.

The config's servers are reached as the gateway reaches them (each started or connected, then
closed), and their tools filtered by the app's policy (`tools:`) as `tools/list` filters them.
"""

from __future__ import annotations

import sys

import anyio

from gateway.config import GatewayConfig
from gateway.mcp.upstream import ServedTool, Upstreams
from policies.policy import load_policy
from policies.tools import NO_TOOLS, ToolRules
from policies.yaml_source import FileError


def run(config: GatewayConfig, app: str) -> int:
    if app not in {a.name for a in config.apps} and not (app == "default" and not config.apps):
        print(f"edgeway: no app named {app!r}; apps: {sorted(a.name for a in config.apps)}", file=sys.stderr)
        return 2
    path = config.policy_path(app)
    try:
        policy = load_policy(path, config.model_names()) if path is not None else None
    except FileError as exc:
        print(f"edgeway: invalid policy:\n{exc}", file=sys.stderr)
        return 2
    rules = NO_TOOLS if policy is None else ToolRules.of(policy.spec.tools)
    if not config.mcp.servers:
        print("edgeway: the config has no MCP servers (mcp: {servers: [...]})", file=sys.stderr)
        return 1
    upstreams = Upstreams(config.mcp.servers)
    every, down = anyio.run(_reach, upstreams)
    listed = [t for t in every if rules.allows(t.name)]
    width = max((len(t.name) for t in listed), default=4)
    for tool in listed:
        where = upstreams.servers[tool.server].config.where
        about = (tool.tool.description or "").strip().splitlines()
        print(f"{tool.name:<{width}}  {where:<6}  {about[0] if about else ''}")
    for name, error in down.items():
        print(f"edgeway: MCP server {name} is unavailable: {error}", file=sys.stderr)
    source = policy.source if policy is not None else "no policy file"
    print(f"{len(listed)} of {len(every)} tools for app {app} ({source})", file=sys.stderr)
    return 1 if down else 0


async def _reach(upstreams: Upstreams) -> tuple[list[ServedTool], dict[str, str]]:
    """Every server's tools, and why each server that could not be reached was not."""
    async with upstreams.running():
        await upstreams.first_tried()
        down = {u.name: u.error or "it did not answer in time" for u in upstreams if u.session is None}
        return upstreams.tools(), down
