"""Speculative decoding with a draft model (`speculative: {mode: draft, draft_gguf: ...}`), on the
bundled model: the draft's cache follows each slot's sequence, its guesses never change a greedy
answer, and a draft that does not share the served model's vocabulary is refused."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from edge_runtime import EdgeEngine, EdgeModelConfig, Sampling
from edge_runtime.drafting import CATCH_UP, DraftModel, _vocab_mismatch
from edge_runtime.gguf import ModelFileError, resolve_gguf
from gateway.bench.draft_model import layer_count, skip_middle
from tests.test_edge_runtime import COPY, STORY, collect

BUNDLED = resolve_gguf("bundled:smollm2-135m")
QUOTE = [{"role": "user", "content": "Repeat after me, twice: the quick brown fox jumps over the lazy dog."}]


@pytest.fixture(scope="module")
def skipping_draft(tmp_path_factory) -> Path:
    """The bundled model without ten of its middle layers: a draft that is often wrong."""
    path = tmp_path_factory.mktemp("draft") / "skip10.gguf"
    skip_middle(BUNDLED, path, 10)
    return path


@pytest.fixture(scope="module")
def plain():
    made = EdgeEngine(EdgeModelConfig(n_ctx=1024, parallel=2))
    made.load()
    yield made
    made.close()


def test_the_cut_model_keeps_the_vocabulary_and_loses_the_layers(skipping_draft):
    assert layer_count(BUNDLED) == 30 and layer_count(skipping_draft) == 20


@pytest.mark.parametrize("draft", ["self", "skipping"])
async def test_greedy_answers_are_the_same_with_a_draft_model(plain, skipping_draft, draft):
    """The served model as its own draft agrees with nearly every guess; a draft without ten layers
    is mostly wrong. Either way each answer is the plain one, alone and two at once (two slots of
    the draft's cache, reused by the next requests). Side by side, answers that copy: a story's
    next word can be a near tie (0.04 apart in the logits), which any change in which cache cells a
    sequence gets may round the other way, with speculation or without; and two at once, the batch
    holding both reads each through other matrix shapes than alone, so a late near tie in a copy
    may round the other way too ("over lazy dogs." for "over lazy dog." once in CI): there each
    answer is the plain one for all but its last tenth, as a slot's cache mixed with the other's
    would not be."""
    path = BUNDLED if draft == "self" else skipping_draft
    speculative = {"mode": "draft", "draft_gguf": str(path)}
    drafting = EdgeEngine(EdgeModelConfig(n_ctx=1024, parallel=2, speculative=speculative))
    drafting.load()
    try:
        expected = {}
        for name, messages in (("copy", COPY), ("story", STORY), ("quote", QUOTE)):
            expected[name] = await collect(plain.submit(messages, Sampling(max_tokens=40, temperature=0)))
            assert await collect(drafting.submit(messages, Sampling(max_tokens=40, temperature=0))) == expected[name]
        both = await asyncio.gather(
            *(collect(drafting.submit(m, Sampling(max_tokens=40, temperature=0))) for m in (QUOTE, COPY))
        )
        for answer, alone in zip(both, (expected["quote"], expected["copy"]), strict=True):
            assert len(os.path.commonprefix([answer, alone])) >= 0.9 * len(alone), (answer, alone)
        state = drafting.state()
        assert state.drafted > 0
        if draft == "self":
            assert state.drafts_kept >= 0.9 * state.drafted
        else:
            assert state.drafts_kept < 0.5 * state.drafted
        before = state.drafted
        await collect(drafting.submit(COPY, Sampling(max_tokens=16, temperature=0.8, seed=3)))
        assert drafting.state().drafted == before  # a sampled answer never drafts
    finally:
        drafting.close()


@pytest.fixture(scope="module")
def draft(plain) -> DraftModel:
    import llama_cpp

    made = DraftModel(llama_cpp, BUNDLED, plain._llama._model.vocab, 1024, 2, 512, 2, 0)
    yield made
    made.close()


def cached(draft: DraftModel, slot: int) -> int:
    return int(draft.lib.llama_memory_seq_pos_max(draft.memory, slot)) + 1


def test_the_drafts_cache_holds_the_sequence_and_its_last_guesses(draft, plain):
    tokens = plain.tokenize_chat(COPY)
    (guesses,) = draft.propose([(0, tokens, 4)])
    assert len(guesses) == 4
    # the prompt and every guess but the last, which no next guess needed read
    assert draft.held[0] == tokens + guesses[:3] and cached(draft, 0) == len(tokens) + 3
    # the served model kept two guesses and wrote its own token after them: the third guess goes
    grown = tokens + guesses[:2] + [guesses[2] + 1]
    draft.propose([(0, grown, 2)])
    assert draft.held[0][: len(grown)] == grown and cached(draft, 0) == len(grown) + 1
    # the served model's slot keeps only the prompt once the request ends: so does the draft's
    draft.kept(0, len(tokens))
    assert draft.held[0] == tokens and cached(draft, 0) == len(tokens)
    draft.forget(0)
    assert 0 not in draft.held and cached(draft, 0) == 0


def test_a_long_prompt_is_read_a_share_at_a_time_before_the_draft_guesses(draft, plain):
    tokens = plain.tokenize_chat([{"role": "user", "content": "Summarize: " + "The tide came in. " * 80}])
    steps = 0
    while True:
        steps += 1
        (guesses,) = draft.propose([(1, tokens, 3)])
        if guesses:
            break
        assert cached(draft, 1) == len(draft.held[1]) == steps * CATCH_UP
    assert steps == -(-len(tokens) // CATCH_UP)
    # another request in the same slot: read again from where the two part
    other = tokens[:20] + plain.tokenize_text(" and went out again")
    draft.propose([(1, other, 0)])
    assert draft.held[1] == other and cached(draft, 1) == len(other)
    draft.forget(1)


def test_a_draft_with_another_vocabulary_is_refused():
    texts = {"ours": [b"<s>", b"the", b"lens"], "theirs": [b"<s>", b"the", b"lamp"]}
    lib = SimpleNamespace(
        llama_vocab_n_tokens=lambda vocab: len(texts[vocab]),
        llama_vocab_get_text=lambda vocab, token: texts[vocab][token],
    )
    assert _vocab_mismatch(lib, "ours", "ours") == ""
    assert _vocab_mismatch(lib, "ours", "theirs") == "token 2 is b'lamp' there, not b'lens'"
    texts["short"] = [b"<s>", b"the"]
    assert _vocab_mismatch(lib, "ours", "short") == "its vocabulary has 2 tokens, the served model's 3"


def test_a_missing_draft_file_is_named_when_the_model_loads():
    engine = EdgeEngine(EdgeModelConfig(speculative={"mode": "draft", "draft_gguf": "/nowhere/draft.gguf"}))
    with pytest.raises(ModelFileError, match="model file not found: /nowhere/draft.gguf"):
        engine.load()
    engine.close()


async def test_the_drafts_cache_holds_what_it_counts_through_cuts_and_reused_slots(plain):
    """Drafting sequences beside a long prompt whose steps short requests cut, slots freed and
    taken again: after every step the draft's cache holds exactly the tokens it counts for each
    slot."""
    speculative = {"mode": "draft", "draft_gguf": str(BUNDLED)}
    drafting = EdgeEngine(EdgeModelConfig(n_ctx=2048, parallel=4, speculative=speculative))
    drafting.load()
    scheduler = drafting._scheduler
    draft = scheduler.draft
    mismatches: list[tuple[int, int, int]] = []
    step = scheduler.step

    def checked_step():  # on the worker thread, after each step
        sampled = step()
        for slot, held in draft.held.items():
            if cached(draft, slot) != len(held):
                mismatches.append((slot, cached(draft, slot), len(held)))
        return sampled

    scheduler.step = checked_step
    try:
        long = drafting.submit(
            [{"role": "user", "content": "Summarize: " + "The tide came in over the flats. " * 60}],
            Sampling(max_tokens=8, temperature=0),
        )
        answers = [drafting.submit(COPY, Sampling(max_tokens=24, temperature=0))]
        while scheduler.interrupt.cuts == 0 and len(answers) < 12:  # one lands between steps at most rarely
            await asyncio.sleep(0.1)
            answers.append(drafting.submit(QUOTE, Sampling(max_tokens=12, temperature=0)))
        assert all([await collect(a) for a in answers]) and await collect(long)
        cuts, state = scheduler.interrupt.cuts, drafting.state()
    finally:
        del scheduler.step
        drafting.close()
    assert mismatches == []
    assert cuts > 0 and state.drafted > 0 and draft.failures == 0
