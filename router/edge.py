"""A local model as a tier: edge generations in the OpenAI wire shape."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.context import Context

from edge_runtime import EdgeEngine, EdgeError, Generation, PromptTooLong, Sampling
from edge_runtime.grammar import GrammarError, json_grammar, schema_grammar
from edge_runtime.reading import Gate, Probe
from edge_runtime.sampling import FinishReason, TokenLogprob
from policies.needs import Need
from router import edge_tools
from router.answer import Answer, ChunkStream, Usage, embeddings_body
from router.errors import InvalidOutput, InvalidRequest, NoCapacity
from router.modes import ReplayedAnswer
from router.native import Api
from router.offload import off_loop
from router.request import ChatRequest
from router.tier import Capacity, Resilience, TierKind
from router.tracing import current, edge_phases

INLINE_BYTES = 16 * 1024  # bodies up to this are tokenized on the event loop (about 0.1 ms of work)
# An answer that breaks what its schema says beyond the grammar is sampled again, this many times
# and at this temperature (greedy sampling would write the same answer again), then refused.
RESAMPLES = 2
RESAMPLE_TEMPERATURE = 0.8

Check = Callable[[str], "str | None"]  # what is wrong with an answer's text, or None


@dataclass
class Queued:
    """A request's generations on the engine, and what it takes to sample one of them again."""

    generations: list[Generation]
    prompt: list[int]
    sampling: Sampling
    check: Check | None  # what an answer must pass beyond its grammar (None: the grammar holds it all)
    calls: edge_tools.ToolGrammar | None = None  # the tools' grammar, where the answer may call one


