"""Which MCP tools an app may call: its policy's `tools: {allow, deny}`, globs over `<server>.<tool>`.

Deny by default: a policy without `tools` allows none, and a name no `allow` glob matches is
refused. A `deny` glob wins over every `allow` glob. The same answer is given to `tools/list` and
to `tools/call` (gateway/mcp/), so a tool hidden from an app is also refused when it is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from policies.schema import Tools


@dataclass(frozen=True)
class ToolRules:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    calls_per_minute: tuple[tuple[str, int], ...] = ()  # by server

    @classmethod
    def of(cls, spec: Tools | None) -> ToolRules:
        if spec is None:
            return NO_TOOLS
        return cls(tuple(spec.allow), tuple(spec.deny), tuple(sorted(spec.calls_per_minute.items())))

    def allows(self, name: str) -> bool:
        """Whether the tool `name` (`<server>.<tool>`) may be listed and called."""
        return any(fnmatchcase(name, glob) for glob in self.allow) and not any(
            fnmatchcase(name, glob) for glob in self.deny
        )

    def why_not(self, name: str) -> str:
        """Why `allows(name)` is False, as the refusal says it."""
        denied = next((glob for glob in self.deny if fnmatchcase(name, glob)), None)
        if denied is not None:
            return f"the app's policy denies {name!r} (tools.deny: {denied!r})"
        if not self.allow:
            return f"the app's policy allows no tools (no tools.allow), so not {name!r}"
        return f"no tools.allow glob of the app's policy matches {name!r}"

    def per_minute(self, server: str) -> int | None:
        """The calls a minute this app may make to `server`; None: no limit."""
        return dict(self.calls_per_minute).get(server)


NO_TOOLS = ToolRules()
