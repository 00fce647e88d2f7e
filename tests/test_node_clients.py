"""The Node clients, pointed at edgeway unchanged: the `openai` npm package (chat, stream, JSON
schema, a required tool call, Responses) and the Vercel AI SDK through both its openai-compatible
and its openai providers (the latter on Chat Completions and on Responses): `generateText`,
`streamText`, `generateObject`, `streamObject` and a tool it runs. Driven by tests/node/clients.mjs
against a real gateway on loopback and the bundled edge model.

`.ci/run` installs them (`npm ci --prefix tests/node`); elsewhere, without node or the packages,
these tests skip (under CI=true they fail)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import APP_KEYS

NODE_DIR = Path(__file__).resolve().parent / "node"
AI_SDK = ["ai-sdk openai-compatible", "ai-sdk openai chat", "ai-sdk openai responses"]


@pytest.fixture(scope="module")
def node_results(gateway) -> dict:
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "ai").is_dir():
        missing = "node is not installed" if node is None else "run `npm ci --prefix tests/node`"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Node clients cannot run: {missing}")
        pytest.skip(f"the Node clients cannot run: {missing}")
    ran = subprocess.run(
        [node, str(NODE_DIR / "clients.mjs"), gateway.url, APP_KEYS["alpha"], "smollm2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout)


def test_the_openai_npm_package(node_results):
    got = node_results["openai"]
    assert "error" not in got, got
    assert got["plain"] and got["streamed"] and got["responses"]
    assert set(got["structured"]) == {"country", "city"} and got["tool"] == "get_weather"


@pytest.mark.parametrize("client", AI_SDK)
def test_the_vercel_ai_sdk(node_results, client):
    got = node_results[client]
    assert "error" not in got, got
    assert got["plain"] and got["streamed"]
    assert set(got["structured"]) == {"country", "city"} and set(got["streamedObject"]) == {"country", "city"}
    assert got["tool"] == "get_weather" and got["toolResult"].startswith("It is sunny in")
