"""The scheduler's step, phase by phase, on the bundled model: what goes in the batch for the
generating sequences and for the prompts being read, what the decode does with it, and what is
sampled after. `BatchScheduler.step` is these four in order; the engine's tests drive it whole."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import llama_cpp
import pytest

from edge_runtime.batch import BatchScheduler
from edge_runtime.generation import Generation, Outbox
from edge_runtime.gguf import resolve_gguf
from edge_runtime.sampling import Sampling


@pytest.fixture(scope="module")
def llama() -> llama_cpp.Llama:
    path = resolve_gguf("bundled:smollm2-135m")
    return llama_cpp.Llama(model_path=str(path), n_ctx=64, n_threads=1, verbose=False)


@pytest.fixture
def scheduler(llama) -> Iterator[BatchScheduler[Generation]]:
    made: BatchScheduler[Generation] = BatchScheduler(llama, n_ctx=1024, parallel=3, n_batch=256, n_threads=1)
    try:
        yield made
    finally:
        made.close()


def job(llama, text: str, max_tokens: int = 4) -> Generation:
    prompt = llama.tokenize(text.encode())
    return Generation(asyncio.new_event_loop(), prompt, Sampling(temperature=0), max_tokens, Outbox())


def test_prompts_are_put_in_the_batch_the_shortest_first_and_a_whole_one_asks_for_logits(llama, scheduler):
    long, short = job(llama, "The committee reviewed the figures. " * 20), job(llama, "Hello there.")
    scheduler.admit(long)
    scheduler.admit(short)
    n = scheduler._fill_generating(scheduler.active)
    assert n == 0  # nothing generates yet
    n, read, long_read = scheduler._fill_reading(scheduler.active, n)
    assert [seq.job for seq, _ in read][0] is short and all(start == 0 for _, start in read)
    by_job = {seq.job: seq for seq in scheduler.active}
    assert by_job[short].read == len(short.prompt) and by_job[short].logit_index is not None
    assert n == sum(seq.read for seq in scheduler.active) and not long_read  # both fit one quiet step


def test_the_decode_marks_prompts_read_and_sampling_gives_each_its_next_token(llama, scheduler):
    first = job(llama, "Hello there.")
    scheduler.admit(first)
    n = scheduler._fill_generating(scheduler.active)
    n, read, long_read = scheduler._fill_reading(scheduler.active, n)
    assert scheduler._decode(n, read, long_read) and first.prompt_read
    (pair,) = scheduler._sampled()
    seq, token = pair
    assert seq.job is first and seq.last == token and 0 <= token < scheduler.n_vocab
    # the next step: the generating sequence feeds its last token, one position on
    seq.job.completion_tokens = 1
    seq.logit_index = None
    assert scheduler._fill_generating(scheduler.active) == 1 and seq.logit_index == 0


def test_an_empty_step_decodes_nothing(scheduler):
    assert scheduler._fill_generating([]) == 0
    assert scheduler._decode(0, [], False) is False
    assert scheduler.step() == []
