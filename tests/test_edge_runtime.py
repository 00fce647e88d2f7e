"""The edge runtime's scheduler, on the bundled model: batching, chunked prefill, token admission."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from edge_runtime import EdgeEngine, EdgeModelConfig, Sampling
from edge_runtime.openmp import SPINS, links_libgomp
from edge_runtime.threads import thread_count

STORY = [{"role": "user", "content": "Tell me a short story about a lighthouse keeper."}]


@pytest.fixture(scope="module")
def engine():
    made = EdgeEngine(EdgeModelConfig(n_ctx=2048, parallel=4))
    made.load()
    yield made
    made.close()


async def collect(generation) -> str:
    return "".join([piece async for piece in generation.text()])


async def watch_running(engine, until: asyncio.Future) -> int:
    most = 0
    while not until.done():
        most = max(most, engine.state().running)
        await asyncio.sleep(0.005)
    return most


async def test_concurrent_requests_are_decoded_together_each_with_its_own_sampling(engine):
    settings = [
        Sampling(max_tokens=24, temperature=0),
        Sampling(max_tokens=24, temperature=1.2, seed=7),
        Sampling(max_tokens=12, temperature=0.7, seed=3),
        Sampling(max_tokens=24, temperature=0.9, seed=11),
    ]
    generations = [engine.submit(STORY, s) for s in settings]
    done = asyncio.ensure_future(asyncio.gather(*(collect(g) for g in generations)))
    most = await watch_running(engine, done)
    await done
    assert most >= 3  # several sequences shared one decode step
    # Each ends at its own max_tokens, or earlier at the end of its text (a sampled sequence may
    # draw the end-of-sequence token; which one depends on what it was batched with).
    for generation, sampling in zip(generations, settings, strict=True):
        assert generation.finish_reason in ("length", "stop")
        assert (generation.completion_tokens == sampling.max_tokens) == (generation.finish_reason == "length")
        assert 0 < generation.completion_tokens <= sampling.max_tokens
    # A stop sequence cuts the answer before it. (Greedy text is not compared across runs: a prompt
    # read in a batch, or reused from another request's cache, may round differently.)
    cut = engine.submit(STORY, Sampling(max_tokens=24, temperature=0, stop=(" ",)))
    first_word = await collect(cut)
    assert first_word and " " not in first_word and cut.finish_reason == "stop"


async def test_a_long_prompt_does_not_hold_back_a_short_request_that_arrives_after_it(engine):
    long_prompt = [{"role": "user", "content": "Summarize: " + "The harbor was quiet that morning. " * 180}]
    long = engine.submit(long_prompt, Sampling(max_tokens=4, temperature=0))
    await asyncio.sleep(0.05)
    short = engine.submit(STORY, Sampling(max_tokens=4, temperature=0))
    await asyncio.gather(collect(long), collect(short))
    assert long.prompt_tokens > 1000
    assert short.first_token_at < long.first_token_at  # its prefill was chunked around the short one


async def test_background_work_sits_out_every_step_an_interactive_request_needs(engine):
    """A batch line decodes only while nothing interactive runs: an interactive request arriving
    beside it waits at most the step in flight, and the batch line resumes once it is done."""
    line = engine.submit(STORY, Sampling(max_tokens=400, temperature=0, background=True))
    background = asyncio.ensure_future(collect(line))
    while line.completion_tokens < 5:
        await asyncio.sleep(0.005)
    assert engine.wait_ms() == 0.0  # background work is no wait for interactive requests
    before = line.completion_tokens
    interactive = engine.submit(STORY, Sampling(max_tokens=48, temperature=0))
    await collect(interactive)
    assert line.completion_tokens - before <= 2  # the step in flight, and the one that admitted it
    assert interactive.completion_tokens == 48 and not background.done()
    await background
    assert line.finish_reason in ("length", "stop") and line.completion_tokens > before + 2


async def test_background_work_waits_while_interactive_requests_wait():
    small = EdgeEngine(EdgeModelConfig(n_ctx=512, parallel=2))
    small.load()
    try:
        first = small.submit(STORY, Sampling(max_tokens=200, temperature=0))
        line = small.submit(STORY, Sampling(max_tokens=40, temperature=0, background=True))
        waiting = asyncio.ensure_future(collect(line))
        await collect(first)
        assert line.started_at is not None and line.started_at >= first.ended_at  # no slot beside: it waited
        await waiting
    finally:
        small.close()


async def test_admission_counts_kv_cells_not_requests():
    small = EdgeEngine(EdgeModelConfig(n_ctx=512, parallel=4))
    small.load()
    try:
        generations = [small.submit(STORY, Sampling(max_tokens=200, temperature=0)) for _ in range(3)]
        done = asyncio.ensure_future(asyncio.gather(*(collect(g) for g in generations)))
        most = await watch_running(small, done)
        await done
        assert most == 2  # each needs ~245 of 512 cells: two at once, the third waits though slots are free
        assert all(g.finish_reason in ("stop", "length") for g in generations)
    finally:
        small.close()


async def test_a_cancelled_request_leaves_at_the_next_step(engine):
    generation = engine.submit(STORY, Sampling(max_tokens=400, temperature=0.8))
    pieces = generation.text()
    await pieces.__anext__()
    generation.cancel()
    for _ in range(200):
        if engine.state().running == 0:
            break
        await asyncio.sleep(0.01)
    assert engine.state().running == 0
    assert generation.completion_tokens < 400


async def test_waiting_requests_are_shared_fairly_between_apps():
    one_at_a_time = EdgeEngine(EdgeModelConfig(n_ctx=512, parallel=1))
    one_at_a_time.load()
    try:
        order: list[str] = []

        async def run(owner: str) -> None:
            generation = one_at_a_time.submit(STORY, Sampling(max_tokens=2, temperature=0), owner=owner)
            await collect(generation)
            order.append(owner)

        busy = [asyncio.ensure_future(run("busy")) for _ in range(4)]
        await asyncio.sleep(0.05)
        quiet = asyncio.ensure_future(run("quiet"))
        await asyncio.gather(*busy, quiet)
        assert order.index("quiet") <= 2  # it does not wait behind every request of the busy app
    finally:
        one_at_a_time.close()


async def test_a_prompt_that_starts_like_an_earlier_one_reuses_its_cache(engine):
    system = {"role": "system", "content": "You are the harbor master's assistant. " * 20}
    first = engine.submit([system, {"role": "user", "content": "When is high tide?"}], Sampling(max_tokens=2))
    await collect(first)
    before = engine._scheduler.reused
    second = engine.submit([system, {"role": "user", "content": "Is the pier open?"}], Sampling(max_tokens=2))
    await collect(second)
    assert engine._scheduler.reused - before > 150  # the long system prompt was not read again


def test_the_configured_thread_count_wins_on_every_platform(monkeypatch):
    assert thread_count(3) == 3
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # as on macOS
    assert thread_count(3) == 3


def test_without_a_configured_count_the_cores_this_process_may_use_are_taken(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert thread_count(None) == 4  # the affinity mask, not every core of the machine
    monkeypatch.delattr(os, "sched_getaffinity")  # as on macOS
    assert thread_count(None) == 16
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert thread_count(None) == 1


def test_a_schema_grammar_keeps_control_characters_out_of_strings():
    """llama-cpp-python's converter lets a raw line break into a JSON string; ours does not."""
    from edge_runtime.grammar import json_grammar

    grammar = json_grammar({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    (char,) = [line for line in grammar.splitlines() if line.startswith("char ::=")]
    assert char.startswith('char ::= [^"\\\\\\x7F\\x00-\\x1F]')


async def test_a_generation_read_first_is_scored_once_its_prompt_is_read_and_answers_or_stops(engine):
    """The probe scores the logits the first token is sampled from; kept, the answer is the one
    the plain route gives (greedy), from the same prefill; not kept, it ends with no text."""
    import numpy as np

    from edge_runtime.reading import Gate, Probe, ReadingKind

    probe = Probe(ReadingKind.LAST, np.full(engine.n_vocab, 1e-3, dtype=np.float32), 0.5, "test")
    tokens = engine.tokenize_chat(STORY)
    plain = await collect(engine.submit_tokens(tokens, Sampling(max_tokens=8, temperature=0)))
    seen: list[float] = []
    kept = engine.submit_tokens(
        tokens, Sampling(max_tokens=8, temperature=0), gate=Gate(probe, lambda s: not seen.append(s))
    )
    score = await kept.reading()
    assert score is not None and seen == [score] and await collect(kept) == plain and not kept.routed_away
    away = engine.submit_tokens(tokens, Sampling(max_tokens=8, temperature=0), gate=Gate(probe, lambda s: False))
    # the same reading, up to rounding: this time the prompt's start comes from the cache and only
    # its last token is read again, through other kernels than a whole prefill's
    assert await away.reading() == pytest.approx(score, rel=0.05) and await collect(away) == ""
    assert away.routed_away and away.completion_tokens == 0
    cancelled = engine.submit_tokens(tokens, Sampling(max_tokens=8), gate=Gate(probe, lambda s: True))
    cancelled.cancel()
    assert await asyncio.wait_for(cancelled.reading(), 10) in (None, pytest.approx(score, rel=0.05))  # never hangs


async def test_a_bounded_reading_reads_only_the_prompts_end_and_a_kept_answer_reads_it_whole(engine, monkeypatch):
    """`router.reading_tokens`: a prompt longer than the bound is read from its last tokens only,
    so a request the cloud answers costs that much prefill; one the edge keeps is then read whole
    and answered as the plain route answers it. A prompt within the bound is read once and
    answered from that prefill."""
    import numpy as np

    from edge_runtime.reading import Gate, Probe, ReadingKind
    from router.edge import EdgeModel
    from router.request import parse_chat_request

    long = [{"role": "user", "content": "The harbour master logged every ship that came in that winter. " * 4
             + "Which ship came in first?"}]  # fmt: skip
    body = {"model": "smollm2", "messages": long, "max_tokens": 8, "temperature": 0}
    tokens, bound = engine.tokenize_chat(long), 24
    assert len(tokens) > 2 * bound
    model = EdgeModel(engine)
    model.probe = Probe(ReadingKind.LAST, np.full(engine.n_vocab, 1e-3, dtype=np.float32), 0.5, "test")
    end = engine.submit_tokens(
        tokens[-bound:], Sampling(max_tokens=1, temperature=0), gate=Gate(model.probe, lambda s: False)
    )
    end_score = await end.reading()
    plain = (await model.complete(parse_chat_request(body))).body["choices"][0]["message"]["content"]

    submitted: list[int] = []
    submit = engine.submit_tokens
    monkeypatch.setattr(
        engine, "submit_tokens", lambda prompt, *a, **k: submitted.append(len(prompt)) or submit(prompt, *a, **k)
    )
    away = await model.read_first(parse_chat_request(body), lambda s: False, bound)
    assert not away.kept and away.score == pytest.approx(end_score, rel=0.05) and submitted == [bound]
    submitted.clear()
    kept = await model.read_first(parse_chat_request(body), lambda s: True, bound)
    assert kept.kept and submitted == [bound, len(tokens)]
    answer = await kept.complete()
    assert answer.body["choices"][0]["message"]["content"] == plain and answer.usage.prompt_tokens == len(tokens)
    submitted.clear()
    within = await model.read_first(parse_chat_request(body), lambda s: True, len(tokens))
    assert within.kept and submitted == [len(tokens)]  # one prefill: read, then answered from it
    assert (await within.complete()).body["choices"][0]["message"]["content"] == plain


PARAGRAPH = (
    "The lighthouse at Point Reyes was built in 1870 and stands on a rocky headland about 300 feet above "
    "the Pacific Ocean. Its first-order Fresnel lens, made in France, has 24 panels and more than 1,000 "
    "pieces of glass."
)
COPY = [{"role": "user", "content": f"Copy the following paragraph exactly, word for word:\n\n{PARAGRAPH}"}]


async def test_prompt_lookup_drafts_are_kept_only_where_greedy_decoding_agrees():
    """With `speculative: {mode: prompt_lookup}`, a grounded answer's guesses from its prompt go
    into the decode step and the ones the model agrees with are kept: the text is the same as
    without it, in fewer steps. A sampled request never drafts."""
    plain = EdgeEngine(EdgeModelConfig(n_ctx=1024, parallel=2))
    drafting = EdgeEngine(EdgeModelConfig(n_ctx=1024, parallel=2, speculative={"mode": "prompt_lookup"}))
    plain.load()
    drafting.load()
    try:
        for messages in (COPY, STORY):
            alone = await collect(plain.submit(messages, Sampling(max_tokens=48, temperature=0)))
            drafted = drafting.submit(messages, Sampling(max_tokens=48, temperature=0))
            assert await collect(drafted) == alone
        state = drafting.state()
        assert state.drafts_kept > 10 and state.drafts_kept <= state.drafted
        before = state.drafted
        await collect(drafting.submit(COPY, Sampling(max_tokens=24, temperature=0.8, seed=1)))
        assert drafting.state().drafted == before
        assert plain.state().drafted == 0
    finally:
        plain.close()
        drafting.close()


async def test_a_short_request_cuts_the_long_prompts_step_in_flight_and_nothing_of_it_stays(engine):
    """A step reading a long prompt is cut when a short request arrives (llama.cpp's abort
    callback): the short request runs next, and the cache holds exactly what the scheduler counts
    as read, so the long prompt goes on from there."""
    scheduler = engine._scheduler
    mismatches: list[tuple[int, int]] = []
    step = scheduler.step

    def checked_step():  # on the worker thread, after each step
        sampled = step()
        for seq in scheduler.active:
            if 0 < seq.read < len(seq.prompt):
                held = int(scheduler.lib.llama_memory_seq_pos_max(scheduler.memory, seq.seq_id)) + 1
                if held != seq.read:
                    mismatches.append((held, seq.read))
        return sampled

    scheduler.step = checked_step
    try:
        cuts = scheduler.interrupt.cuts
        long_prompt = [{"role": "user", "content": "Summarize: " + "The tide came in over the flats. " * 200}]
        long = engine.submit(long_prompt, Sampling(max_tokens=4, temperature=0))
        shorts = []
        while scheduler.interrupt.cuts == cuts and len(shorts) < 10:  # one lands between steps at most rarely
            await asyncio.sleep(0.1)
            shorts.append(engine.submit(STORY, Sampling(max_tokens=2, temperature=0)))
            await collect(shorts[-1])
        assert await collect(long)
    finally:
        del scheduler.step
    assert scheduler.interrupt.cuts > cuts
    state = engine.state()  # what /readyz reports: how many cuts, and how long a request waited for one
    assert state.cuts == scheduler.interrupt.cuts and state.cut_wait_ms is not None and 0 < state.cut_wait_ms < 1000
    assert long.finish_reason == "length" and all(s.first_token_at < long.first_token_at for s in shorts)
    assert mismatches == []


async def test_only_a_request_quick_to_read_asks_for_a_cut(engine):
    scheduler = engine._scheduler
    assert scheduler.quick_to_read(engine.tokenize_chat(STORY))
    system = {"role": "system", "content": "You keep the harbor's tide tables. " * 30}
    turn = [system, {"role": "user", "content": "When is high tide?"}]
    assert not scheduler.quick_to_read(engine.tokenize_chat(turn))  # hundreds of tokens to read
    await collect(engine.submit(turn, Sampling(max_tokens=2)))
    # The chat's next turn: all but its new message is in the cache.
    assert scheduler.quick_to_read(engine.tokenize_chat([*turn, {"role": "user", "content": "And low tide?"}]))


async def test_a_document_does_not_evict_a_cached_chat_that_only_shares_its_start(engine):
    system = {"role": "system", "content": "You are the lighthouse's logbook. " * 20}
    chat = [system, {"role": "user", "content": "What happened last night?"}]
    await collect(engine.submit(chat, Sampling(max_tokens=2)))
    # Another app's document, longer than a batch: the same chat template up front, nothing else.
    document = "Summarize: " + "The keeper trimmed the wick and wound the clockwork. " * 60
    assert len(engine.tokenize_chat([{"role": "user", "content": document}])) > 512
    await collect(engine.submit([{"role": "user", "content": document}], Sampling(max_tokens=2)))
    before = engine._scheduler.reused
    await collect(engine.submit([*chat, {"role": "user", "content": "And before that?"}], Sampling(max_tokens=2)))
    assert engine._scheduler.reused - before > 150  # the chat's cells were still there


def _recording_steps(scheduler) -> list[int]:
    """The size of every step the scheduler runs from now on (on the worker thread)."""
    sizes: list[int] = []
    measured = scheduler.pacer.measured

    def recorded(tokens, seconds, long_read):
        sizes.append(tokens)
        measured(tokens, seconds, long_read)

    scheduler.pacer.measured = recorded
    return sizes


async def test_a_long_prompt_after_a_slow_phase_is_read_in_as_many_steps_as_on_a_quiet_machine(engine):
    """The slow steps that once left the prompt reader at one token a step for good (another
    process on the cores: 50 tokens in 7 s, 7 in 2 s, 3 in 1 s), then a long prompt: read alone, it
    goes in whole batches, as it does on a quiet machine; beside a generating sequence, within a
    few steps of the quiet count."""
    scheduler = engine._scheduler
    document = [{"role": "user", "content": "Summarize: " + "The keeper logged every ship that passed. " * 80}]
    length = len(engine.tokenize_chat(document))
    assert length > 600

    copies: list[bool] = []

    async def read(beside: bool) -> tuple[int, int]:
        """The steps that read a new copy of the document, and its length."""
        sizes = _recording_steps(scheduler)
        try:
            other = None
            if beside:
                other = engine.submit(STORY, Sampling(max_tokens=400, temperature=0))
                while other.completion_tokens < 2:
                    await asyncio.sleep(0.01)
            first = len(sizes)
            # a new document each time, so that nothing of it is in the cache
            copies.append(beside)
            text = f"Copy {len(copies)}. " + document[0]["content"]
            generation = engine.submit([{"role": "user", "content": text}], Sampling(max_tokens=1, temperature=0))
            await collect(generation)
            if other is not None:
                other.cancel()
                await collect(other)
            steps = len([s for s in sizes[first:] if s > 1]) if beside else len(sizes) - first
            return steps, generation.prompt_tokens
        finally:
            del scheduler.pacer.measured

    (quiet_alone, tokens), (quiet_beside, _) = await read(beside=False), await read(beside=True)
    assert quiet_alone == -(-tokens // scheduler.n_batch)
    for size, seconds in ((50, 7.0), (7, 2.0), (3, 1.0)):
        scheduler.pacer.measured(size, seconds, long_read=True)
    assert (await read(beside=False))[0] == quiet_alone
    for size, seconds in ((50, 7.0), (7, 2.0), (3, 1.0)):
        scheduler.pacer.measured(size, seconds, long_read=True)
    assert (await read(beside=True))[0] <= 1.2 * quiet_beside + 3, quiet_beside


@pytest.mark.parametrize(
    ("given", "spins", "policy"),
    [
        ({}, str(SPINS), "ACTIVE"),
        ({"GOMP_SPINCOUNT": "5000"}, "5000", None),
        ({"OMP_WAIT_POLICY": "PASSIVE"}, None, "PASSIVE"),
    ],
)
def test_openmps_threads_spin_briefly_before_they_sleep_unless_the_operator_says(given, spins, policy):
    """Set before llama.cpp loads libgomp (which reads it once): an operator's own setting stands.
    The policy is ACTIVE with the count set here, so that libgomp's spin, once a second model's
    thread has a team too, is cut to 1,000 rather than 100 (`edge_runtime.openmp`)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    ran = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, edge_runtime; print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))",
        ],
        env={**environment, **given},
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.split() == [str(spins), str(policy)]


@pytest.mark.skipif(sys.platform != "linux", reason="llama.cpp links GCC's OpenMP in Linux builds")
def test_the_bundled_llama_cpp_links_gnu_openmp_which_the_policy_is_set_for(tmp_path, monkeypatch):
    """The policy ACTIVE is safe only in libgomp, where a spin count bounds it; the wheels built
    here link libgomp, and a library that names another runtime (or none) gets no policy."""
    assert links_libgomp()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libggml-cpu.so").write_bytes(b"\x7fELF ... libomp.so ...")
    monkeypatch.setattr(
        "importlib.util.find_spec", lambda name: SimpleNamespace(submodule_search_locations=[str(tmp_path)])
    )
    assert not links_libgomp()
