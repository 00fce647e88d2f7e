"""Any JSON Schema on the edge (`edge_runtime.grammar`, `router.edge`): what a grammar can hold is
held while sampling; what it cannot (a number's bounds, `not`, a format) is checked after, the
answer sampled again, and refused before it goes out if it still breaks the schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import jsonschema
import pytest

from edge_runtime import Sampling
from edge_runtime.grammar import ANY, GrammarError, for_grammar, schema_grammar
from edge_runtime.sampling import FinishReason
from router.edge import RESAMPLES, EdgeModel
from router.errors import InvalidOutput, InvalidRequest
from router.request import parse_chat_request

CLAUDE_CODE_ARGS = {  # a property of Claude Code's Workflow tool: any value, described
    "type": "object",
    "properties": {"name": {"type": "string"}, "args": {"description": "Optional input value, verbatim."}},
    "required": ["name"],
}


def test_a_schema_of_annotations_alone_is_any_value_not_an_object():
    written, exact = for_grammar(CLAUDE_CODE_ARGS)
    assert written["properties"]["args"] == ANY and exact
    assert for_grammar(True) == (ANY, True) and for_grammar({})[0] == ANY
    assert for_grammar({"title": "x", "examples": [1]}) == (ANY, True)


def test_what_a_grammar_holds_needs_no_check():
    for schema in (
        {"type": "object", "properties": {"a": {"type": ["string", "null"], "maxLength": 3}}, "required": ["a"]},
        {"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 1, "maxItems": 2},
        {"type": "string", "format": "date"},
        {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}}},
        {"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "unknownKeyword": 3},
    ):
        assert schema_grammar(schema).check is None, schema


def test_what_a_grammar_cannot_hold_is_checked_after_sampling():
    for schema, good, bad in (
        ({"type": "integer", "minimum": 0, "maximum": 10**6}, 7, 9999999999999999),
        ({"type": "number", "exclusiveMinimum": 0}, 0.5, 0),
        ({"type": "integer", "multipleOf": 5}, 10, 11),
        ({"type": "string", "format": "email"}, "a@b.example", "not an address"),
        ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [1, 2], [1, 1]),
        ({"type": "object", "properties": {"a": {"not": {"type": "null"}}}}, {"a": 1}, {"a": None}),
        ({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}, -1, 1),
        ({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"a": 1, "b": 2}, {"a": 1}),
    ):
        made = schema_grammar(schema)
        assert made.check is not None, schema
        assert made.check(good) is None
        problem = made.check(bad)
        assert isinstance(problem, str) and problem, schema


def test_an_integer_bounded_to_a_few_values_is_written_as_their_list():
    assert for_grammar({"type": "integer", "minimum": 1, "maximum": 3}) == ({"enum": [1, 2, 3]}, True)
    assert for_grammar({"type": "integer", "exclusiveMinimum": 0, "maximum": 100, "multipleOf": 25})[0] == {
        "enum": [25, 50, 75, 100]
    }
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 0}
    assert for_grammar({**draft4, "maximum": 3, "exclusiveMaximum": True})[0] == {"enum": [0, 1, 2]}
    assert for_grammar({"type": "integer", "minimum": 0}) == ({"type": "integer"}, False)  # unbounded: checked


def test_a_schema_that_is_no_json_schema_or_reaches_outside_is_refused():
    for schema in ({"type": "objekt"}, {"required": "a"}, {"$ref": "https://example.com/schema.json"}, 3):
        with pytest.raises(GrammarError):
            schema_grammar(schema)


def test_the_grammar_of_a_bounded_number_is_still_a_number():
    made = schema_grammar({"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740991}}})
    assert "integer" in made.gbnf and made.check is not None
    assert (
        made.check({"n": 9999999999999999}) == "9999999999999999 is greater than the maximum of 9007199254740991 (at n)"
    )


# --- resampling, on a scripted engine --------------------------------------------------------
@dataclass
class Written:
    """A generation that writes a given text, as the engine's `Generation` streams one."""

    written: str
    sampling: Sampling
    finish_reason: FinishReason = FinishReason.STOP
    prompt_tokens: int = 5
    completion_tokens: int = 3
    logprobs: list = field(default_factory=list)
    stop_sequence: str | None = None
    confidence: float | None = None
    queued_at: float = 0.0
    started_at: float = 0.0
    ended_at: float = 0.0
    cancelled: bool = False
    piece: int = 0  # written in pieces of this many characters, as tokens come (0: at once)

    async def text(self):
        size = self.piece or len(self.written) or 1
        for i in range(0, len(self.written), size):
            yield self.written[i : i + size]

    def cancel(self) -> None:
        self.cancelled = True


class Scripted:
    """An edge engine that answers each submission with the next text of a script."""

    name = "scripted"
    n_ctx = 4096
    n_vocab = 100

    class config:  # noqa: N801 - EdgeModelConfig's one field read here
        capabilities = None

    def __init__(self, *texts: str, finish: FinishReason = FinishReason.STOP, piece: int = 0) -> None:
        self.texts, self.finish, self.submitted, self.piece = list(texts), finish, [], piece

    def tokenize_chat(self, messages):
        return [1, 2, 3, 4, 5]

    def submit_tokens(self, prompt, sampling, owner="", sharing=None, gate=None):
        self.submitted.append(sampling)
        return Written(self.texts.pop(0), sampling, self.finish, piece=self.piece)


