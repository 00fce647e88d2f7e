"""Batch lines answered through their provider's own batch API, at its batch price.

A line of a `/v1/chat/completions` batch that the app's policy sends to a cloud model whose
provider has a batch API (`cloud.models[].batch_api`: OpenAI, Groq and Anthropic by default) is
routed, privacy-checked, masked and admitted as a live request is; only the call is deferred
(`router.deferral`). `LineDeferral` keeps, in the store, the line as the provider will get it, the
request's suspended account (its row so far and its reservation) and the values a redacting rule
masked; the line's answer is a 202 naming the model, and the runner goes on to the next line.

`ProviderLines` sends a batch's parked lines as a provider batch per model (once enough wait, or
every line has been dispatched); polls them; and settles each answer: restored, priced at the
batch price, its ledger row written by the resumed account, its result kept like any other line's. A line the
provider could not answer (its batch failed or expired, a 5xx) goes back to the runner as an
ordinary request, as a failed call falls back; one the provider refused (a 4xx) gets that error.
Every step is kept in the store, so a restarted gateway goes on polling and never sends a line
twice: a line with a provider batch is only ever settled from it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from classifiers.privacy.known import Known
from classifiers.signals import Signals
from gateway.batches import Batch, Line
from gateway.running import Gateway
from router.account import RequestAccount
from router.answer import Answer
from router.cloud.base import CloudModel, status_error
from router.cloud.batch_api import ProviderBatchAPI, ProviderResult
from router.cloud.validate import chat_completion
from router.decision import Decision
from router.deferral import Parked
from router.documents import Document, Documents
from router.errors import EdgewayError, UpstreamError
from router.ledger import RowKind
from router.modes import WHOLE
from router.redaction import Redaction, Restoration
from router.request import ChatRequest
from router.tier import Tier

log = logging.getLogger("edgeway.batches")

PARKED = "parked"  # a line's state in the store: in (or on its way to) its provider's batch


def jobs_kind(batch_id: str) -> str:
    """The provider batches a batch's lines went to, keyed by the provider's batch id."""
    return f"provider_batch:{batch_id}"


def line_key(index: int) -> str:
    return f"{index:06d}"


class LineDeferral:
    """`router.deferral.Deferral` for one batch line: parks a call to a model with a batch API."""

    def __init__(
        self, documents: Documents, kind: str, app: str, index: int, expires_at: float, min_window_s: float,
        account: RequestAccount,
    ) -> None:  # fmt: skip
        self._documents, self._kind, self._app, self._index = documents, kind, app, index
        self._expires_at, self._min_window_s = expires_at, min_window_s
        self._account = account

    def takes(self, model: Tier, request: ChatRequest) -> bool:
        if not isinstance(model, CloudModel) or model.batch_api is None:
            return False
        plain_chat = request.prompt is None and request.inputs is None and not request.stream
        # the provider promises a day, and answers most batches far sooner: a batch that must end
        # sooner than `min_window_s` from now sends its lines as ordinary requests instead
        return plain_chat and time.time() + self._min_window_s <= self._expires_at

    async def park(
        self,
        model: Tier,
        sent: ChatRequest,
        request: ChatRequest,
        signals: Signals,
        decision: Decision,
        redaction: Redaction | None,
    ) -> Parked:
        assert isinstance(model, CloudModel) and model.batch_api is not None  # takes() said so
        key = line_key(self._index)
        data = {
            "state": PARKED,
            "model": model.name,
            "line": await model.batch_api.line(key, sent),
            "account": self._account.suspend(model.name, decision.rule, request, signals, decision),
            "originals": {} if redaction is None else redaction.originals,
        }
        document = Document(key, self._app, time.time(), data)
        await asyncio.to_thread(self._documents.put, self._kind, document)
        return Parked(model.name)


@dataclass
class _Job:
    model: str
    indices: list[int]
    cancel_asked: bool = False


class ProviderLines:
    """The parked lines of one batch run by this process: sent, polled and settled.

    `settled(index, result)` gets a line's result (an answer, or the provider's refusal);
    `returned(index)` a line to send again as an ordinary request."""

    def __init__(
        self,
        gateway: Gateway,
        batch: Batch,
        lines: list[Line],
        kind: str,
        settled: Callable[[int, dict[str, Any]], None],
        returned: Callable[[int], None],
    ) -> None:
        self._gateway, self._documents = gateway, gateway.documents
        self._batch, self._lines, self._kind = batch, lines, kind
        self._settled, self._returned = settled, returned
        self._waiting: dict[str, list[int]] = {}  # model -> parked lines not yet sent
        self._since: dict[str, float] = {}  # model -> when its oldest waiting line was parked
        self._jobs: dict[str, _Job] = {}  # provider batch id -> what went in it

    @property
    def busy(self) -> bool:
        return bool(self._waiting or self._jobs)

    async def _store(self, call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(call, *args)

    # --- what the runner tells it -----------------------------------------------------------
    async def load(self, kept: dict[int, dict[str, Any]]) -> None:
        """After a restart: the provider batches already made, and the parked lines still to send."""
        for document in await self._store(self._documents.find, jobs_kind(self._batch.id)):
            self._jobs[document.key] = _Job(document.data["model"], list(document.data["indices"]))
        sent = {index for job in self._jobs.values() for index in job.indices}
        for index, data in sorted(kept.items()):
            if data.get("state") == PARKED and index not in sent:
                self.parked(index, data["model"])

    def parked(self, index: int, model: str) -> None:
        self._waiting.setdefault(model, []).append(index)
        self._since.setdefault(model, time.monotonic())

    async def send(self, everything: bool) -> None:
        """A provider batch for each model whose parked lines are enough to send now: once
        `batches.provider_lines` wait or the oldest has waited `provider_collect_s`, or
        `everything` (every line of the batch was sent: what waits will wait for nothing more)."""
        config = self._gateway.config.batches
        now = time.monotonic()
        ready = [
            model
            for model, lines in self._waiting.items()
            if everything
            or len(lines) >= config.provider_lines
            or now - self._since.get(model, now) >= config.provider_collect_s
        ]
        waiting = {model: self._waiting.pop(model) for model in ready}
        for model in ready:
            self._since.pop(model, None)
        for model, parked in waiting.items():
            api = self._api(model)
            documents = {i: await self._store(self._documents.get, self._kind, line_key(i)) for i in parked}
            indices = [i for i, d in documents.items() if d is not None and d.data.get("state") == PARKED]
            for lost in [i for i, d in documents.items() if d is None]:  # (never sent anywhere: sent live)
                self._returned(lost)
            if api is None:  # the model left the config since the line was parked
                for index in indices:
                    await self._give_back(index, f"{model} has no batch API in this gateway's config")
                continue
            if not indices:
                continue
            try:
                made = await api.submit([documents[i].data["line"] for i in indices], {"edgeway_batch": self._batch.id})
            except EdgewayError as exc:  # the provider's batch API is down: the lines go live instead
                log.warning(
                    "batch %s: %s; its %d lines go as ordinary requests",
                    Known(self._batch.id),
                    exc.message,
                    len(indices),
                )
                for index in indices:
                    await self._give_back(index, exc.message)
                continue
            # kept before anything else: from here on these lines are only ever settled from it
            self._jobs[made.id] = _Job(model, indices)
            job = Document(made.id, self._batch.app, time.time(), {"model": model, "indices": indices})
            await self._store(self._documents.put, jobs_kind(self._batch.id), job)
            log.info(
                "batch %s: %d lines sent to %s's batch API (%s)",
                Known(self._batch.id),
                len(indices),
                Known(model),
                Known(made.id),
            )

    async def poll(self, ending: bool) -> None:
        """Read each provider batch's status; settle those that ended. `ending`: the batch was
        cancelled or ran out of time: the provider batches are cancelled (what they answered
        meanwhile is still delivered and charged), and no line goes back to be sent again."""
        if ending:  # (taken at once: a line parked meanwhile waits for the next poll)
            waiting, self._waiting, self._since = self._waiting, {}, {}
            for index in (i for lines in waiting.values() for i in lines):
                await self._give_back(index, "the batch ended before it was sent", again=False)
        for provider_id, job in list(self._jobs.items()):
            api = self._api(job.model)
            if api is None:  # the model left the config: its provider's answers cannot be read here
                for index in job.indices:
                    await self._give_back(index, f"{job.model} is no longer in this gateway's config", again=not ending)
                del self._jobs[provider_id]
                await self._store(self._documents.delete, jobs_kind(self._batch.id), provider_id)
                continue
            try:
                if ending and not job.cancel_asked:
                    job.cancel_asked = True
                    status = await api.cancel(provider_id)
                else:
                    status = await api.retrieve(provider_id)
                if not status.status.ended:
                    continue
                results = {r.custom_id: r for r in await api.results(status)}
            except EdgewayError as exc:  # asked again at the next poll
                log.warning(
                    "batch %s: reading %s's batch %s failed: %s",
                    Known(self._batch.id),
                    Known(job.model),
                    Known(provider_id),
                    exc.message,
                )
                continue
            for index in job.indices:
                found = results.get(line_key(index))
                await self._settle(
                    index, job.model, found, again=not ending, why=f"provider batch {status.status.value}"
                )
            del self._jobs[provider_id]
            await self._store(self._documents.delete, jobs_kind(self._batch.id), provider_id)
            log.info(
                "batch %s: %s's batch %s %s",
                Known(self._batch.id),
                Known(job.model),
                Known(provider_id),
                Known(status.status.value),
            )

    # --- one line ----------------------------------------------------------------------------
    def _api(self, model: str) -> ProviderBatchAPI | None:
        found = self._gateway.router.models.get(model)
        return found.batch_api if isinstance(found, CloudModel) else None

    def _account(self, state: dict[str, Any]) -> RequestAccount:
        row = state["row"]
        account = self._gateway.router.account(row["request_id"], row["app"], kind=RowKind.BATCH)
        account.resume(state)
        return account

    async def _settle(self, index: int, model: str, found: ProviderResult | None, *, again: bool, why: str) -> None:
        document = await self._store(self._documents.get, self._kind, line_key(index))
        if document is None or document.data.get("state") != PARKED:
            return  # settled before a restart
        data = document.data
        if found is None or found.status_code is None or found.status_code >= 500 or found.status_code in (408, 429):
            reason = why if found is None else (found.error or f"the provider answered {found.status_code}")
            await self._give_back(index, f"{model}: {reason}", again=again)
            return
        line = self._lines[index]
        if found.status_code != 200:  # the request itself refused, as a live call would be
            error = status_error(model, found.status_code, _reason(found))
            row = self._account(data["account"]).abort(error.status, error.code)
            self._observe(row)
            await self._keep(index, output_line(line, error.status, row.request_id, error.body()))
            return
        api = self._api(model)
        try:
            if api is None:
                raise UpstreamError(f"{model} has no batch API in this gateway's config")
            body, usage = chat_completion(await api.answer(found.body, data["line"]), model)
        except UpstreamError as exc:  # an answer that is no chat completion: as a broken live answer
            await self._give_back(index, exc.message, again=again)
            return
        account = self._account(data["account"])
        answer = WHOLE.restore(Answer(body, usage), Restoration(data["originals"]))
        account.settle_answer(answer)
        row = account.finish(answer.usage)
        self._observe(row, anomalous=account.anomaly is not None)
        await self._keep(index, output_line(line, 200, row.request_id, answer.body))

    async def _keep(self, index: int, result: dict[str, Any]) -> None:
        done = Document(line_key(index), self._batch.app, time.time(), {"state": "done", "result": result})
        await self._store(self._documents.put, self._kind, done)
        await self._store(self._documents.scrub)  # the parked version, its originals with it, goes
        self._settled(index, result)

    async def _give_back(self, index: int, why: str, *, again: bool = True) -> None:
        """The provider did not answer the line: its reservation is given back and, while the batch
        runs, it is sent again as an ordinary request (which writes its own row)."""
        document = await self._store(self._documents.get, self._kind, line_key(index))
        if document is not None and document.data.get("state") == PARKED:
            self._account(document.data["account"]).release()
        await self._store(self._documents.delete, self._kind, line_key(index))
        await self._store(self._documents.scrub)
        log.warning("batch %s line %d: not answered through the batch API (%s)", Known(self._batch.id), index, why)
        if again:
            self._returned(index)

    def _observe(self, row: Any, anomalous: bool = False) -> None:
        self._gateway.metrics.observe(row, anomalous)


def _reason(found: ProviderResult) -> str:
    body = found.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message") or body["error"])
    return found.error or "(no message)"


def output_line(line: Line, status: int, request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """A line of the output (or error) file, as OpenAI writes it."""
    return {
        "id": f"batch_req_{uuid.uuid4().hex[:24]}",
        "custom_id": line.custom_id,
        "response": {"status_code": status, "request_id": request_id, "body": body},
        "error": None,
    }