class EdgeModel:
    tier: TierKind = "edge"
    resilience: Resilience | None = None  # local: a failure is not retried and opens no circuit
    apis: frozenset[Api] = frozenset()  # every API's request reaches it as Chat Completions
    # JSON output and tool calls by grammar; embeddings of the model's mean-pooled states; logprobs
    capabilities: frozenset[str] = frozenset(
        {
            Need.JSON_OUTPUT,
            Need.TOOLS,
            Need.EMBEDDINGS,
            Need.LOGPROBS,
            Need.CHOICES,
            Need.PENALTIES,
            Need.OWN_TOKEN_BIAS,
        }
    )

    def __init__(self, engine: EdgeEngine) -> None:
        self.engine = engine
        self.name = engine.name
        narrowed = engine.config.capabilities
        if narrowed is not None:  # the config may take away what the runtime can do, never add
            self.capabilities = self.capabilities & frozenset(narrowed)
        self.context_window: int | None = engine.n_ctx
        self.probe: Probe | None = None  # fitted for this model's GGUF: set once it is known (gateway.probes)

    def capacity(self) -> Capacity:
        return Capacity(self.engine.wait_ms(), self.engine.outstanding_tokens)

    async def _prompt(self, request: ChatRequest, messages: list[dict[str, str]]) -> list[int]:
        """The prompt's tokens. A large one is templated and tokenized on a worker thread: seconds
        of it on the event loop would stall every other request (and /healthz) meanwhile."""
        if request.prompt is not None:
            prompt = request.prompt
            if request.body_bytes <= INLINE_BYTES:
                return self.engine.tokenize_text(prompt)
            return await off_loop(lambda: self.engine.tokenize_text(prompt))
        if request.body_bytes <= INLINE_BYTES:
            return self.engine.tokenize_chat(messages)
        return await off_loop(lambda: self.engine.tokenize_chat(messages))

    async def prompt_tokens(self, request: ChatRequest) -> int:
        """How many tokens this model reads for `request`: its chat template and tools included,
        as an answer to it would count them (a prompt longer than the context too)."""
        messages = None
        if Need.TOOLS in request.needs:
            messages = edge_tools.messages(request, edge_tools.tools_of(request.body))
        try:
            return len(await self._prompt(request, messages or request.plain_messages()))
        except PromptTooLong as exc:  # the tokenizer counted it all, and found no room
            return exc.needed

    async def _start(
        self, request: ChatRequest, confidence: bool = False, gate: Gate | None = None, bound: int | None = None
    ) -> Queued:
        """The request's `n` generations, queued: the first reads the prompt, the others share
        its cells once it has (each with its own seed: the given one plus its index). With `gate`
        (a request of one answer), it is read first (`read_first`): a prompt longer than `bound`
        from its last `bound` tokens alone, and then, if the gate keeps it, read whole to answer
        (none is queued when it does not)."""
        if not request.text_only:
            raise InvalidRequest(
                f"The edge model {self.name!r} reads text only; this request has image, audio or file parts.",
                param="messages",
                code="unsupported_content",
            )
        grammar, check = _grammar_of(request)
        messages, calls = None, None
        if Need.TOOLS in request.needs:
            tools, required = edge_tools.chosen(request.body, edge_tools.tools_of(request.body))
            made = edge_tools.grammar(tools, required)
            grammar, messages = made.gbnf, edge_tools.messages(request, tools)
            check = made.check if made.checks else None
            calls = made
        sampling = Sampling(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
            stop=tuple(request.stop),
            confidence=confidence,
            grammar=grammar,
            logprobs=request.logprobs,
            frequency_penalty=request.frequency_penalty,
            presence_penalty=request.presence_penalty,
            logit_bias=self._biases(request),
            background=request.background,
        )
        generations: list[Generation] = []
        try:
            prompt = await self._prompt(request, messages or request.plain_messages())
            if gate is not None and bound is not None and len(prompt) > bound:
                gate.score = await self._read_end(prompt[-bound:], request)
                if gate.score is None or not gate.keep(gate.score):
                    return Queued([], prompt, sampling, check, calls)
                gate = None  # kept: the answer reads the whole prompt, as a plain generation
            for i in range(request.n):
                seed = None if request.seed is None else request.seed + i
                sharing = generations[0] if generations else None
                generations.append(
                    self.engine.submit_tokens(prompt, replace(sampling, seed=seed), request.app, sharing, gate)
                )
            return Queued(generations, prompt, sampling, check, calls)
        except GrammarError as exc:  # llama.cpp could not read what the converter wrote
            param = "tools" if Need.TOOLS in request.needs else "response_format"
            raise InvalidRequest(
                f"The schema cannot be held on the edge model: {exc}.", param=param, code="invalid_json_schema"
            ) from None
        except PromptTooLong as exc:
            raise InvalidRequest(
                f"This request is too long for the edge model: {exc}.", param="messages", code="context_length_exceeded"
            ) from None
        except EdgeError as exc:
            raise NoCapacity(str(exc), retry_after=1) from None
        finally:
            if len(generations) != request.n:  # a failure part-way: none of them is wanted
                for generation in generations:
                    generation.cancel()

    def _biases(self, request: ChatRequest) -> tuple[tuple[int, float], ...]:
        vocabulary = self.engine.n_vocab
        for token, _ in request.logit_bias:
            if token >= vocabulary:
                raise InvalidRequest(
                    f"logit_bias names token {token}; the edge model {self.name!r} has {vocabulary} tokens.",
                    param="logit_bias",
                    code="invalid_value",
                )
        return request.logit_bias

    async def read_first(
        self, request: ChatRequest, keep: Callable[[float], bool], bound: int | None = None
    ) -> EdgeRead:
        """Read the prompt and score the reading with this model's probe; `keep(score)` says
        whether this model goes on to answer, from the same prefill, or stops there. With `bound`,
        a longer prompt is read from its last `bound` tokens: a request the cloud answers pays at
        most that much prefill here, and one the edge keeps is read whole to be answered."""
        if self.probe is None:
            raise NoCapacity(f"The edge model {self.name!r} has no probe to read prompts with.", retry_after=1)
        gate = Gate(self.probe, keep)
        queued = await self._start(request, gate=gate, bound=bound)
        first = queued.generations[0] if queued.generations else None
        if first is not None and first.gate is gate:  # read first on the prefill it answers from
            try:
                await first.reading()
            except BaseException:
                first.cancel()
                raise
        return EdgeRead(self, request, queued, gate.score)

    async def _read_end(self, tokens: list[int], request: ChatRequest) -> float | None:
        """The probe's score of a reading of `tokens` (a prompt's end), which answers nothing."""
        assert self.probe is not None
        sampling = Sampling(max_tokens=1, temperature=0, background=request.background)
        reading = self.engine.submit_tokens(tokens, sampling, request.app, None, Gate(self.probe, lambda _: False))
        try:
            return await reading.reading()
        finally:
            reading.cancel()

    async def complete(self, request: ChatRequest, *, confidence: bool = False) -> Answer:
        return await self._answer(request, await self._start(request, confidence))

    async def _answer(self, request: ChatRequest, queued: Queued) -> Answer:
        generations = queued.generations
        try:
            texts = await asyncio.gather(*(_text_of(g) for g in generations))
            if queued.check is not None:
                for i, text in enumerate(texts):
                    generations[i], texts[i] = await self._checked(request, queued, generations[i], text)
        except EdgeError as exc:
            raise NoCapacity(str(exc), retry_after=1) from None
        finally:
            for generation in generations:
                generation.cancel()  # (a no-op for the finished ones)
        parent = current()
        choices = []
        for i, (generation, text) in enumerate(zip(generations, texts, strict=True)):
            _traced(generation, parent)
            message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
            finish_reason = _wire(generation.finish_reason)
            if Need.TOOLS in request.needs:
                message, finish_reason = edge_tools.answer(text, finish_reason)
            logprobs = self._logprobs(generation.logprobs) if request.logprobs is not None else None
            choice = {"index": i, "message": message, "logprobs": logprobs, "finish_reason": finish_reason}
            if generation.stop_sequence is not None:  # vLLM's field: which stop sequence ended it
                choice["stop_reason"] = generation.stop_sequence
            choices.append(choice)
        # The prompt is counted once, as OpenAI counts it for n answers: the others shared its cells.
        usage = Usage(generations[0].prompt_tokens, sum(g.completion_tokens for g in generations))
        body = {
            "id": _completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": choices,
            "usage": usage.as_openai(),
        }
        confidences = [g.confidence for g in generations if g.confidence is not None]
        return Answer(body, usage, min(confidences) if confidences else None)

    async def _checked(
        self, request: ChatRequest, queued: Queued, generation: Generation, text: str
    ) -> tuple[Generation, str]:
        """An answer that passes its check: this one, or one sampled again; else `InvalidOutput`."""
        cut = generation.finish_reason is FinishReason.LENGTH
        again, text = await self._passing(request, queued, text, cut)
        return again or generation, text

    async def _passing(
        self, request: ChatRequest, queued: Queued, text: str, cut: bool, grammar: str | None = None
    ) -> tuple[Generation | None, str]:
        """`text` if it passes the request's check (None: no generation made), or an answer sampled
        again (`RESAMPLES` times at most, from the prompt's cells in the cache, under `grammar`
        where given) that does; else `InvalidOutput`. An answer cut short by max_tokens is
        reported as cut, not checked."""
        assert queued.check is not None
        problem = None if cut else queued.check(text)
        generation = None
        for attempt in range(RESAMPLES):
            if problem is None:
                return generation, text
            seed = (queued.sampling.seed or 0) + 1000 * (attempt + 1)
            sampling = replace(queued.sampling, temperature=RESAMPLE_TEMPERATURE, seed=seed)
            if grammar is not None:
                sampling = replace(sampling, grammar=grammar)
            generation = self.engine.submit_tokens(queued.prompt, sampling, request.app)
            try:
                text = await _text_of(generation)
            except BaseException:  # the client left (or the edge failed) meanwhile
                generation.cancel()
                raise
            problem = None if generation.finish_reason is FinishReason.LENGTH else queued.check(text)
        if problem is None:
            return generation, text
        raise InvalidOutput(
            f"The edge model {self.name!r} wrote an answer that breaks the request's schema "
            f"{RESAMPLES + 1} times: {problem}.",
        )

    def _settle(self, request: ChatRequest, queued: Queued) -> edge_tools.Settle:
        """How a streamed call of a checked tool is settled: checked, and sampled again under
        that tool's grammar alone (its name already went out) until one passes."""
        calls = queued.calls
        assert calls is not None

        async def settle(name: str, text: str) -> edge_tools.Settled:
            again, text = await self._passing(request, queued, text, cut=False, grammar=calls.of(name).gbnf)
            if again is None:
                return edge_tools.Settled(text, "tool_calls")
            return edge_tools.Settled(text, _wire(again.finish_reason), again.completion_tokens)

        return settle

    async def embed(self, request: ChatRequest) -> Answer:
        texts = request.inputs or ()
        try:
            vectors, tokens = await off_loop(lambda: self.engine.embed(texts))
        except PromptTooLong as exc:
            raise InvalidRequest(
                f"A text is too long for the edge model's embeddings: {exc}.",
                param="input",
                code="context_length_exceeded",
            ) from None
        except EdgeError as exc:
            raise NoCapacity(str(exc), retry_after=1) from None
        return Answer(embeddings_body(vectors, self.name, tokens), Usage(tokens, 0))

    async def stream(self, request: ChatRequest) -> ChunkStream:
        return await self._streams(request, await self._start(request))

    async def _streams(self, request: ChatRequest, queued: Queued) -> ChunkStream:
        generations = queued.generations
        calls = queued.calls
        if (queued.check is not None and calls is None) or (calls is not None and len(generations) > 1):
            # JSON output checked after sampling goes out once it passes (what is sent of a value
            # cannot be taken back); n calls, each once it parses
            return ReplayedAnswer(await self._answer(request, queued))
        logprobs = self._logprobs if request.logprobs is not None else None
        base = {
            "id": _completion_id(),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.name,
        }
        streams = [EdgeStream(base, g, logprobs, index=i) for i, g in enumerate(generations)]
        if calls is not None:  # the envelope the grammar writes, streamed as a call
            if queued.check is None:
                return edge_tools.CallStream(streams[0])
            return edge_tools.CallStream(streams[0], frozenset(calls.checks), self._settle(request, queued))
        return streams[0] if len(streams) == 1 else MergedStream(streams)

    def _logprobs(self, entries: Sequence[TokenLogprob]) -> dict[str, Any]:
        """OpenAI's chat `logprobs` object for these tokens."""
        return {"content": [self._entry(e.token, e.logprob, e.top) for e in entries], "refusal": None}

    def _entry(self, token: int, logprob: float, top: list[tuple[int, float]] | None = None) -> dict[str, Any]:
        written = self.engine.token_bytes(token)
        entry: dict[str, Any] = {
            "token": written.decode("utf-8", "replace"),
            "logprob": logprob,
            "bytes": list(written),
        }
        if top is not None:
            entry["top_logprobs"] = [self._entry(t, lp) for t, lp in top]
        return entry


