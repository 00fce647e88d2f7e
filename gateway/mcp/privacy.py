"""A tool call to a remote MCP server read by the app's privacy rules, as a prompt is.

The arguments are scanned with the prompts' scanner (`classifiers.Scorer`) and the app's policy
decides on what it found, the tool's name (`<server>.<tool>`) standing for the model a prompt
names: a deny rule denies the call, a rule that keeps the request on the premises refuses it
(the server is off them), and a masking rule masks each private value with the prompts' masking
(`router.redaction`), so the server gets `[EMAIL_1]`; the values are put back in its result.
The result is read too before the client gets it: what the server sent back that the client did
not send is masked where the app's rule masks, since the next model call would carry it on.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import mcp_types as types

from classifiers import Scorer
from classifiers.forwarded import Key
from classifiers.signals import PrivacyFinding, Signals
from policies.conditions import Facts
from policies.policy import AppPolicy
from router.egress import facts_as_values
from router.redaction import Redaction, Restoration, Unredactable, dotted
from router.request import ChatRequest

ARGUMENTS = "arguments"  # where a call's arguments stand in the body the scan reads
RESULT = "result"
# the keys of a tool's result that the protocol names (a result's, a content block's)
_RESULT_KEYS = frozenset(
    ("content", "structuredContent", "isError", "_meta", "type", "text", "data", "mimeType", "resource", "uri")
)


class Refusal(StrEnum):
    DENIED = "denied"  # the app's rule denies it
    LOCAL_ONLY = "local_only"  # the app's rule keeps it on the premises, and the server is off them


class Refused(Exception):
    def __init__(self, refusal: Refusal, rule: str, message: str) -> None:
        super().__init__(message)
        self.refusal, self.rule, self.message = refusal, rule, message


@dataclass(frozen=True)
class Reading:
    """What the app's privacy rules made of one call's arguments."""

    rule: str  # the policy rule that decided ("" where nothing was read: a local server)
    findings: tuple[PrivacyFinding, ...]
    kept_masked: tuple[PrivacyFinding, ...]  # what a copy kept at rest masks
    facts: dict[str, Any]  # what the rule decided on, as values (the audit keeps them)
    sent: dict[str, Any]  # the arguments as the server gets them
    restoration: Restoration | None  # where they were masked: what puts the values back

    @property
    def masked(self) -> bool:
        return self.restoration is not None


def unread(arguments: dict[str, Any]) -> Reading:
    """A call to a local server: its arguments stay on the premises, and go as they are."""
    return Reading("", (), (), {}, arguments, None)


def read_arguments(
    scorer: Scorer, policy: AppPolicy, tool: str, arguments: dict[str, Any], schema: dict[str, Any]
) -> Reading:
    """The arguments of a call of `tool` (whose input schema is `schema`) to a remote server, as
    the app's policy lets them leave. Raises Refused where it does not."""
    body = {ARGUMENTS: arguments}
    signals = scorer.signals([], body=body)
    # the tool's parameters are its contract, not something said: a finding that spans one's name
    # (the scan reads `{"email": "jo@x.io"}` as "emailjo@x.io" too) would rename the argument
    findings = _not_naming(signals.privacy, _parameters(schema))
    kept = tuple(f for f in signals.kept_masked if f in findings)
    facts = _facts(signals, tool, findings)
    verdict = policy.evaluate(facts)
    found = _said(findings)
    if verdict.deny is not None:
        raise Refused(Refusal.DENIED, verdict.rule, verdict.deny)
    if not verdict.cloud_allowed:
        raise Refused(
            Refusal.LOCAL_ONLY,
            verdict.rule,
            f"{tool} is on a remote MCP server, and rule {verdict.rule!r} of this app's policy keeps "
            f"this call on the premises{found}; it was not sent.",
        )
    values = facts_as_values(facts)
    if not verdict.redact or not findings:
        return Reading(verdict.rule, findings, kept, values, arguments, None)
    try:
        redaction = Redaction(_request(tool, body), findings)
    except Unredactable as exc:
        raise Refused(Refusal.LOCAL_ONLY, verdict.rule, f"{tool}: {exc.message}") from None
    sent: dict[str, Any] = redaction.request.body[ARGUMENTS]
    return Reading(verdict.rule, findings, kept, values, sent, redaction)


def _not_naming(findings: tuple[PrivacyFinding, ...], names: frozenset[str]) -> tuple[PrivacyFinding, ...]:
    """The findings but those that span one of `names` used as a key."""
    return tuple(f for f in findings if not (isinstance(f.path[-1], Key) and f.path[-1].name in names))


def _parameters(schema: Any) -> frozenset[str]:
    """Every property name a JSON schema declares, at any depth."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(k for k in properties if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def kept_at_rest(tool: str, reading: Reading) -> dict[str, Any]:
    """The arguments as the audit keeps them: every finding masked, even where they left readable."""
    if reading.masked or not reading.kept_masked:
        return reading.sent
    masked: dict[str, Any] = Redaction(_request(tool, {ARGUMENTS: reading.sent}), reading.kept_masked).request.body[
        ARGUMENTS
    ]
    return masked


def read_result(
    scorer: Scorer,
    policy: AppPolicy | None,
    tool: types.Tool,
    name: str,
    result: types.CallToolResult,
    reading: Reading,
) -> types.CallToolResult:
    """The result as the client gets it: the values masked in the arguments put back, and where
    the server is remote (`policy` given), what it returned that the client did not send masked
    where the app's rule masks it."""
    if not reading.masked and policy is None:
        return result
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    sent: set[str] = set()
    if reading.restoration is not None:
        data = reading.restoration.restore_native(data)
        sent = set(reading.restoration.originals.values())
    if policy is not None:
        body = {RESULT: data}
        signals = scorer.signals([], body=body)
        keys = _RESULT_KEYS | _parameters(tool.output_schema)
        found = _not_naming(signals.privacy, keys)
        new = tuple(f for f in found if f.type != "UNSCANNED" and _text(body, f) not in sent)
        if new and policy.evaluate(_facts(signals, name, new)).redact:
            data = Redaction(_request(name, body), new).request.body[RESULT]
    return types.CallToolResult.model_validate(data)


def _request(tool: str, body: dict[str, Any]) -> ChatRequest:
    """A body of the call as the prompts' masking takes one: no messages, the rest as it is."""
    return ChatRequest(body={"messages": [], **body}, model=tool, messages=[])


def _facts(signals: Signals, tool: str, findings: tuple[PrivacyFinding, ...]) -> Facts:
    return Facts(
        prompt_tokens=signals.prompt_tokens,
        pii=frozenset(f.type for f in findings),
        model=tool,
        language=signals.language,
    )


def _said(findings: tuple[PrivacyFinding, ...]) -> str:
    """The findings as a refusal names them: each type, and the first field it is in."""
    first: dict[str, str] = {}
    for f in findings:
        first.setdefault(f.type, dotted(f.path))
    return f" (it holds {', '.join(f'{kind} in {where}' for kind, where in first.items())})" if first else ""


def _text(body: dict[str, Any], finding: PrivacyFinding) -> str:
    """The value a finding covers, as written."""
    holder: Any = body
    for step in finding.path[:-1]:
        holder = holder[step]
    last = finding.path[-1]
    value = last.name if isinstance(last, Key) else holder[last]
    return str(value)[finding.start : finding.end]
