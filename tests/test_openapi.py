"""/openapi.json describes the server as it is, so that it cannot drift from it: every route the app
serves is described and nothing else is, bodies the server accepts are valid by it, and bodies it
calls invalid the server refuses (schemathesis fuzzes the rest, `tests/test_fuzz.py`)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema
import pytest

from gateway.app import ROUTES
from gateway.openapi import SPEC
from tests.conftest import APP_KEYS

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    (
        "/v1/chat/completions",
        {"model": "smollm2", "n": 2, "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]},
    ),
    (
        "/v1/chat/completions",
        {
            "model": "gpt-fake",
            "max_tokens": 2,
            "stop": ["\n", "END"],
            "tools": [TOOL],
            "tool_choice": "auto",
            "messages": [
                {"role": "user", "content": "Look it up."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "found"},
            ],
        },
    ),
    ("/v1/embeddings", {"model": "smollm2", "input": ["one text", "another"], "encoding_format": "base64"}),
    ("/v1/completions", {"model": "smollm2", "prompt": "Once upon", "max_tokens": 2}),
    ("/v1/responses", {"model": "smollm2", "input": [{"role": "user", "content": "Hi"}], "max_output_tokens": 16}),
    (
        "/v1/messages",
        {"model": "smollm2", "max_tokens": 2, "system": [{"type": "text", "text": "Be terse."}],
         "messages": [{"role": "user", "content": "Hi"}]},
    ),
    ("/v1/messages/count_tokens", {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}]}),
    ("/v1/route", {"model": "auto", "messages": [{"role": "user", "content": "Hi"}]}),
]  # fmt: skip
REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {"model": "smollm2", "n": 0, "messages": [{"role": "user", "content": "Hi"}]}),
    ("/v1/chat/completions", {"model": "smollm2", "messages": []}),
    ("/v1/embeddings", {"model": "smollm2", "input": []}),
    ("/v1/messages", {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}]}),  # no max_tokens
    ("/v1/messages/count_tokens", {"model": "smollm2"}),
    ("/v1/feedback", {"request_id": "r", "score": 2}),
]


def request_schema(path: str) -> dict[str, Any]:
    return SPEC["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]


def test_every_route_the_app_serves_is_described_and_nothing_else():
    served = {
        (re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path), method.lower())
        for route in ROUTES
        for method in route.methods or ()
        if method != "HEAD"
    }
    described = {(path, method) for path, operations in SPEC["paths"].items() for method in operations}
    assert served == described


def test_the_description_is_valid_openapi():
    from openapi_spec_validator import validate

    validate(SPEC)


@pytest.mark.parametrize(("path", "body"), ACCEPTED, ids=[f"{p} {i}" for i, (p, _) in enumerate(ACCEPTED)])
def test_what_the_server_accepts_is_valid_by_the_description(gateway, path, body):
    jsonschema.Draft202012Validator(request_schema(path)).validate(body)
    answer = httpx.post(
        gateway.url + path, json=body, headers={"authorization": f"Bearer {APP_KEYS['alpha']}"}, timeout=60
    )
    assert answer.status_code == 200, answer.text[:300]


@pytest.mark.parametrize(("path", "body"), REFUSED, ids=[f"{p} {i}" for i, (p, _) in enumerate(REFUSED)])
def test_what_the_description_calls_invalid_the_server_refuses(gateway, path, body):
    assert not jsonschema.Draft202012Validator(request_schema(path)).is_valid(body)
    answer = httpx.post(
        gateway.url + path, json=body, headers={"authorization": f"Bearer {APP_KEYS['alpha']}"}, timeout=60
    )
    assert answer.status_code == 400, answer.text[:300]
