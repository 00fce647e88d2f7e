"""Continuous batching on llama.cpp's low-level API: many sequences, one `llama_decode` per step.

Each step the scheduler builds one batch: the next token of every sequence that is generating,
and the prompts still to be read, as `edge_runtime.pacing` decides: short ones whole and first,
long ones in chunks sized in time. A step reading a long prompt is cut short when a short request
arrives (`edge_runtime.interrupt`), so that the short request waits for its own step only. A new
request joins at the next step; a finished or cancelled one leaves and frees its KV cells. Each
sequence samples with its own chain (temperature, top_p, seed) and streams its own tokens.
Admission counts tokens, not requests: a request starts when its prompt plus max_tokens fit in the
unified KV cache.

Background work (`Sampling.background`: batch lines) keeps its cells but sits out every step in
which an interactive request is running, so an interactive request waits for background work at
most the one step in flight when it arrives; and it starts only while half the cells and a slot
stay free for interactive requests.
"""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from edge_runtime.decoding import common_start, logits_at, put
from edge_runtime.interrupt import CUT, StepInterrupt
from edge_runtime.pacing import SHORT_PROMPT, Pacer
from edge_runtime.reading import Gate
from edge_runtime.sampler import Sampler
from edge_runtime.sampling import Sampling, TokenLogprob
from edge_runtime.speculation import PromptLookup, Speculation
from edge_runtime.step_cost import StepCost
from edge_runtime.textstream import TextStream
from edge_runtime.threads import thread_count

if TYPE_CHECKING:
    from llama_cpp import Llama

    from edge_runtime.drafting import DraftModel


class Job(Protocol):
    """What the scheduler reads and writes of a request (edge_runtime.generation.Generation)."""

    prompt: list[int]
    prompt_tokens: int
    max_tokens: int
    completion_tokens: int
    temperature: float
    top_p: float
    seed: int
    logprob_sum: float
    logprobs: list[TokenLogprob]  # when sampling.logprobs is set: each sampled token's, in order
    prompt_read: bool  # its prompt is in the cache (or it ended without): set by the scheduler
    gate: Gate | None  # read first: scored once its prompt is read, and answered only if the gate keeps it

    @property
    def sampling(self) -> Sampling: ...

    @property
    def cancelled(self) -> bool: ...

    @property
    def waits_for(self) -> Job | None:
        """A sibling (another of the same request's `n`) whose prompt cells this one will share:
        it starts once that one has read its prompt."""


J = TypeVar("J", bound=Job)


def _repeatable(job: Job) -> bool:
    """Whether the job asked that its draws repeat: sampled with a seed it named."""
    return job.temperature > 0 and job.sampling.seed is not None


@dataclass
class Sequence(Generic[J]):
    job: J  # the request this sequence serves
    seq_id: int
    prompt: list[int]
    sampler: Sampler | None  # None: greedy, an argmax here
    text: TextStream
    read: int = 0  # prompt tokens already decoded
    last: int = -1  # the token to feed next, once the prompt is read
    logit_index: int | None = None
    cells: int = 0  # KV cells reserved: prompt + max_tokens
    lookup: PromptLookup | None = None  # where it may draft from (`speculation`): greedy sequences only
    guesses: list[int] = field(default_factory=list)  # drafted this step, after `last`


