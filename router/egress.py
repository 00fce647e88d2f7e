"""What left the premises: one record for each time a request was sent to a cloud model.

Each record (`Egress`) says which request of which app went to which provider and model, in which
API, why (the answer, a fallback, an escalation, a shadow comparison, its judge, a batch line
parked at the provider), under which rule, with what the privacy scan found and whether each
finding left masked or readable, the facts the policy decided on, and the body as it left.

Kept at rest, the body is masked with the request's findings even where the rule sent them
readable (what the scan found is never kept in clear), media is kept as its size and digest, and
the whole record is sealed with the store's other documents (`router.documents`). `edgeway audit
--check` reads the records back against a policy (gateway/audit.py).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import hashlib
import json
import logging
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from classifiers.signals import PrivacyFinding, Signals
from policies.conditions import Facts
from router.cloud.base import CloudModel
from router.decision import Decision
from router.documents import Document, Documents
from router.errors import EdgewayError
from router.offload import off_loop
from router.policy_rules import facts_of
from router.redaction import Redaction, dotted
from router.request import ChatRequest
from router.tier import Tier

KIND = "egress"
log = logging.getLogger("edgeway.router")


class Purpose(StrEnum):
    """Why the request went to that model."""

    ANSWER = "answer"  # the decision's first target
    FALLBACK = "fallback"  # a later target, after the ones before it failed
    ESCALATION = "escalation"  # a cascade's cloud model, the edge's answer below its threshold
    SHADOW = "shadow"  # a shadow comparison's other answer
    JUDGE = "judge"  # the judge of a shadow comparison: the question and both answers
    BATCH = "batch"  # a batch line parked for its provider's batch API
    TOOL = "tool"  # a call to a remote MCP server's tool: its arguments (gateway/mcp/)


class Left(StrEnum):
    """How a finding's value left: masked by a placeholder, or as written."""

    MASKED = "masked"
    READABLE = "readable"


@dataclass(frozen=True)
class FoundLeft:
    type: str
    where: str  # the body's field, dotted: messages[0].content
    left: Left


