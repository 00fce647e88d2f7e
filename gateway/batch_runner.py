"""Runs batches: every line through the gateway's own pipeline, on the edge's idle time.

A line is handed to the request flow in process (`gateway.pipeline.answer_whole`), as a request to
the batch's endpoint from the batch's app: so it is routed by the app's policy, privacy-checked,
priced and ledgered exactly as a live request is (its row's kind is `batch`). It carries
`x-edgeway-priority: background`, so on the edge it runs only in steps no interactive request needs
(edge_runtime/batch.py). What the policy routes to a cloud model whose provider has a batch API
waits there, at its batch price (gateway/provider_lines.py); what goes to another cloud model goes
as an ordinary request, paced by the app's limits: a line refused for a limit (429) or for capacity
(503) waits as told and is sent again, since no model ran it.

One replica runs a batch at a time, under a lease in the store (renewed while it runs; a replica
that stops holding it, or a restarted gateway, takes the batch over). A line's result is kept as
it ends, and the line is marked started before it is sent, so a taken-over batch never runs a line
twice: one that was in flight when its runner died is reported as interrupted instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from starlette.datastructures import State

from classifiers.privacy.known import Known
from gateway import files
from gateway.batches import BATCHES, DIALECTS, ENDED, Batch, Line, cancel_asked, parse_lines
from gateway.chat import CHAT
from gateway.pipeline import Exchange, Whole, answer_whole
from gateway.provider_lines import PARKED, LineDeferral, ProviderLines, line_key, output_line
from gateway.running import Gateway
from router.account import RequestAccount
from router.cloud.batch_api import BatchStatus
from router.deferral import Deferral
from router.documents import Document, Documents
from router.errors import Unauthorized
from router.ledger import RowKind
from router.request import Priority

log = logging.getLogger("edgeway.batches")
T = TypeVar("T")

POLL_S = 2.0  # how often the store is looked at for batches to run (a new one here wakes it at once)
SAVE_EVERY_S = 1.0  # how often a running batch's counts are written
CANCEL_CHECK_S = 1.0
REFUSED_AGAIN = (429, 503)  # refused before any model ran: wait as told, then send again
LONGEST_WAIT_S = 30.0
LINE_HEADERS = {"x-edgeway-priority": Priority.BACKGROUND.value}


def lines_kind(batch_id: str) -> str:
    return f"batch_line:{batch_id}"


async def _off_loop(call: Callable[..., T], *args: Any) -> T:
    """A call to the store, off the event loop."""
    return await asyncio.to_thread(call, *args)


class BatchRunner:
    """The batches of the gateway's store, run one at a time by this process while it serves."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._documents: Documents = gateway.documents
        self._owner = uuid.uuid4().hex  # this process, as the holder of batch leases
        self._wake = asyncio.Event()
        gateway.batch_bell.listen(self._wake.set)
        self._stopped = asyncio.Event()
        self._stopping = False

    # --- the loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                for batch in await _off_loop(self._pending):
                    if self._stopping:
                        break
                    if await _off_loop(self._claim, batch.id):
                        await self._run(batch)
            except Exception:  # a store that fails now may answer later; the batch stays where it was
                log.exception("running batches failed; trying again in %.0f s", POLL_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_S)

    async def stop(self, task: asyncio.Task[None], grace_s: float) -> None:
        """Send no more lines; let those in flight end (within `grace_s`) and keep their results."""
        self._stopping = True
        self._wake.set()
        self._stopped.set()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(task, grace_s)

    def stopping(self) -> bool:
        return self._stopping

    def _pending(self) -> list[Batch]:
        return [b for b in map(Batch.of, self._documents.find(BATCHES)) if b.status not in ENDED]

    def _claim(self, batch_id: str) -> bool:
        return self._documents.claim(f"batch:{batch_id}", self._owner, self._gateway.config.batches.lease_s)

    async def claim(self, batch_id: str) -> bool:
        """Hold (or renew) the batch's lease; False when another replica holds it now."""
        return await _off_loop(self._claim, batch_id)

    # --- one batch --------------------------------------------------------------------------
    async def _run(self, batch: Batch) -> None:
        run = _Run(self._gateway, batch, self)
        await run.start()
        keeper = asyncio.create_task(run.keep_lease())
        config = self._gateway.config.batches
        try:
            # Lines are sent while the lines parked for providers' batch APIs go to them (in a batch
            # per model once enough wait, or once every line is sent) and those are polled.
            sending = asyncio.create_task(run.send_lines())
            while not (self._stopping or run.lost_lease):
                ending = run.cancelled() or run.expired()
                if not ending:
                    await run.provider.send(everything=sending.done())
                await run.provider.poll(ending)
                await run.save()
                if sending.done():
                    if run.todo and not ending:  # lines a provider did not answer go as ordinary requests
                        sending = asyncio.create_task(run.send_lines())
                        continue
                    if not run.provider.busy:
                        break
                stopped = asyncio.ensure_future(self._stopped.wait())
                await asyncio.wait(
                    (sending, stopped), timeout=config.provider_poll_s, return_when=asyncio.FIRST_COMPLETED
                )
                stopped.cancel()
            await sending  # (stopping: the lines in flight end and keep their results)
        finally:
            keeper.cancel()
        if self._stopping and not run.done():
            await run.save()  # resumed after the restart, by whichever replica takes it: at once, not
            # when the lease runs out
            await _off_loop(self._documents.claim, f"batch:{batch.id}", self._owner, 0.001)
            return
        await run.finish()

    async def send(self, batch: Batch, line: Line, provider: bool) -> Whole | None:
        """The line's answer (a 202 naming the model if it waits in its provider's batch:
        `provider`, it may), or None when the gateway stops before any model ran it."""
        dialect = DIALECTS[batch.endpoint]
        app = self._gateway.keys.named(batch.app)
        if app is None:  # the app left the config since the batch was made
            refused = Unauthorized(f"The batch's app {batch.app!r} is no longer configured on this gateway.")
            return Whole(refused.status, dialect.error_body(refused), {})
        body, size = line.body, len(orjson.dumps(line.body))
        while True:
            exchange = Exchange(
                self._gateway,
                uuid.uuid4().hex,
                "POST",
                batch.endpoint,
                LINE_HEADERS,
                State(),
                kind=RowKind.BATCH,
                deferral=self._deferral(batch, line, provider),
            )
            whole = await answer_whole(exchange, app.now(), body, size, dialect)
            if whole.status not in REFUSED_AGAIN:
                return whole
            if self._stopping or time.time() >= batch.expires_at:
                return None
            await asyncio.sleep(_wait_s(whole))

    def _deferral(self, batch: Batch, line: Line, provider: bool) -> Callable[[RequestAccount], Deferral | None]:
        """What parks the line in its provider's batch, where it may wait in one."""
        config = self._gateway.config.batches
        if not (config.provider_batches and provider and DIALECTS[batch.endpoint] is CHAT):
            return lambda account: None
        return lambda account: LineDeferral(
            self._documents,
            lines_kind(batch.id),
            batch.app,
            line.index,
            batch.expires_at,
            config.provider_min_window_s,
            account,
        )