OTHER = {"type": "function", "function": {"name": "other", "parameters": {"type": "object", "properties": {}}}}


def ask(tools_schema: dict, stream: bool = False, choice: str = "required", also: tuple[dict, ...] = ()) -> object:
    body = {
        "model": "scripted",
        "messages": [{"role": "user", "content": "Count."}],
        "tools": [{"type": "function", "function": {"name": "count", "parameters": tools_schema}}, *also],
        "tool_choice": choice,
        "temperature": 0,
        "stream": stream,
    }
    return parse_chat_request(body, {"app": "test"})


BOUNDED = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}, "required": ["n"]}


def call(n: object) -> str:
    return json.dumps({"name": "count", "arguments": {"n": n}})


async def test_a_call_that_breaks_its_schema_is_sampled_again_and_the_one_that_holds_goes_out():
    engine = Scripted(call(25), call(7))
    answer = await EdgeModel(engine).complete(ask(BOUNDED))
    (tool_call,) = answer.body["choices"][0]["message"]["tool_calls"]
    assert json.loads(tool_call["function"]["arguments"]) == {"n": 7}
    assert [s.temperature for s in engine.submitted] == [0, 0.8]  # sampled again, not greedily again


async def test_a_call_that_breaks_its_schema_every_time_is_refused_not_sent():
    engine = Scripted(*[call(25)] * (RESAMPLES + 1))
    with pytest.raises(InvalidOutput) as refused:
        await EdgeModel(engine).complete(ask(BOUNDED))
    assert "25 is greater than the maximum of 10" in refused.value.message and refused.value.status == 502
    assert len(engine.submitted) == RESAMPLES + 1


def deltas(chunks: list[dict]) -> list[dict]:
    return [part for c in chunks for part in c["choices"][0]["delta"].get("tool_calls") or []]


async def test_a_streamed_call_names_its_tool_at_once_and_sends_arguments_that_pass():
    """The name goes out as soon as it is written, before the call is whole and checked; the
    arguments only once they pass, sampled again under that tool's grammar alone (its name is
    out), so what went out is never taken back."""
    engine = Scripted(call(25), call(3), piece=4)
    stream = await EdgeModel(engine).stream(ask(BOUNDED, stream=True, choice="auto", also=(OTHER,)))
    chunks, submitted_when_named = [], None
    async for chunk in stream:
        chunks.append(chunk)
        if submitted_when_named is None and deltas([chunk]):
            submitted_when_named = len(engine.submitted)
    named, *rest = deltas(chunks)
    assert named["function"] == {"name": "count", "arguments": ""} and submitted_when_named == 1
    assert json.loads("".join(part["function"]["arguments"] for part in rest)) == {"n": 3}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    first, again = engine.submitted
    assert "other" in first.grammar and "other" not in again.grammar and "count" in again.grammar
    assert "prose" not in again.grammar  # a call it must be
    assert stream.usage.completion_tokens == 3  # the answer that went out


async def test_prose_beside_a_checked_tool_streams_as_it_is_written():
    engine = Scripted("It is sunny in Paris today.", piece=4)
    stream = await EdgeModel(engine).stream(ask(BOUNDED, stream=True, choice="auto"))
    pieces = [c["choices"][0]["delta"].get("content") async for c in stream]
    assert "".join(p for p in pieces if p) == "It is sunny in Paris today." and len([p for p in pieces if p]) == 7


async def test_a_streamed_call_that_breaks_its_schema_every_time_ends_after_its_name_with_the_refusal():
    engine = Scripted(*[call(25)] * (RESAMPLES + 1), piece=5)
    stream = await EdgeModel(engine).stream(ask(BOUNDED, stream=True))
    chunks = []
    with pytest.raises(InvalidOutput) as refused:
        async for chunk in stream:
            chunks.append(chunk)
    assert [part["function"] for part in deltas(chunks)] == [{"name": "count", "arguments": ""}]
    assert "25 is greater than the maximum of 10" in refused.value.message


async def test_an_answer_cut_by_max_tokens_is_reported_cut_not_sampled_again():
    engine = Scripted('{"name": "count", "arguments": {"n": 2', finish=FinishReason.LENGTH)
    answer = await EdgeModel(engine).complete(ask(BOUNDED))
    assert answer.body["choices"][0]["finish_reason"] == "length" and len(engine.submitted) == 1


async def test_a_json_answer_is_checked_against_its_schema_too():
    schema = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}, "required": ["age"]}
    body = {
        "model": "scripted",
        "messages": [{"role": "user", "content": "Age?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
    }
    engine = Scripted('{"age": -4}', '{"age": 31}')
    answer = await EdgeModel(engine).complete(parse_chat_request(body, {"app": "test"}))
    assert json.loads(answer.body["choices"][0]["message"]["content"]) == {"age": 31}
    jsonschema.validate({"age": 31}, schema)


async def test_a_tool_schema_that_is_no_json_schema_is_a_400_naming_the_tool():
    with pytest.raises(InvalidRequest) as refused:
        await EdgeModel(Scripted()).complete(ask({"type": "objekt"}))
    assert refused.value.param == "tools[0]" and refused.value.code == "invalid_json_schema"
    assert "count" in refused.value.message