@dataclass(frozen=True)
class Egress:
    request_id: str
    app: str
    provider: str  # LiteLLM's provider name: openai, anthropic, ...
    model: str  # the gateway's name of the model
    provider_model: str  # the provider's id of it, as the body named it
    api: str  # the API the body was written in: chat_completions, messages, responses, completions, embeddings
    purpose: Purpose
    rule: str
    findings: tuple[FoundLeft, ...]
    facts: dict[str, Any]  # what the policy's conditions tested (policies.conditions.Facts), as values
    body: dict[str, Any]  # as it left, the request's findings masked and media digested
    outcome: str = "sent"  # sent | parked | failed: <why>
    ts: float = field(default_factory=time.time)
    number: int = 1  # of the request's records, in order

    @property
    def key(self) -> str:
        return f"{self.request_id}:{self.number}"

    @property
    def masked(self) -> bool:
        return any(f.left == Left.MASKED for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def document(self) -> Document:
        data = {**self.as_dict(), "body": _packed(self.body)}
        return Document(self.key, self.app, self.ts, data)

    @classmethod
    def of(cls, document: Document) -> Egress:
        data = dict(document.data)
        findings = tuple(FoundLeft(f["type"], f["where"], Left(f["left"])) for f in data.pop("findings"))
        body = _unpacked(data.pop("body"))
        return cls(**{**data, "purpose": Purpose(data["purpose"]), "findings": findings, "body": body})


@dataclass(frozen=True)
class Call:
    """One call to a model, as its witness is told of it."""

    model: Tier
    sent: ChatRequest  # as the provider got it
    request: ChatRequest  # as the client sent it: its findings mask the copy kept
    signals: Signals  # the request's
    decision: Decision
    purpose: Purpose
    masked: bool  # whether the decision masked the findings of what was sent
    outcome: str  # sent | parked | failed: <why>


def failed(exc: BaseException) -> str:
    """A failed call's outcome: the error's code and status, never its message (a provider's
    error may quote the prompt)."""
    if isinstance(exc, EdgewayError):
        return f"failed: {exc.code or type(exc).__name__} ({exc.status})"
    return f"failed: {type(exc).__name__}"


class Witness(Protocol):
    """What is told of each call to a model (a request's account: `RequestAccount.sent_to`)."""

    def sent_to(self, call: Call) -> None: ...


class EgressLog:
    """The records, kept beside the ledger in the store's documents."""

    def __init__(self, documents: Documents) -> None:
        self.documents = documents
        self._pending: set[asyncio.Task[None]] = set()

    def find(self, app: str | None = None, since: float | None = None, until: float | None = None) -> list[Egress]:
        return [Egress.of(d) for d in self.documents.find(KIND, app, since, until)]

    def keep(self, egress: Egress) -> None:
        self.documents.put(KIND, egress.document())

    def record(self, made: Callable[[], Egress]) -> None:
        """Make the record and keep it on a worker thread, beside the request rather than before
        it: masking and sealing a long body takes milliseconds its first byte must not wait. A
        record that cannot be kept is logged, and the request goes on (its ledger row stands)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a command, a test): kept now
            self.keep(made())
            return
        task = loop.create_task(self._kept(made))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _kept(self, made: Callable[[], Egress]) -> None:
        try:
            await off_loop(lambda: self.keep(made()))
        except Exception:
            log.exception("the egress record of a request could not be kept")

    async def settled(self) -> None:
        """Wait until every record begun so far is kept (a report reads them all)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


def record_of(call: Call, request_id: str, app: str, number: int) -> Egress:
    """What left in `call`, the `number`th of request `request_id` of `app`."""
    model, signals = call.model, call.signals
    config = model.config if isinstance(model, CloudModel) else None
    kept = signals.kept_masked
    api, body = _as_left(model, call.sent)
    if kept and not call.masked:  # sent readable: kept masked all the same
        redaction = Redaction(call.request, kept)
        if call.sent is call.request:
            api, body = _as_left(model, redaction.request)
        else:  # a body made from the request (a shadow's, a judge's): its values masked where they stand
            redaction.mask_elsewhere(body)
    provider_model = config.provider_model_id if config is not None else model.name
    if "model" in body:
        body["model"] = provider_model
    left = Left.MASKED if call.masked else Left.READABLE
    return Egress(
        request_id=request_id,
        app=app,
        provider=config.provider if config is not None else "",
        model=model.name,
        provider_model=provider_model,
        api=api,
        purpose=call.purpose,
        rule=call.decision.rule,
        findings=found_left(signals.privacy, left),
        facts=facts_seen(signals, call.request, call.decision),
        body=_digested(body),
        outcome=call.outcome,
        number=number,
    )


def facts_seen(signals: Signals, request: ChatRequest, decision: Decision) -> dict[str, Any]:
    """The facts a policy decides on, as plain values (the complexity scored if it was not)."""
    return facts_as_values(facts_of(signals, request, decision.live))


def facts_as_values(facts: Facts) -> dict[str, Any]:
    """What a policy's conditions tested, as plain values (the complexity scored if it was not)."""
    return {
        "complexity": round(facts.complexity, 6),
        "prompt_tokens": facts.prompt_tokens,
        "max_tokens": facts.max_tokens,
        "pii": sorted(facts.pii),
        "model": facts.model,
        "language": facts.language,
        "tags": sorted(facts.tags),
        "needs": sorted(facts.needs),
        "latency_budget_ms": facts.latency_budget_ms,
        "edge_queue_wait_ms": facts.edge_queue_wait_ms,
        "budget_left_usd": facts.budget_left_usd,
    }


def found_left(findings: tuple[PrivacyFinding, ...], left: Left) -> tuple[FoundLeft, ...]:
    """Each type found in each field once, and how it left (`left`, but media as it was)."""
    seen: dict[tuple[str, str], FoundLeft] = {}
    for f in findings:
        where = dotted(f.path)
        # media nothing read left as it was: it was never masked
        seen.setdefault((f.type, where), FoundLeft(f.type, where, Left.READABLE if f.type == "UNSCANNED" else left))
    return tuple(seen.values())


def _as_left(model: Tier, sent: ChatRequest) -> tuple[str, dict[str, Any]]:
    """The body the provider got and its API: as the client wrote it where the provider speaks
    its API, else its Chat Completions reading (a legacy completion and embeddings as they are)."""
    if sent.native is not None and sent.speaks(model.apis):
        return str(sent.native.api), copy.deepcopy(sent.native.body)
    kind = "embeddings" if sent.inputs is not None else "completions" if sent.prompt is not None else "chat_completions"
    return kind, copy.deepcopy(sent.body)


_BASE64 = re.compile(r"(?:data:[\w.+-]+/[\w.+-]+;base64,)?[A-Za-z0-9+/=\s]+")
_KEPT_WHOLE = 512  # characters: a string longer than this that is all base64 is kept as its digest


def _digested(value: Any) -> Any:
    """`value` with each run of base64 (an image, a PDF, a file) replaced by its size and SHA-256:
    what it was can be shown without keeping megabytes of it for every request that sent it."""
    if isinstance(value, dict):
        return {k: _digested(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_digested(v) for v in value]
    if isinstance(value, str) and len(value) > _KEPT_WHOLE and _BASE64.fullmatch(value):
        digest = hashlib.sha256(value.encode()).hexdigest()
        return f"[base64: {len(value)} characters, sha256 {digest}]"
    return value


def _packed(body: dict[str, Any]) -> str:
    """A body as kept: compressed (an agent's turns repeat their prefix: about a tenth the size)."""
    return base64.b64encode(zlib.compress(json.dumps(body, ensure_ascii=False).encode(), 6)).decode()


def _unpacked(kept: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(zlib.decompress(base64.b64decode(kept)))
    return body