class _Run:
    """One batch being run by this process: its lines to go, their results, its counts."""

    def __init__(self, gateway: Gateway, batch: Batch, runner: BatchRunner) -> None:
        self._gateway, self._runner = gateway, runner
        self.batch = batch
        self.documents = gateway.documents
        self.kind = lines_kind(batch.id)
        self.todo: deque[Line] = deque()
        self.lines: list[Line] = []
        self.results: dict[int, dict[str, Any]] = {}
        self._saved = 0.0
        self._cancel_checked = 0.0
        self._cancelled = False
        self.lost_lease = False
        self.direct: set[int] = set()  # lines a provider's batch did not answer: sent as ordinary requests
        self.provider: ProviderLines  # its parked lines, once start() has read the batch's file

    async def start(self) -> None:
        store = _off_loop
        batch, documents = self.batch, self.documents
        text = await store(lambda: files.content(documents, files.find(documents, batch.app, batch.input_file_id)))
        # checked when the batch was made: the same file parses the same way now
        self.lines = parse_lines(text, self.batch.endpoint, self._gateway.config.batches.max_lines)
        self.provider = ProviderLines(self._gateway, batch, self.lines, self.kind, self._answered, self._returned)
        kept = {int(d.key): d.data for d in await store(self.documents.find, self.kind)}
        await self.provider.load(kept)
        parked = {index for index, data in kept.items() if data.get("state") == PARKED}
        for index, data in kept.items():
            if data.get("state") == "done":
                self.results[index] = data["result"]
            elif index in parked:  # answered through its provider's batch, never sent again
                continue
            else:  # sent by a runner that stopped before it ended: never sent twice
                line = self.lines[index]
                self.results[index] = _failed(line, "interrupted", _INTERRUPTED)
                await store(self.documents.put, self.kind, self._done(line, self.results[index]))
        self.todo = deque(line for line in self.lines if line.index not in self.results and line.index not in parked)
        self._count()
        if self.batch.status == BatchStatus.VALIDATING:
            self.batch.status = BatchStatus.IN_PROGRESS
            self.batch.times["in_progress"] = int(time.time())
        await self.save()

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._cancelled and now - self._cancel_checked >= CANCEL_CHECK_S:
            self._cancel_checked = now
            self._cancelled = cancel_asked(self.documents, self.batch.id)
        return self._cancelled

    def expired(self) -> bool:
        return time.time() >= self.batch.expires_at

    def done(self) -> bool:
        return len(self.results) == len(self.lines)

    async def send_lines(self) -> None:
        """Send the lines to go, `concurrency` at a time, until none is left or the batch stops."""
        if self.cancelled() or self.expired():
            return
        workers = [asyncio.create_task(self.work()) for _ in range(self._gateway.config.batches.concurrency)]
        await asyncio.gather(*workers)

    async def work(self) -> None:
        store = _off_loop
        while self.todo and not (self._runner.stopping() or self.lost_lease or self.cancelled() or self.expired()):
            line = self.todo.popleft()
            await store(self.documents.put, self.kind, Document(_key(line), self.batch.app, time.time(), {}))
            whole = await self._runner.send(self.batch, line, line.index not in self.direct)
            if whole is None:  # not run: it goes again after the restart
                await store(self.documents.delete, self.kind, _key(line))
                continue
            if whole.parked is not None:
                self.provider.parked(line.index, whole.parked)
                continue
            result = _result(line, whole)
            await store(self.documents.put, self.kind, self._done(line, result))
            self.results[line.index] = result
            self._count()
            if time.monotonic() - self._saved >= SAVE_EVERY_S:
                await self.save()

    async def keep_lease(self) -> None:
        every = self._gateway.config.batches.lease_s / 3
        while True:
            await asyncio.sleep(every)
            if not await self._runner.claim(self.batch.id):
                log.warning(
                    "batch %s: another replica holds its lease now; this one stops running it", Known(self.batch.id)
                )
                self.lost_lease = True
                return

    async def save(self) -> None:
        self._saved = time.monotonic()
        await _off_loop(self.documents.put, BATCHES, self.batch.document())

    async def finish(self) -> None:
        """Write the output and error files and end the batch: completed, cancelled or expired."""
        if self.lost_lease:
            return
        ended = BatchStatus.COMPLETED
        if not self.done():
            ended = BatchStatus.CANCELLED if self.cancelled() else BatchStatus.EXPIRED
            reason = (
                ("batch_cancelled", "The batch was cancelled before this request ran.")
                if ended == BatchStatus.CANCELLED
                else ("batch_expired", "The batch's completion_window ended before this request ran.")
            )
            for line in self.lines:
                if line.index not in self.results:
                    self.results[line.index] = _failed(line, *reason)
        if ended == BatchStatus.CANCELLED:
            self.batch.times["cancelling"] = int(time.time())
        self.batch.status = BatchStatus.FINALIZING
        self.batch.times["finalizing"] = int(time.time())
        await self.save()
        ordered = [self.results[line.index] for line in self.lines]
        answered = [r for r in ordered if _answered(r)]
        failed = [r for r in ordered if not _answered(r)]
        for results, attribute, suffix in ((answered, "output_file_id", "output"), (failed, "error_file_id", "error")):
            if results:
                text = b"".join(orjson.dumps(r) + b"\n" for r in results)
                stored = await _off_loop(
                    files.save, self.documents, self.batch.app, f"{self.batch.id}_{suffix}.jsonl",
                    files.Purpose.BATCH_OUTPUT, text,
                )  # fmt: skip
                setattr(self.batch, attribute, stored.id)
        self._count()
        self.batch.status = ended
        self.batch.times[ended.value] = int(time.time())
        await self.save()
        log.info(
            "batch %s %s: %d answered, %d failed", Known(self.batch.id), Known(ended.value), len(answered), len(failed)
        )

    def _answered(self, index: int, result: dict[str, Any]) -> None:
        """A parked line's result, from its provider's batch."""
        self.results[index] = result
        self._count()

    def _returned(self, index: int) -> None:
        """A parked line its provider's batch did not answer: it goes again, as an ordinary request."""
        self.direct.add(index)
        self.todo.append(self.lines[index])

    def _count(self) -> None:
        ok = sum(1 for r in self.results.values() if _answered(r))
        self.batch.completed, self.batch.failed = ok, len(self.results) - ok

    def _done(self, line: Line, result: dict[str, Any]) -> Document:
        return Document(_key(line), self.batch.app, time.time(), {"state": "done", "result": result})


_INTERRUPTED = "The gateway stopped while this request ran; it is not sent again, so that no request runs twice."


def _answered(result: dict[str, Any]) -> bool:
    return result["error"] is None and result["response"]["status_code"] == 200


def _key(line: Line) -> str:
    return line_key(line.index)


def _result(line: Line, whole: Whole) -> dict[str, Any]:
    assert whole.body is not None  # (a parked line has no result yet)
    return output_line(line, whole.status, whole.headers.get("x-edgeway-request-id", ""), whole.body)


def _failed(line: Line, code: str, message: str) -> dict[str, Any]:
    """A line that got no answer: `error` set, as OpenAI reports expired and cancelled requests."""
    return {
        "id": f"batch_req_{uuid.uuid4().hex[:24]}",
        "custom_id": line.custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def _wait_s(whole: Whole) -> float:
    try:
        return min(LONGEST_WAIT_S, max(0.1, float(whole.headers.get("retry-after", "1"))))
    except ValueError:
        return 1.0
