"""One local model served by llama.cpp on a thread of its own.

`llama_cpp.Llama` must not be shared between threads, so one worker thread owns it and runs
generations from a queue; the event loop only formats, counts and waits. Each generation
streams its text through an asyncio queue, and a cancelled one stops at the next token.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from collections.abc import Sequence as Texts
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edge_runtime.batch import BatchScheduler, Sequence, drain
from edge_runtime.config import EdgeModelConfig, ModelRole
from edge_runtime.drafting import DraftModel
from edge_runtime.embedder import Embedder
from edge_runtime.errors import EdgeError, PromptTooLong
from edge_runtime.generation import DONE, READ, Generation, Outbox
from edge_runtime.gguf import resolve_gguf
from edge_runtime.grammar import GrammarError
from edge_runtime.plan import N_BATCH
from edge_runtime.reading import Gate
from edge_runtime.sampling import FinishReason, Sampling
from edge_runtime.speculation import GuessCost, Speculation, SpeculativeMode
from edge_runtime.threads import thread_count

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

DEFAULT_MAX_TOKENS = 512
# What a reader without a chat template (a base model) reads of a conversation: its messages' text,
# one after another, as such a model was trained on text
PLAIN_TEXT = (
    "{{ bos_token }}{% for message in messages %}{{ message['content'] }}{% if not loop.last %}\n\n{% endif %}"
    "{% endfor %}"
)


@dataclass
class EdgeState:
    """What the router may look at before sending work here."""

    model: str
    loaded: bool
    queued: int
    running: int
    decode_tokens_per_s: float
    outstanding_tokens: int
    completed: int
    cancelled: int
    drafted: int = 0  # tokens guessed by speculative decoding
    drafts_kept: int = 0  # of which the model agreed
    cuts: int = 0  # steps reading a long prompt cut short for a request quick to read
    cut_wait_ms: float | None = None  # the recent cuts' median wait, from the asking to the cut


class _TokenTable(dict[int, tuple[bool, bytes]]):
    """Each token's (end of generation?, bytes), asked of llama.cpp once per token id.

    Every call into llama.cpp lets go of the GIL, and between two decode steps the event loop is
    often waiting for it: two such calls a token cost more in waiting than in work."""

    def __init__(self, lookup: Callable[[int], tuple[bool, bytes]]) -> None:
        super().__init__()
        self._lookup = lookup

    def __missing__(self, token: int) -> tuple[bool, bytes]:
        value = self[token] = self._lookup(token)
        return value


class EdgeEngine:
    tier = "edge"

    def __init__(self, config: EdgeModelConfig) -> None:
        self.config = config
        self.name = config.name
        self.n_ctx = config.n_ctx
        self._llama: Llama | None = None
        self._formatter: Jinja2ChatFormatter | None = None
        self._jobs: queue.Queue[Generation | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._running = 0
        self._outstanding = 0  # prompt + max_tokens of the work queued or running
        self._background = 0  # of which background work (batch lines), which yields to the rest
        self._count_lock = threading.Lock()
        self._completed = 0
        self._cancelled = 0
        self._tokens_per_s = 0.0
        self._waiting = 0
        self._scheduler: BatchScheduler[Generation] | None = None
        self._served: Counter[str] = Counter()  # admissions per app, for fairness
        self._embedder = Embedder(config)
        self._outbox = Outbox()

    # --- lifecycle ------------------------------------------------------------------------
    def load(self) -> None:
        """Load the weights (blocking, about a second for the bundled model) and start the worker."""
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        path = resolve_gguf(self.config.gguf)
        # This Llama serves the tokenizer and metadata; generation runs in the scheduler's own
        # batched context, so its context is kept tiny.
        self._llama = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=64,
            n_gpu_layers=self.config.n_gpu_layers,
            n_threads=self.config.n_threads,
            verbose=False,
        )
        llama = self._llama
        template = llama.metadata.get("tokenizer.chat_template")
        if not template and self.config.role is not ModelRole.READER:
            raise EdgeError(f"{path.name} has no chat template in its metadata (a base model can be a `role: reader`)")
        vocab = llama._model.vocab
        self._pieces = _TokenTable(
            lambda token: (bool(llama_cpp.llama_vocab_is_eog(vocab, token)), llama.detokenize([token]))
        )
        self._formatter = Jinja2ChatFormatter(
            template=template or PLAIN_TEXT,
            eos_token=llama.detokenize([llama.token_eos()], special=True).decode("utf-8", "replace"),
            bos_token=llama.detokenize([llama.token_bos()], special=True).decode("utf-8", "replace"),
        )
        self._scheduler = BatchScheduler(
            llama,
            self.config.n_ctx,
            self.config.parallel,
            N_BATCH,
            self.config.n_threads,
            before_decode=self._outbox.send,
            speculation=self._speculation(),
            draft=self._draft(llama),
        )
        self._thread = threading.Thread(target=self._work, name=f"edge-{self.name}", daemon=True)
        self._thread.start()

    def _speculation(self) -> Speculation | None:
        spec = self.config.speculative
        if spec is None:
            return None
        drafted = spec.mode is SpeculativeMode.DRAFT
        return Speculation(spec.most, guess_cost=GuessCost() if drafted else None)

    def _draft(self, llama: Llama) -> DraftModel | None:
        import llama_cpp

        spec = self.config.speculative
        if spec is None or spec.draft_gguf is None:
            return None
        return DraftModel(
            llama_cpp,
            resolve_gguf(spec.draft_gguf),
            llama._model.vocab,
            self.config.n_ctx,
            self.config.parallel,
            N_BATCH,
            thread_count(self.config.n_threads),
            self.config.n_gpu_layers,
        )

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(timeout=10)
            self._thread = None
        if self._scheduler is not None:
            self._scheduler.close()
            self._scheduler = None
        if self._llama is not None:
            self._llama.close()
            self._llama = None
        self._embedder.close()

    @property
    def loaded(self) -> bool:
        return self._thread is not None

    # --- the event loop's side ------------------------------------------------------------
    def tokenize_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt tokens the model reads for these messages, chat template applied."""
        if self._formatter is None or self._llama is None:
            raise EdgeError(f"edge model {self.name!r} is not loaded")
        formatted = self._formatter(messages=messages)  # type: ignore[arg-type]  # plain role/content dicts
        return self._tokenize(formatted.prompt.encode("utf-8", "replace"), add_bos=not formatted.added_special)

    def embed(self, texts: Texts[str]) -> tuple[list[list[float]], int]:
        """Mean-pooled, normalized embeddings of `texts`, and the tokens read (blocking)."""
        return self._embedder.embed(texts)

    @property
    def gguf_path(self) -> Path:
        return resolve_gguf(self.config.gguf)

    @property
    def parameters(self) -> int:
        """The model's parameter count, from its weights (0 before it is loaded)."""
        import llama_cpp

        return int(llama_cpp.llama_model_n_params(self._llama._model.model)) if self._llama is not None else 0

    @property
    def n_vocab(self) -> int:
        """Tokens in the model's vocabulary (0 before it is loaded)."""
        return int(self._llama.n_vocab()) if self._llama is not None else 0

    def token_bytes(self, token: int) -> bytes:
        """What a token writes (empty for the end of generation)."""
        return self._pieces[token][1]

    def tokenize_text(self, text: str) -> list[int]:
        """The tokens of a raw prompt (a legacy text completion): no chat template."""
        if self._llama is None:
            raise EdgeError(f"edge model {self.name!r} is not loaded")
        return self._tokenize(text.encode("utf-8", "replace"), add_bos=True)

    def _tokenize(self, text: bytes, add_bos: bool) -> list[int]:
        """llama.cpp's tokenizer into a buffer the size of the context: a prompt that cannot fit
        is known from the count llama.cpp returns, without building a list of all its tokens
        (a megabyte prompt's list took 100 ms of the GIL)."""
        import llama_cpp

        assert self._llama is not None
        room = self.n_ctx + 1
        tokens = (llama_cpp.llama_token * room)()
        count = llama_cpp.llama_tokenize(self._llama._model.vocab, text, len(text), tokens, room, add_bos, True)
        if count < 0:
            raise PromptTooLong(-count, self.n_ctx, self.name)
        return tokens[:count]

    def submit(self, messages: list[dict[str, str]], sampling: Sampling, owner: str = "") -> Generation:
        """Queue a generation; raises PromptTooLong when it cannot fit the context."""
        return self.submit_tokens(self.tokenize_chat(messages), sampling, owner)

    def submit_tokens(
        self,
        prompt: list[int],
        sampling: Sampling,
        owner: str = "",
        sharing: Generation | None = None,
        gate: Gate | None = None,
    ) -> Generation:
        """Queue a generation of a prompt tokenized already (by `tokenize_chat`, perhaps on another
        thread); raises PromptTooLong when it cannot fit the context. With `sharing` (another
        generation of the same prompt: one of a request's `n`), it starts once that one has read
        the prompt, and shares its cells instead of reading it again. With `gate`, it is read
        first: once its prompt is read its probe scores it, and the gate decides whether it goes on
        to answer (`Generation.reading`)."""
        if not self.loaded:
            raise EdgeError(f"edge model {self.name!r} is not loaded")
        if sampling.grammar is not None:
            self._check_grammar(sampling.grammar)
        room = self.n_ctx - len(prompt)
        max_tokens = sampling.max_tokens or min(DEFAULT_MAX_TOKENS, room)
        if room < 1 or max_tokens > room:
            raise PromptTooLong(len(prompt) + max(max_tokens, 1), self.n_ctx, self.name)
        generation = Generation(asyncio.get_running_loop(), prompt, sampling, max_tokens, self._outbox, owner, gate)
        generation.waits_for = sharing
        with self._count_lock:
            self._outstanding += len(prompt) + max_tokens
            if sampling.background:
                self._background += len(prompt) + max_tokens
        if not sampling.background and self._scheduler is not None and self._scheduler.quick_to_read(prompt):
            # not to wait for a long prompt's chunk in flight; asked before the job is queued, so
            # that the worker, which clears the ask when it takes the queue, never takes the job
            # and leaves the ask standing to cut the job's own step
            self._scheduler.interrupt.request()
        self._jobs.put(generation)
        return generation

    @property
    def outstanding_tokens(self) -> int:
        """Prompt + max_tokens of every request admitted and not yet done."""
        return self._outstanding

    def _check_grammar(self, grammar: str) -> None:
        """Compile the grammar once here, so that a bad one is the caller's error, not the worker's."""
        import llama_cpp

        assert self._llama is not None
        sampler = llama_cpp.llama_sampler_init_grammar(self._llama._model.vocab, grammar.encode(), b"root")
        if not sampler:
            raise GrammarError("llama.cpp could not parse the grammar")
        llama_cpp.llama_sampler_free(sampler)

    def wait_ms(self) -> float:
        """A rough wait before new interactive work starts: the outstanding interactive tokens at
        the measured speed (background work yields to it)."""
        ahead = self._outstanding - self._background
        if ahead <= 0:
            return 0.0
        rate = self._tokens_per_s or 50.0
        return ahead / rate * 1000

    def state(self) -> EdgeState:
        speculation = self._scheduler.speculation if self._scheduler is not None else None
        return EdgeState(
            model=self.name,
            loaded=self.loaded,
            queued=self._jobs.qsize() + self._waiting,
            running=self._running,
            decode_tokens_per_s=round(self._tokens_per_s, 1),
            outstanding_tokens=self._outstanding,
            completed=self._completed,
            cancelled=self._cancelled,
            drafted=speculation.drafted if speculation else 0,
            drafts_kept=speculation.kept if speculation else 0,
            cuts=self._scheduler.interrupt.cuts if self._scheduler is not None else 0,
            cut_wait_ms=self._scheduler.interrupt.median_wait_ms() if self._scheduler is not None else None,
        )

    # --- the worker thread ----------------------------------------------------------------
    def _work(self) -> None:
        scheduler = self._scheduler
        assert scheduler is not None  # load() made it before starting this thread
        waiting: list[Generation] = []
        while True:
            if not scheduler.active and not waiting:
                self._outbox.send()
                self._running = self._waiting = 0
                job = self._jobs.get()  # idle: sleep until there is work
                if job is None:
                    break
                waiting.append(job)
            scheduler.interrupt.clear()  # every request queued so far is drained below
            if not drain(self._jobs, waiting):
                break
            self._waiting = len(waiting)
            for job in [j for j in waiting if j.cancelled]:
                waiting.remove(job)
                self._finish(job, FinishReason.CANCELLED)
            # Any request that fits starts now (one too big for the free cells does not hold the
            # rest); the apps served least lately go first, so one busy app cannot crowd out others.
            # Background work comes last, and starts only when no interactive request waits.
            for job in sorted(waiting, key=lambda j: (j.sampling.background, self._served[j.owner])):
                if _may_start(job, waiting, scheduler):
                    waiting.remove(job)
                    scheduler.admit(job)
                    job.started_at = time.monotonic()
                    self._served[job.owner] += 1
            if sum(self._served.values()) > 10_000:  # let old service fade
                self._served = Counter({app: n // 2 for app, n in self._served.items()})
            for seq in [q for q in scheduler.active if q.job.cancelled]:
                scheduler.release(seq)
                self._finish(seq.job, FinishReason.CANCELLED)
            self._running = len(scheduler.active)
            started = time.monotonic()
            try:
                sampled = scheduler.step()
            except Exception as exc:  # a failed decode ends the requests in it, not the worker
                for seq in list(scheduler.active):
                    seq.job._emit(EdgeError(f"edge model {self.name!r} failed: {exc}"))
                    scheduler.release(seq, keep=False)
                    self._finish(seq.job, FinishReason.ERROR, emit_done=False)
                continue
            decoding = sum(1 for seq, _ in sampled if seq.job.completion_tokens)
            for seq in scheduler.routed_away:  # read, scored, and sent elsewhere: the prompt stays cached
                self._end(seq, FinishReason.ROUTED)
            for seq, token in sampled:
                if seq.job.finish_reason is not None:  # ended by an earlier token of this step's draft
                    continue
                if seq.job.gate is not None and seq.job.first_token_at is None:
                    seq.job._emit(READ)  # kept: the edge answers, from this very prefill
                self._advance(seq, token)
            self._running = len(scheduler.active)
            if decoding:
                rate = decoding / max(time.monotonic() - started, 1e-6)
                self._tokens_per_s = rate if not self._tokens_per_s else 0.9 * self._tokens_per_s + 0.1 * rate
        for seq in list(scheduler.active):
            scheduler.release(seq)
            self._finish(seq.job, FinishReason.CANCELLED)
        self._outbox.send()

    def _advance(self, seq: Sequence[Generation], token: int) -> None:
        job = seq.job
        eog, text = self._pieces[token]
        if eog:
            if job.sampling.logprobs is not None and job.logprobs:
                job.logprobs.pop()  # the end of the answer is no token of it
            return self._end(seq, FinishReason.STOP)
        if job.first_token_at is None:
            job.first_token_at = time.monotonic()
        job.completion_tokens += 1
        piece = seq.text.feed(text)
        if piece:
            job._emit(piece)
        if seq.text.stopped:
            job.stop_sequence = seq.text.stopped_by
            self._end(seq, FinishReason.STOP)
        elif job.completion_tokens >= job.max_tokens:
            self._end(seq, FinishReason.LENGTH)

    def _end(self, seq: Sequence[Generation], reason: FinishReason) -> None:
        tail = seq.text.flush()
        if tail:
            seq.job._emit(tail)
        assert self._scheduler is not None  # only the worker ends sequences, while it runs
        self._scheduler.release(seq)
        self._finish(seq.job, reason)

    def _finish(self, job: Generation, reason: FinishReason, emit_done: bool = True) -> None:
        job.finish_reason, job.ended_at = reason, time.monotonic()
        if job.gate is not None:
            job._emit(READ)  # whoever waits for the reading hears it ended (a second READ is a no-op)
        job.prompt_read = True  # a sibling waiting on it starts now, reading what it must
        with self._count_lock:
            self._outstanding -= job.prompt_tokens + job.max_tokens
            if job.sampling.background:
                self._background -= job.prompt_tokens + job.max_tokens
        if reason is FinishReason.CANCELLED:
            self._cancelled += 1
        else:
            self._completed += 1
        if emit_done:
            job._emit(DONE)


def _may_start(job: Generation, waiting: list[Generation], scheduler: BatchScheduler[Generation]) -> bool:
    """An interactive request starts when it fits; background work when it fits beside the room
    kept for interactive requests and none of them is waiting."""
    if not job.sampling.background:
        return scheduler.fits(job)
    return scheduler.fits_beside(job) and all(j.sampling.background for j in waiting)