class BatchScheduler(Generic[J]):
    def __init__(
        self,
        llama: Llama,
        n_ctx: int,
        parallel: int,
        n_batch: int,
        n_threads: int | None,
        before_decode: Callable[[], None] = lambda: None,
        speculation: Speculation | None = None,
        draft: DraftModel | None = None,
    ) -> None:
        import llama_cpp

        self.lib = llama_cpp
        self.llama = llama
        self.before_decode = before_decode
        self.n_ctx = n_ctx
        self.parallel = parallel
        self.n_batch = n_batch
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = parallel
        params.kv_unified = True  # one pool of cells for all sequences (else n_ctx / parallel each)
        params.n_threads = params.n_threads_batch = thread_count(n_threads)
        self.ctx = llama_cpp.llama_init_from_model(llama._model.model, params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create the batched context")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.n_vocab = llama.n_vocab()
        self.routed_away: list[Sequence[J]] = []
        self.free_ids = list(range(parallel))
        self.active: list[Sequence[J]] = []
        self.reserved = 0
        # The prompt a free slot last read stays in the cache until its cells are needed: the next
        # request that starts the same way (a system prompt, the turns before) skips that much.
        self.kept: dict[int, list[int]] = {}
        self.reused = 0
        # one fit of the step's cost, which both the pacer and the speculation read
        self.pacer = Pacer(n_batch, speculation.cost if speculation is not None else StepCost())
        self.interrupt = StepInterrupt(llama_cpp, self.ctx)
        self.speculation = speculation
        self.draft = draft  # where guesses come from with `mode: draft`; else from the prompt
        # a grammar applied to every candidate before each draw instead of checked after it
        # (`edge_runtime.sampler`): only `edgeway bench constrained` sets it, to time the two side by side
        self.grammar_first = False

    def close(self) -> None:
        for seq in self.active:
            if seq.sampler is not None:
                seq.sampler.free()
        self.lib.llama_batch_free(self.batch)
        self.lib.llama_free(self.ctx)
        if self.draft is not None:
            self.draft.close()

    # --- admission ------------------------------------------------------------------------
    def fits(self, job: Job) -> bool:
        sibling = job.waits_for
        if sibling is not None and not sibling.prompt_read:
            return False
        return bool(self.free_ids) and self.reserved + job.prompt_tokens + job.max_tokens <= self.n_ctx

    def fits_beside(self, job: Job) -> bool:
        """Background work fits only while a slot and half the cells stay free for interactive work."""
        cells = self.reserved + job.prompt_tokens + job.max_tokens
        return self.fits(job) and len(self.free_ids) > 1 and cells <= self.n_ctx // 2

    def admit(self, job: J) -> None:
        s = job.sampling
        sampler = Sampler.of(
            self.lib,
            self.llama._model.vocab,
            self.n_vocab,
            s,
            temperature=job.temperature,
            top_p=job.top_p,
            seed=job.seed,
            max_tokens=job.max_tokens,
            grammar_first=self.grammar_first,
        )
        if _repeatable(job) and self._alone(job):
            slot, common = self._fresh_slot(job)
        else:  # beside other requests, a seeded draw cannot repeat (edge_runtime docs): the cache serves it
            slot, common = self._slot_for(job.prompt)
        self.free_ids.remove(slot)
        seq = Sequence(
            job,
            slot,
            job.prompt,
            sampler,
            TextStream(list(s.stop)),
            cells=job.prompt_tokens + job.max_tokens,
            read=common,
        )
        if self.speculation is not None and sampler is None and s.logprobs is None and not s.confidence:
            # drafting keeps greedy output as it is, not a sampled one's
            seq.lookup = PromptLookup.of(job.prompt, self.speculation.prior(), indexed=self.draft is None)
        self.reserved += seq.cells
        self._make_room()
        self.active.append(seq)

    def _slot_for(self, prompt: list[int]) -> tuple[int, int]:
        """A free slot for this prompt, and how much of the prompt it holds already.

        The start it shares longest with what a free slot kept, or, longer still, with what a
        running sequence has read (a sibling of the same request), is not read again: those cells
        are shared. A prompt takes the slot whose kept prompt it shares most of, unless it takes more
        than a batch to read and shares only a short start with that prompt (the chat template, a
        line of system prompt): then it takes an empty slot, else the one kept longest ago, so that a
        document does not evict a chat's cached turns for the sake of a few tokens."""
        last = len(prompt) - 1  # the last prompt token is read again for its logits
        commons = {slot: common_start(self.kept.get(slot, ()), prompt) for slot in self.free_ids}
        best = max(self.free_ids, key=commons.__getitem__)
        source, shared = None, commons[best]
        for seq in self.active:
            common = common_start(seq.prompt[: seq.read], prompt)
            if common > shared:
                source, shared = seq, common
        if source is not None:
            self.kept.pop(best, None)
            shared = min(shared, last)
            self.lib.llama_memory_seq_rm(self.memory, best, -1, -1)
            self.lib.llama_memory_seq_cp(self.memory, source.seq_id, best, 0, shared)
            self.reused += shared
            return best, shared
        if shared <= SHORT_PROMPT and last - shared > self.n_batch and shared < len(self.kept.get(best, ())):
            # every kept slot is free, kept in the order released: the first is the one kept longest ago
            best = next((s for s in self.free_ids if s not in self.kept), next(iter(self.kept)))
        self.kept.pop(best, None)
        common = min(commons[best], last)
        self.lib.llama_memory_seq_rm(self.memory, best, common, -1)
        self.reused += common
        return best, common

    def _alone(self, job: Job) -> bool:
        """Whether nothing but the job's own request (its siblings) runs."""
        request = job.waits_for or job
        return all((seq.job.waits_for or seq.job) is request for seq in self.active)

    def _fresh_slot(self, job: Job) -> tuple[int, int]:
        """A slot for a seeded draw running alone, and how much of its prompt it holds: its
        sibling's cells if one read the prompt for it, else none.

        A seeded draw repeats only over the same logits, and the bundled model's logits move by up
        to 0.9 when its prompt is read in two chunks instead of one, or into cells that lie after
        another prompt's (llama.cpp rounds by where the cells lie and how the batch splits them):
        a draw near a boundary between two tokens turns on that. So the first of a seeded request
        reads its prompt whole into a cache holding nothing else, as it would on a fresh edge: the
        kept prompts are forgotten. Its siblings share the cells it read."""
        last = len(job.prompt) - 1
        source = next((seq for seq in self.active if seq.job is job.waits_for), None)
        if source is None or source.read < last:
            for slot in list(self.kept):
                self._forget(slot)
            source = None
        empty = [s for s in self.free_ids if s not in self.kept]
        slot = empty[0] if empty else next(iter(self.kept))  # else the one kept longest ago
        self._forget(slot)
        if source is None:
            return slot, 0
        self.lib.llama_memory_seq_cp(self.memory, source.seq_id, slot, 0, last)
        self.reused += last
        return slot, last

    def _forget(self, slot: int) -> None:
        """Drop what a free slot kept."""
        self.kept.pop(slot, None)
        self.lib.llama_memory_seq_rm(self.memory, slot, -1, -1)
        if self.draft is not None:
            self.draft.forget(slot)

    def _make_room(self) -> None:
        """Forget kept prompts while they and the running requests overflow the cache: the oldest
        that frees enough alone, else the oldest, and again. (The oldest first regardless would
        forget a chat's few cells on the way to the long prompt that had to go anyway.)"""
        while self.kept:
            over = self.reserved + sum(len(t) for t in self.kept.values()) - self.n_ctx
            if over <= 0:
                return
            self._forget(next((s for s, t in self.kept.items() if len(t) >= over), next(iter(self.kept))))

    def release(self, seq: Sequence[J], keep: bool = True) -> None:
        if keep and seq.read == len(seq.prompt):
            self.lib.llama_memory_seq_rm(self.memory, seq.seq_id, len(seq.prompt), -1)
            self.kept[seq.seq_id] = seq.prompt
            if self.draft is not None:
                self.draft.kept(seq.seq_id, len(seq.prompt))
        else:
            self.lib.llama_memory_seq_rm(self.memory, seq.seq_id, -1, -1)
            if self.draft is not None:
                self.draft.forget(seq.seq_id)
        if seq.sampler is not None:
            seq.sampler.free()
        self.free_ids.append(seq.seq_id)
        self.reserved -= seq.cells
        self.active.remove(seq)
        self._make_room()

    # --- one step -------------------------------------------------------------------------
    def step(self) -> list[tuple[Sequence[J], int]]:
        """Decode one batch; return the (sequence, token) pairs sampled in it. A sequence read first
        whose gate does not keep it is not sampled: it is in `routed_away` after the step.

        Four phases: the generating sequences' next tokens go in the batch (`_fill_generating`),
        then what the pacer gives of the prompts being read (`_fill_reading`); llama.cpp decodes
        the batch (`_decode`); each sequence whose logits came out is gated or sampled (`_sample`)."""
        self.routed_away = []
        for seq in self.active:
            seq.logit_index = None
        # Background work steps only when no interactive request is running.
        running = [q for q in self.active if not q.job.sampling.background] or self.active
        n = self._fill_generating(running)
        n, read, long_read = self._fill_reading(running, n)
        if not self._decode(n, read, long_read):
            return []
        return self._sampled()

    def _fill_generating(self, running: list[Sequence[J]]) -> int:
        """Every generating sequence's last token in the batch (and its draft's guesses after it,
        to verify in the same decode); returns how many tokens the batch holds."""
        n = 0
        generating = [q for q in running if q.read == len(q.prompt)][: self.n_batch]
        for seq, guesses in zip(generating, self._drafts(generating), strict=True):
            pos = len(seq.prompt) + seq.job.completion_tokens - 1
            put(self.batch, n, seq.last, pos, seq.seq_id, True)
            seq.logit_index = n
            n += 1
            seq.guesses = guesses
            for k, token in enumerate(guesses):
                put(self.batch, n, token, pos + 1 + k, seq.seq_id, True)
                n += 1
        return n

    def _fill_reading(self, running: list[Sequence[J]], n: int) -> tuple[int, list[tuple[Sequence[J], int]], bool]:
        """The prompts being read, the shortest first, each as much as the pacer gives it (short
        ones whole, long ones a chunk), after the `n` tokens the batch holds. Returns the tokens
        it then holds, each prompt read and where its read started, and whether a long prompt
        is among them (a step the pacer may cut)."""
        reading = sorted((q for q in running if q.read < len(q.prompt)), key=lambda q: len(q.prompt) - q.read)
        long_read = False
        read: list[tuple[Sequence[J], int]] = []
        for seq, take in zip(reading, self.pacer.reads(n, [len(q.prompt) - q.read for q in reading]), strict=True):
            if take <= 0:
                continue
            long_read = long_read or len(seq.prompt) - seq.read > SHORT_PROMPT
            read.append((seq, seq.read))
            for k in range(take):
                put(self.batch, n, seq.prompt[seq.read + k], seq.read + k, seq.seq_id, False)
                n += 1
            seq.read += take
            if seq.read == len(seq.prompt):
                self.batch.logits[n - 1] = 1
                seq.logit_index = n - 1
        return n, read, long_read

    def _decode(self, n: int, read: list[tuple[Sequence[J], int]], long_read: bool) -> bool:
        """Decode the batch's `n` tokens, timed for the pacer; False when there was nothing to
        decode, or the step was cut (`_undo`: as if it had not run)."""
        if n == 0:
            self.before_decode()
            return False
        self.batch.n_tokens = n
        self.before_decode()
        started = time.perf_counter()
        self.interrupt.arm(long_read and self.pacer.may_cut(time.monotonic()))
        code = self.lib.llama_decode(self.ctx, self.batch)
        self.interrupt.arm(False)
        if code == CUT:  # llama.cpp dropped the step's cells: it is as if it had not run
            self._undo(read)
            self.pacer.was_cut(time.monotonic())
            return False
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")
        self.pacer.measured(n, time.perf_counter() - started, long_read)
        for seq, _ in read:
            if seq.read == len(seq.prompt):
                seq.job.prompt_read = True
        return True

    def _sampled(self) -> list[tuple[Sequence[J], int]]:
        """Each sequence whose logits the decode gave: a prompt read first is gated (and left out,
        in `routed_away`, where its gate does not keep it); a draft's guesses are verified; any
        other samples its next token."""
        sampled = []
        for seq in self.active:
            if seq.logit_index is None:
                continue
            if seq.job.gate is not None and seq.job.gate.score is None and not self._gate(seq):
                self.routed_away.append(seq)
                continue
            if seq.guesses:
                tokens = self._verified(seq)
                seq.last = tokens[-1]
                sampled += [(seq, token) for token in tokens]
                continue
            token = self._sample(seq)
            if seq.lookup is not None:
                seq.lookup.extend([token])
            if seq.job.sampling.confidence:
                seq.job.logprob_sum += self._logprob(seq.logit_index, token)
            if seq.job.sampling.logprobs is not None:
                seq.job.logprobs.append(self._token_logprob(seq.logit_index, token, seq.job.sampling.logprobs))
            seq.last = token
            sampled.append((seq, token))
        return sampled

    def _undo(self, read: list[tuple[Sequence[J], int]]) -> None:
        """Forget a step that was cut: the prompts read in it are to be read again from where they
        were, and the generating sequences feed their last token again, without guesses."""
        self.interrupt.landed()
        for seq, start in read:
            seq.read = start
        for seq in self.active:
            seq.logit_index = None
            seq.guesses = []

    def quick_to_read(self, prompt: list[int]) -> bool:
        """Whether a prompt reads in one short step: short, or all but a short tail kept in the cache
        already (a chat's next turn). Called by the thread that queues requests, on a snapshot."""
        need = len(prompt) - SHORT_PROMPT
        if need <= 0:
            return True
        head = prompt[:need]
        return any(len(kept) >= need and kept[:need] == head for kept in list(self.kept.values()))

    def _drafts(self, generating: list[Sequence[J]]) -> list[list[int]]:
        """What each generating sequence drafts after its last token this step: nothing unless the
        speculation's cost model says the batch gains by it, and no more than the batch holds."""
        if self.speculation is None:
            return [[] for _ in generating]
        self.speculation.stepped(len(generating))
        room = self.n_batch - len(generating)
        wants: list[int] = []
        for seq in generating:
            most = 0
            if seq.lookup is not None and room > 0:
                left = seq.job.max_tokens - seq.job.completion_tokens - 1  # within the cells it reserved
                most = self.speculation.guesses(seq.lookup, len(generating), min(left, room))
            wants.append(most)
            room -= most
        asked = [(i, seq, seq.lookup) for i, seq in enumerate(generating) if wants[i] > 0 and seq.lookup is not None]
        drafted: list[list[int]] = [[] for _ in generating]
        if self.draft is None:
            for i, _, lookup in asked:
                drafted[i] = lookup.guess(wants[i])
        elif asked:
            started = time.perf_counter()
            proposed = self.draft.propose([(seq.seq_id, lookup.tokens, wants[i]) for i, seq, lookup in asked])
            self.speculation.drafting_took(sum(map(len, proposed)), time.perf_counter() - started)
            for (i, _, _), guesses in zip(asked, proposed, strict=True):
                drafted[i] = guesses
        for seq, guesses in zip(generating, drafted, strict=True):
            if seq.lookup is not None and not guesses:
                seq.lookup.skipped()
                if self.draft is None:  # what it would have guessed, checked for free against what is written
                    seq.lookup.watch(self.speculation.most)
        return drafted

    def _verified(self, seq: Sequence[J]) -> list[int]:
        """The tokens a drafting sequence writes this step: the model's greedy choice after its last
        token, and after each guess as long as the guesses match those choices. The cache cells of
        the guesses not kept are dropped."""
        assert seq.logit_index is not None and seq.lookup is not None and self.speculation is not None
        guesses, tokens = seq.guesses, []
        for i in range(len(guesses) + 1):
            tokens.append(self._greedy(seq.logit_index + i))
            if i == len(guesses) or tokens[-1] != guesses[i]:
                break
        kept = len(tokens) - 1
        if kept < len(guesses):
            first_dropped = len(seq.prompt) + seq.job.completion_tokens + kept
            self.lib.llama_memory_seq_rm(self.memory, seq.seq_id, first_dropped, -1)
        seq.lookup.accepted(len(guesses), kept)
        self.speculation.counted(len(guesses), kept)
        seq.lookup.extend(tokens)
        seq.guesses = []
        return tokens

    def _gate(self, seq: Sequence[J]) -> bool:
        """Score a gated sequence's reading of its prompt, just read (the logits its first token
        would be sampled from: nothing computed for it alone); whether the gate keeps it."""
        gate = seq.job.gate
        assert gate is not None and seq.logit_index is not None
        gate.score = gate.probe.score(self._logits(seq.logit_index))
        return gate.keep(gate.score)

    def _sample(self, seq: Sequence[J]) -> int:
        assert seq.logit_index is not None  # step() samples only the sequences it asked logits of
        if seq.sampler is not None:
            logits = self._logits(seq.logit_index) if seq.sampler.grammar is not None else None
            return seq.sampler.draw(self.ctx, seq.logit_index, logits)
        return self._greedy(seq.logit_index)

    def _greedy(self, index: int) -> int:
        return int(self._logits(index).argmax())  # 10 us; llama.cpp's greedy sampler takes 50

    def _logits(self, index: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        return logits_at(self.lib, self.ctx, index, self.n_vocab)

    def _token_logprob(self, index: int, token: int, top: int) -> TokenLogprob:
        """The sampled token's log-probability under the model (before temperature, as OpenAI
        reports it), and the `top` likeliest tokens'."""
        logits = self._logits(index)
        peak = float(logits.max())
        norm = peak + math.log(float(np.exp(logits - peak).sum()))
        best: list[tuple[int, float]] = []
        if top:
            ids = np.argpartition(-logits, top)[:top]
            best = sorted(((int(i), float(logits[i]) - norm) for i in ids), key=lambda pair: -pair[1])
        return TokenLogprob(token, float(logits[token]) - norm, best)

    def _logprob(self, index: int, token: int) -> float:
        logits = self._logits(index)
        top = float(logits.max())
        return float(logits[token]) - top - math.log(float(np.exp(logits - top).sum()))


def drain(jobs: queue.Queue[J | None], into: list[J]) -> bool:
    """Move every queued job into `into`; False once the engine is closing (None was queued)."""
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return True
        if job is None:
            return False
        into.append(job)
