"""One tool call through /mcp, from the app's policy to its ledger row.

`ToolCalls.call` checks the tool against the app's `tools:` (a tool outside them is refused here
and never reaches its server), counts the call against the app's per-server rate, reads the
arguments of a call to a remote server with the app's privacy rules (`privacy.py`), calls the
server, reads its result, and whatever happened writes one ledger row (kind `tool`), counts the
call in /metrics and, for what left for a remote server, keeps an egress record.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from classifiers import Scorer
from classifiers.privacy.known import Known
from gateway.mcp import privacy
from gateway.mcp.privacy import Reading, Refused
from gateway.mcp.upstream import ServedTool, Unavailable, Upstream, Upstreams
from gateway.metrics import RequestMetrics
from policies.policy import AppPolicy
from policies.tools import NO_TOOLS, ToolRules
from router.egress import Egress, EgressLog, Left, Purpose, found_left
from router.errors import EdgewayError
from router.ledger import Store, UsageRow
from router.ledger.rows import RowKind
from router.ledger.store import StoreUnavailable
from router.limits import Limits
from router.offload import off_loop
from router.routing import INLINE_BYTES

log = logging.getLogger("edgeway.mcp")
T = TypeVar("T")

# JSON-RPC codes of the refusals: the spec's own for a tool that is not there; an
# implementation-defined server error (-32000 to -32099) for each of edgeway's refusals
NOT_ALLOWED_CODE = types.INVALID_PARAMS  # as for an unknown tool: the app cannot tell the two apart
REFUSED_CODE = -32001  # the app's privacy rules refuse it
RATE_LIMITED_CODE = -32002
UNAVAILABLE_CODE = -32003
UNKNOWN = "unknown"
MAX_NAME = 200  # characters of a tool's name the ledger keeps (a client may send any)


class Outcome(StrEnum):
    """How a call ended: the `outcome` label of edgeway_mcp_calls_total."""

    OK = "ok"
    TOOL_ERROR = "tool_error"  # the tool ran and said it failed (`isError`)
    NOT_ALLOWED = "not_allowed"  # outside the app's tools (or no such tool): never sent
    DENIED = "denied"  # a deny rule of the app's policy: never sent
    LOCAL_ONLY = "local_only"  # a rule keeps it on the premises, and the server is remote: never sent
    RATE_LIMITED = "rate_limited"  # over the app's calls_per_minute for the server: never sent
    UNAVAILABLE = "unavailable"  # the server has no session now: never sent
    FAILED = "failed"  # the server answered with an error, or not in time


STATUS = {
    Outcome.OK: 200,
    Outcome.TOOL_ERROR: 200,
    Outcome.NOT_ALLOWED: 403,
    Outcome.DENIED: 403,
    Outcome.LOCAL_ONLY: 403,
    Outcome.RATE_LIMITED: 429,
    Outcome.UNAVAILABLE: 503,
    Outcome.FAILED: 502,
}


@dataclass
class Call:
    """One call as its books say it."""

    app: str
    name: str  # as the client named it: `<server>.<tool>`
    started: float
    upstream: Upstream | None = None
    tool: str = ""  # the server's own name of it
    rule: str = ""
    outcome: Outcome = Outcome.FAILED
    reading: Reading | None = None
    sent: bool = False  # the call reached the server
    error: str | None = None  # why the server's call failed, for the audit
    known: bool = False  # a tool of a configured server (else its name is the client's word alone)

    @property
    def server(self) -> str:
        return self.upstream.name if self.upstream is not None else ""

    def labels(self) -> tuple[str, str]:
        """The server and tool labels of its metrics: a name no server has is `unknown` (a client
        may send any, and each would be a series of its own)."""
        return (self.server or UNKNOWN, self.name if self.known else UNKNOWN)


class ToolCalls:
    """The tools each app may call, and its calls to them."""

    def __init__(
        self,
        upstreams: Upstreams,
        policy_of: Callable[[str], AppPolicy | None],
        scorer: Scorer,
        ledger: Store,
        egress: EgressLog,
        metrics: RequestMetrics,
    ) -> None:
        self.upstreams = upstreams
        self._policy_of = policy_of
        self._scorer = scorer
        self._ledger = ledger
        self._egress = egress
        self._metrics = metrics

    def rules_of(self, app: str) -> ToolRules:
        """The app's `tools:` as its policy says now (reloaded with it); none without a policy."""
        policy = self._policy_of(app)
        return NO_TOOLS if policy is None else ToolRules.of(policy.spec.tools)

    def tools_for(self, app: str) -> list[ServedTool]:
        rules = self.rules_of(app)
        return [t for t in self.upstreams.tools() if rules.allows(t.name)]

    async def call(self, app: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """The tool's result as the client gets it; raises MCPError for a call refused or failed."""
        call = Call(app, name, time.perf_counter())
        try:
            result = await self._call(call, arguments)
        except MCPError:
            self._book(call)
            raise
        except anyio.get_cancelled_exc_class():  # the client went away: the call is still on the books
            call.outcome, call.error = Outcome.FAILED, "cancelled"
            self._book(call)
            raise
        except Exception:
            log.exception("MCP call %s by %s failed in the gateway", Known(name[:MAX_NAME]), Known(app))
            call.outcome, call.error = Outcome.FAILED, "internal error"
            self._book(call)
            raise MCPError(types.INTERNAL_ERROR, "edgeway could not complete this call; its log says why.") from None
        call.outcome = Outcome.TOOL_ERROR if result.is_error else Outcome.OK
        self._book(call)
        return result

    async def _call(self, call: Call, arguments: dict[str, Any]) -> types.CallToolResult:
        policy = self._policy_of(call.app)
        rules = NO_TOOLS if policy is None else ToolRules.of(policy.spec.tools)
        found = self.upstreams.find(call.name)
        if found is not None:
            call.upstream, call.tool = found
        call.known = found is not None and found[1] in found[0].tools
        if not call.known or not rules.allows(call.name):
            call.outcome = Outcome.NOT_ALLOWED
            why = rules.why_not(call.name) if call.known else "no such tool"
            named = call.name if len(call.name) <= MAX_NAME else call.name[:MAX_NAME] + "..."
            raise MCPError(NOT_ALLOWED_CODE, f"Unknown tool {named!r}: {why}; tools/list lists this app's tools.")
        assert call.upstream is not None
        assert policy is not None  # (rules allow nothing without one)
        self._take(call, rules)
        if call.upstream.remote:
            try:
                schema = call.upstream.tools[call.tool].tool.input_schema
                call.reading = await _sized(
                    _size(arguments), lambda: privacy.read_arguments(self._scorer, policy, call.name, arguments, schema)
                )
            except Refused as refused:
                call.rule = refused.rule
                call.outcome = Outcome(refused.refusal.value)
                raise MCPError(REFUSED_CODE, refused.message) from None
            call.rule = call.reading.rule
        else:
            call.reading = privacy.unread(arguments)
        try:
            call.sent = True
            with anyio.fail_after(call.upstream.config.timeout_s):
                result = await call.upstream.call(call.tool, call.reading.sent)
        except Unavailable as exc:
            call.sent, call.outcome, call.error = False, Outcome.UNAVAILABLE, str(exc)
            raise MCPError(UNAVAILABLE_CODE, f"MCP server {call.server!r} is unavailable: {exc}") from None
        except TimeoutError:
            call.outcome, call.error = Outcome.FAILED, "timeout"
            raise MCPError(
                UNAVAILABLE_CODE, f"{call.name} did not answer in {call.upstream.config.timeout_s:g} s"
            ) from None
        except MCPError as exc:
            call.outcome, call.error = Outcome.FAILED, f"error {exc.code}"
            raise MCPError(exc.code, f"{call.server}: {exc.message}", exc.data) from None
        tool, reading, remote = call.upstream.tools[call.tool].tool, call.reading, call.upstream.remote
        return await _sized(
            _size(result.content) if remote else 0,
            lambda: privacy.read_result(self._scorer, policy if remote else None, tool, call.name, result, reading),
        )

    def _take(self, call: Call, rules: ToolRules) -> None:
        """Count the call against the app's calls a minute to its server, if its policy sets one."""
        per_minute = rules.per_minute(call.server)
        if per_minute is None:
            return
        try:
            wait = self._ledger.take(f"{call.app}/mcp:{call.server}", 0, Limits(requests_per_minute=per_minute))
        except StoreUnavailable:
            call.outcome = Outcome.UNAVAILABLE
            raise MCPError(UNAVAILABLE_CODE, "The rate limits' store cannot be reached; try again shortly.") from None
        if wait is not None:
            call.outcome = Outcome.RATE_LIMITED
            raise MCPError(
                RATE_LIMITED_CODE,
                f"This app may call {call.server}'s tools {per_minute} times a minute; try again in {wait:.0f} s.",
                {"retry_after_s": round(wait, 3)},
            )

    def _book(self, call: Call) -> None:
        """The call's ledger row, its metrics and, where it left for a remote server, its egress
        record; a store that fails is logged, never the client's error."""
        latency = time.perf_counter() - call.started
        request_id = f"mcp-{uuid.uuid4().hex}"
        upstream = call.upstream
        row = UsageRow(
            request_id=request_id,
            app=call.app,
            route="none" if not call.sent else "cloud" if upstream is not None and upstream.remote else "edge",
            model=call.name[:MAX_NAME],
            rule=call.rule,
            status=STATUS[call.outcome],
            latency_ms=latency * 1e3,
            error=None if call.outcome is Outcome.OK else call.outcome.value,
            kind=RowKind.TOOL,
        )
        try:
            self._ledger.append(row)
        except (StoreUnavailable, EdgewayError, OSError):
            log.exception("the ledger row of MCP call %s could not be written", Known(request_id))
        self._metrics.observe_tool_call(call.app, *call.labels(), call.outcome.value, latency)
        reading = call.reading
        if call.sent and upstream is not None and upstream.remote and reading is not None:
            outcome = "sent" if call.error is None else f"failed: {call.error}"
            self._egress.record(lambda: _record(request_id, call, upstream, reading, outcome))
        if call.outcome not in (Outcome.OK, Outcome.TOOL_ERROR):
            log.info("MCP call %s by %s: %s", Known(call.name), Known(call.app), Known(call.outcome.value))


async def _sized(size: int, work: Callable[[], T]) -> T:
    """`work` (a scan of a call's arguments or result), on a worker thread where it is large: a
    long text's scan would hold every other request on the event loop meanwhile."""
    return work() if size <= INLINE_BYTES else await off_loop(work)


def _size(value: Any) -> int:
    """About how many characters the scan reads in `value`."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_size(v) for v in value)
    if isinstance(value, types.TextContent):
        return len(value.text)
    return 16


def _record(request_id: str, call: Call, upstream: Upstream, reading: Reading, outcome: str) -> Egress:
    """What left for the server: the arguments as they left, every finding masked at rest."""
    return Egress(
        request_id=request_id,
        app=call.app,
        provider="mcp",
        model=upstream.name,
        provider_model=call.tool,
        api="mcp",
        purpose=Purpose.TOOL,
        rule=call.rule,
        findings=found_left(reading.findings, Left.MASKED if reading.masked else Left.READABLE),
        facts=reading.facts,
        body={"name": call.tool, "arguments": privacy.kept_at_rest(call.name, reading)},
        outcome=outcome,
    )
