"""A constrained answer's draw (`edge_runtime.sampler`): the grammar is asked about the token drawn,
and applied to every candidate only when it refuses that token; the answer is the one the grammar
applied first would give."""

from __future__ import annotations

import asyncio
import json

import pytest

from edge_runtime import EdgeEngine, EdgeModelConfig, Sampling
from edge_runtime.grammar import json_grammar
from edge_runtime.sampling import FinishReason

CAPITAL = {
    "type": "object",
    "properties": {"country": {"type": "string"}, "city": {"type": "string"}},
    "required": ["country", "city"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def engine():
    made = EdgeEngine(EdgeModelConfig(n_ctx=2048))
    made.load()
    yield made
    made.close()


def answer(engine: EdgeEngine, ask: str, sampling: Sampling, grammar_first: bool = False) -> tuple[str, bool]:
    """The answer, and whether it ended where the grammar let it (not cut by max_tokens)."""
    assert engine._scheduler is not None
    engine._scheduler.grammar_first = grammar_first
    try:

        async def collect() -> tuple[str, bool]:
            generation = engine.submit([{"role": "user", "content": ask}], sampling)
            text = "".join([piece async for piece in generation.text()])
            return text, generation.finish_reason is FinishReason.STOP

        return asyncio.run(collect())
    finally:
        engine._scheduler.grammar_first = False


@pytest.mark.parametrize(
    "ask, grammar",
    [
        ("What is the capital of France? Answer as JSON.", json_grammar(CAPITAL)),
        ("List three planets as JSON.", json_grammar(None)),
        # a grammar the model would not write on its own: its first choice is refused at once
        ("Write a short poem about the sea.", 'root ::= "The answer is " ("yes" | "no") "."'),
    ],
)
def test_a_greedy_answer_under_a_grammar_is_the_one_the_grammar_applied_first_gives(engine, ask, grammar):
    sampling = Sampling(max_tokens=40, temperature=0, grammar=grammar)
    checked, ended = answer(engine, ask, sampling)
    assert (checked, ended) == answer(engine, ask, sampling, grammar_first=True)
    if grammar.startswith('root ::= "The answer'):
        assert ended and checked in ("The answer is yes.", "The answer is no.")
    elif ended:
        json.loads(checked)


def test_a_sampled_answer_under_a_grammar_keeps_to_it_and_repeats_with_its_seed(engine):
    sampling = Sampling(max_tokens=60, temperature=1.0, seed=11, grammar=json_grammar(CAPITAL))
    answers = {answer(engine, "Name a country and its capital as JSON.", sampling) for _ in range(2)}
    assert len(answers) == 1
    written, ended = answers.pop()
    assert written.lstrip().startswith("{")
    if ended:
        assert set(json.loads(written)) == {"country", "city"}