class EdgeRead:
    """A request the edge has read first: its probe's score, and, if the gate kept it, the answer
    that goes on from the same prefill."""

    def __init__(self, model: EdgeModel, request: ChatRequest, queued: Queued, score: float | None):
        self._model, self._request, self._queued = model, request, queued
        self._generations = queued.generations
        self.score = score

    @property
    def kept(self) -> bool:
        """The edge goes on to answer (False: it stopped after reading, or ended before)."""
        if not self._generations:  # a prompt's end was read, and not kept
            return False
        generation = self._generations[0]
        cancelled = generation.finish_reason is FinishReason.CANCELLED
        return self.score is not None and not generation.routed_away and not cancelled

    async def complete(self) -> Answer:
        return await self._model._answer(self._request, self._queued)

    async def stream(self) -> ChunkStream:
        return await self._model._streams(self._request, self._queued)

    def cancel(self) -> None:
        for generation in self._generations:
            generation.cancel()


class EdgeStream:
    """One generation as chunks of choice `index` (`base`: the id, created and model they carry)."""

    def __init__(
        self,
        base: dict[str, Any],
        generation: Generation,
        logprobs: Callable[[Sequence[TokenLogprob]], dict[str, Any]] | None = None,
        index: int = 0,
    ) -> None:
        self._generation = generation
        self._logprobs = logprobs
        self._trace: Context | None = current()  # the attempt's, for its queue and generation spans
        self._reported = 0  # tokens whose logprobs went out with an earlier chunk
        self._base, self._index = base, index
        self.usage = Usage(generation.prompt_tokens, 0)

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        logprobs = None
        if self._logprobs is not None and delta.get("content"):
            entries = self._generation.logprobs[self._reported :]
            self._reported += len(entries)
            logprobs = self._logprobs(entries)
        return {
            **self._base,
            "choices": [{"index": self._index, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}],
        }

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        generation = self._generation
        yield self._chunk({"role": "assistant", "content": ""})
        try:
            async for piece in generation.text():
                self.usage.completion_tokens = generation.completion_tokens
                yield self._chunk({"content": piece})
        except EdgeError as exc:
            raise NoCapacity(str(exc), retry_after=1) from None
        self.usage.completion_tokens = generation.completion_tokens
        self._phases()
        last = self._chunk({}, _wire(generation.finish_reason))
        if generation.stop_sequence is not None:
            last["choices"][0]["stop_reason"] = generation.stop_sequence
        yield last

    def _phases(self) -> None:
        if self._trace is not None:
            _traced(self._generation, self._trace)
            self._trace = None

    async def aclose(self) -> None:
        self._generation.cancel()
        self._phases()


