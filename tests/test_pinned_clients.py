"""The Python clients that cannot be installed beside the suite's own, pointed at edgeway unchanged
from a virtual environment of their own (tests/pyclients): instructor in its TOOLS, TOOLS_STRICT,
JSON and JSON_SCHEMA modes and partial streaming, llama-index's OpenAILike (complete, chat, a
stream, a required tool call, a structured prediction) and DSPy's `Predict` through its LiteLLM
`dspy.LM` (a plain and a typed signature). Driven by tests/pyclients/clients.py
against a real gateway on loopback and the bundled edge model.

`.ci/run` makes the environment (`tests/pyclients/.venv`, from tests/pyclients/requirements.txt);
elsewhere, without it, these tests skip (under CI=true they fail)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import APP_KEYS

CLIENTS = Path(__file__).resolve().parent / "pyclients"
PYTHON = CLIENTS / ".venv" / "bin" / "python"
MODES = ("TOOLS", "TOOLS_STRICT", "JSON", "JSON_SCHEMA")


@pytest.fixture(scope="module")
def client_results(gateway) -> dict:
    if not PYTHON.is_file():
        missing = "make tests/pyclients/.venv from tests/pyclients/requirements.txt (see its first lines)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the pinned Python clients cannot run: {missing}")
        pytest.skip(f"the pinned Python clients cannot run: {missing}")
    ran = subprocess.run(
        [str(PYTHON), str(CLIENTS / "clients.py"), gateway.url, APP_KEYS["alpha"], "smollm2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout)


@pytest.mark.parametrize("mode", MODES)
def test_instructor_gets_the_model_it_asked_for(client_results, mode):
    got = client_results["instructor"]
    assert "error" not in got, got
    if mode == "JSON" and "model_wrote" in got[mode]:  # the schema only told: the model's answer, parsed
        assert got[mode]["model_wrote"] in ("InstructorRetryException", "IncompleteOutputException")
        return
    assert set(got[mode]) == {"country", "city"} and all(isinstance(v, str) for v in got[mode].values())


def test_instructors_partial_stream_builds_the_object_piece_by_piece(client_results):
    got = client_results["instructor"]
    assert "error" not in got, got
    assert got["partial"]["count"] > 1 and set(got["partial"]["last"]) == {"country", "city"}


def test_llama_index_openai_like(client_results):
    got = client_results["llama-index"]
    assert "error" not in got, got
    assert got["complete"] and got["chat"] and got["streamed"]
    assert got["tool"] == "get_weather"
    assert set(got["structured"]) == {"country", "city"}


def test_dspy_predicts_through_its_litellm_lm(client_results):
    got = client_results["dspy"]
    assert "error" not in got, got
    assert got["predict"] and all(isinstance(v, str) and v for v in got["typed"].values())
