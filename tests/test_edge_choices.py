"""`n > 1`: several answers to one prompt. On the edge the answers share the prompt's cells (the
first reads it, the others copy its KV cells and start from there); the cloud gets `n` as sent."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import openai
import pytest

from edge_runtime import EdgeEngine, EdgeModelConfig, Sampling
from tests.conftest import client_for

ASK = [{"role": "user", "content": "Name three colours, please."}]


def test_n_answers_on_the_edge_are_n_choices_with_the_prompt_counted_once(gateway):
    client = client_for(gateway)
    one = client.chat.completions.create(model="smollm2", messages=ASK, max_tokens=12, temperature=0)
    three = client.chat.completions.create(model="smollm2", messages=ASK, max_tokens=12, temperature=0, n=3)
    assert [c.index for c in three.choices] == [0, 1, 2]
    # Greedy decoding from copied cells is the same as from read ones: the copy is the prompt.
    assert {c.message.content for c in three.choices} == {one.choices[0].message.content}
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens


def test_n_streamed_answers_arrive_interleaved_by_their_index(gateway):
    client = client_for(gateway)
    whole = client.chat.completions.create(model="smollm2", messages=ASK, max_tokens=12, temperature=0)
    chunks = list(
        client.chat.completions.create(
            model="smollm2",
            messages=ASK,
            max_tokens=12,
            temperature=0,
            n=2,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    texts, finished = {0: "", 1: ""}, set()
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            if choice.finish_reason:
                finished.add(choice.index)
    assert texts == {0: whole.choices[0].message.content, 1: whole.choices[0].message.content}
    assert finished == {0, 1} and chunks[-1].usage.completion_tokens == 2 * whole.usage.completion_tokens


def test_sampled_answers_differ_by_seed_and_repeat_with_it(gateway):
    """A seed repeats its answers on an edge model running nothing else, whatever its prompt cache
    holds: the first request below reads the prompt afresh, the second finds it cached by the
    first and by the greedy request between them, and reads it afresh all the same."""
    client = client_for(gateway)
    ask = {"model": "smollm2", "messages": ASK, "max_tokens": 16, "temperature": 1.2, "seed": 7, "n": 3}
    first = [c.message.content for c in client.chat.completions.create(**ask).choices]
    client.chat.completions.create(model="smollm2", messages=ASK, max_tokens=4, temperature=0)
    again = [c.message.content for c in client.chat.completions.create(**ask).choices]
    assert first == again and len(set(first)) > 1


def test_the_cloud_gets_n_as_sent(gateway, upstream):
    client_for(gateway).chat.completions.create(model="gpt-fake", messages=ASK, n=2, max_tokens=5)
    assert upstream.requests[-1].body["n"] == 2


@pytest.mark.parametrize("n", [0, 129])
def test_an_n_out_of_range_is_a_clear_400(gateway, n):
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(gateway).chat.completions.create(model="smollm2", messages=ASK, n=n)
    assert caught.value.param == "n" and caught.value.code == "invalid_value"


@pytest.fixture(scope="module")
def engine():
    engine = EdgeEngine(EdgeModelConfig(name="smollm2", n_ctx=1024))
    engine.load()
    yield engine
    engine.close()


def test_siblings_share_the_prompt_cells_instead_of_reading_them_again(engine):
    prompt = engine.tokenize_chat([{"role": "user", "content": "Tell me about the sea. " * 20}])

    async def run() -> list[str]:
        first = engine.submit_tokens(prompt, Sampling(max_tokens=4, temperature=0.0))
        rest = [engine.submit_tokens(prompt, Sampling(max_tokens=4, temperature=0.0), sharing=first) for _ in range(3)]
        return [await _text(g) for g in [first, *rest]]

    before = engine._scheduler.reused
    texts = asyncio.run(run())
    assert len(set(texts)) == 1
    assert engine._scheduler.reused - before >= 3 * (len(prompt) - 1)  # each sibling skipped the whole prompt


def test_a_seeded_draw_reads_its_prompt_afresh_and_its_siblings_share_it(engine):
    """Logits over cells another request left differ in their last bits from logits read afresh,
    and a seeded draw near a boundary between two tokens turns on them: so a seeded request never
    starts from the prompt cache, while an unseeded one does."""
    prompt = engine.tokenize_chat([{"role": "user", "content": "Tell me about the river. " * 10}])

    async def run(sampling: Sampling, n: int = 1) -> list[str]:
        first = engine.submit_tokens(prompt, sampling)
        rest = [
            engine.submit_tokens(prompt, replace(sampling, seed=(sampling.seed or 0) + i), sharing=first)
            for i in range(1, n)
        ]
        return [await _text(g) for g in [first, *rest]]

    asyncio.run(run(Sampling(max_tokens=2, temperature=0.0)))  # leaves the prompt in the cache
    before = engine._scheduler.reused
    asyncio.run(run(Sampling(max_tokens=2, temperature=0.9)))
    assert engine._scheduler.reused - before == len(prompt) - 1  # unseeded: all but the last token from the cache

    seeded = Sampling(max_tokens=12, temperature=1.3, seed=11)
    before = engine._scheduler.reused
    first = asyncio.run(run(seeded, n=3))
    assert engine._scheduler.reused - before == 2 * (len(prompt) - 1)  # the siblings' shares, nothing cached
    assert asyncio.run(run(seeded, n=3)) == first and len(set(first)) > 1


def test_beside_another_request_a_seeded_draw_reads_from_the_cache_like_any_other(engine):
    """Beside a running request a seed cannot promise its text (the steps it shares round its
    logits), so it does not forget the kept prompts for nothing: it starts from them."""
    prompt = engine.tokenize_chat([{"role": "user", "content": "Tell me about the lake. " * 10}])
    busy = engine.tokenize_chat([{"role": "user", "content": "Count from one to a hundred."}])

    async def run() -> int:
        await _text(engine.submit_tokens(prompt, Sampling(max_tokens=2, temperature=0.0)))  # kept
        running = engine.submit_tokens(busy, Sampling(max_tokens=200, temperature=0.0))
        async for _ in running.text():  # generating: the seeded request will share its steps
            break
        before = engine._scheduler.reused
        await _text(engine.submit_tokens(prompt, Sampling(max_tokens=2, temperature=0.9, seed=5)))
        running.cancel()
        return engine._scheduler.reused - before

    assert asyncio.run(run()) == len(prompt) - 1


async def _text(generation) -> str:
    return "".join([piece async for piece in generation.text()])


# --- the sampling fields the edge honors through llama.cpp's own samplers -----------------------
REPEAT = [{"role": "user", "content": "Write the word cat twenty times."}]


def test_penalties_on_the_edge_stop_a_loop(gateway):
    client = client_for(gateway)
    plain = client.chat.completions.create(model="smollm2", messages=REPEAT, max_tokens=30, temperature=0)
    penalized = client.chat.completions.create(
        model="smollm2", messages=REPEAT, max_tokens=30, temperature=0, frequency_penalty=2.0, presence_penalty=1.0
    )
    said = plain.choices[0].message.content.lower()
    assert said.count("cat") >= 6  # greedy, the model loops
    assert penalized.choices[0].message.content.lower().count("cat") < said.count("cat") / 2


def test_logit_bias_in_the_edge_models_own_token_ids_bans_and_forces(gateway, upstream):
    client = client_for(gateway)
    plain = client.chat.completions.create(model="smollm2", messages=REPEAT, max_tokens=6, temperature=0, logprobs=True)
    first = plain.choices[0].logprobs.content[0].token
    token_id = _id_of(first)
    banned = client.chat.completions.create(
        model="smollm2", messages=REPEAT, max_tokens=6, temperature=0, logit_bias={str(token_id): -100}
    )
    assert not banned.choices[0].message.content.startswith(first)
    forced = client.chat.completions.create(
        model="smollm2", messages=REPEAT, max_tokens=6, temperature=0, logit_bias={str(token_id): 100}
    )
    assert forced.choices[0].message.content == first * 6
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="smollm2", messages=REPEAT, logit_bias={"99999999": 5})
    assert caught.value.param == "logit_bias"
    assert upstream.requests == []


def test_logit_bias_with_auto_means_the_providers_tokens_so_it_goes_to_the_cloud(gateway, upstream):
    raw = client_for(gateway).chat.completions.with_raw_response.create(
        model="auto", messages=REPEAT, max_tokens=5, logit_bias={"50256": -100}
    )
    assert raw.headers["x-edgeway-route"] == "cloud" and upstream.requests[-1].body["logit_bias"] == {"50256": -100}


def _id_of(piece: str) -> int:
    """The bundled model's id for the token that writes `piece`."""
    engine = EdgeEngine(EdgeModelConfig(name="smollm2", n_ctx=256))
    engine.load()
    try:
        return next(t for t in range(engine.n_vocab) if engine.token_bytes(t) == piece.encode())
    finally:
        engine.close()