class MergedStream:
    """A request's `n` streams as one, their chunks in the order they come."""

    def __init__(self, streams: list[EdgeStream]) -> None:
        self._streams = streams

    @property
    def usage(self) -> Usage:
        first = self._streams[0].usage
        return Usage(first.prompt_tokens, sum(s.usage.completion_tokens for s in self._streams))

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue()

        async def pump(stream: EdgeStream) -> None:
            try:
                async for chunk in stream:
                    await queue.put(chunk)
            except BaseException as exc:  # handed to the reader, which raises it
                await queue.put(exc)
            finally:
                await queue.put(None)

        pumps = [asyncio.create_task(pump(s)) for s in self._streams]
        try:
            ended = 0
            while ended < len(pumps):
                item = await queue.get()
                if item is None:
                    ended += 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            for task in pumps:
                task.cancel()

    async def aclose(self) -> None:
        for stream in self._streams:
            await stream.aclose()


async def _text_of(generation: Generation) -> str:
    return "".join([piece async for piece in generation.text()])


def _traced(generation: Generation, parent: Context) -> None:
    edge_phases(parent, generation.queued_at, generation.started_at, generation.ended_at, generation.completion_tokens)


def _grammar_of(request: ChatRequest) -> tuple[str | None, Check | None]:
    """The grammar a `response_format` asks for (any JSON object, or JSON matching a schema), and
    the check its answer must pass beyond the grammar."""
    if Need.JSON_OUTPUT not in request.needs:
        return None, None
    response_format = request.body["response_format"]
    if response_format["type"] == "json_object":
        return json_grammar(), None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        raise InvalidRequest(
            "response_format.json_schema.schema must be a JSON schema object.",
            param="response_format.json_schema.schema",
            code="invalid_json_schema",
        )
    try:
        made = schema_grammar(schema)
    except GrammarError as exc:
        raise InvalidRequest(
            f"{exc}.", param="response_format.json_schema.schema", code="invalid_json_schema"
        ) from None
    if made.check is None:
        return made.gbnf, None
    value_check = made.check

    def check(text: str) -> str | None:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None  # (the grammar writes JSON; only a cut answer does not parse, and it says so)
        return value_check(value)

    return made.gbnf, check


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def _wire(reason: FinishReason | None) -> str | None:
    """A generation's finish reason as an answer carries it: Chat Completions' word."""
    return None if reason is None else reason.value
