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

    async def text(self):
        yield self.written

    def cancel(self) -> None:
        self.cancelled = True


class Scripted:
    """An edge engine that answers each submission with the next text of a script."""

    name = "scripted"
    n_ctx = 4096
    n_vocab = 100

    class config:  # noqa: N801 - EdgeModelConfig's one field read here
        capabilities = None

    def __init__(self, *texts: str, finish: FinishReason = FinishReason.STOP) -> None:
        self.texts, self.finish, self.submitted = list(texts), finish, []

    def tokenize_chat(self, messages):
        return [1, 2, 3, 4, 5]

    def submit_tokens(self, prompt, sampling, owner="", sharing=None, gate=None):
        self.submitted.append(sampling)
        return Written(self.texts.pop(0), sampling, self.finish)


def ask(tools_schema: dict, stream: bool = False) -> object:
    body = {
        "model": "scripted",
        "messages": [{"role": "user", "content": "Count."}],
        "tools": [{"type": "function", "function": {"name": "count", "parameters": tools_schema}}],
        "tool_choice": "required",
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


async def test_a_streamed_answer_that_needs_a_check_goes_out_once_it_passes():
    engine = Scripted(call(25), call(3))
    stream = await EdgeModel(engine).stream(ask(BOUNDED, stream=True))
    chunks = [chunk async for chunk in stream]
    calls = [c["choices"][0]["delta"].get("tool_calls") for c in chunks if c["choices"][0]["delta"].get("tool_calls")]
    arguments = "".join(part["function"].get("arguments", "") for (part,) in calls)
    assert json.loads(arguments) == {"n": 3}


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
