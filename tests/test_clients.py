"""The clients teams use, pointed at edgeway unchanged: LangChain, the OpenAI Agents SDK,
pydantic-ai, LiteLLM's SDK and the async OpenAI client, against a real gateway on loopback and the
bundled edge model.

instructor 1.17 (it pins jiter below what openai 3 needs) and llama-index's OpenAI LLMs (openai
below 3) cannot be installed beside the openai 3 the Agents SDK and `llm` need; they are checked
by hand (docs/clients.md)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from pydantic import BaseModel

from tests.conftest import APP_KEYS, async_client_for

EDGE = "smollm2"


def base_url(gateway) -> str:
    return gateway.url + "/v1"


# --- LangChain ------------------------------------------------------------------------------------
def chat_model(gateway, **options):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=EDGE, base_url=base_url(gateway), api_key=APP_KEYS["alpha"], max_retries=0, **options)


def test_langchain_invoke_and_stream(gateway):
    llm = chat_model(gateway, max_tokens=8, temperature=0)
    answer = llm.invoke("Say hello.")
    assert answer.content and answer.usage_metadata["output_tokens"] <= 8
    assert answer.response_metadata["model_name"] == EDGE
    pieces = [chunk.content for chunk in llm.stream("Say hello.")]
    assert "".join(pieces) == answer.content  # greedy: the same words, streamed


def test_langchain_bind_tools_gets_a_tool_call_from_the_edge(gateway):
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city now."""
        return f"sunny in {city}"

    llm = chat_model(gateway, max_tokens=60, temperature=0).bind_tools([get_weather], tool_choice="required")
    answer = llm.invoke("What is the weather in Paris?")
    (call,) = answer.tool_calls
    assert call["name"] == "get_weather" and isinstance(call["args"]["city"], str)


class Capital(BaseModel):
    country: str
    city: str


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_langchain_with_structured_output(gateway, method):
    llm = chat_model(gateway, max_tokens=60, temperature=0).with_structured_output(Capital, method=method)
    found = llm.invoke("What is the capital of France?")
    assert isinstance(found, Capital) and found.country and found.city


# --- the OpenAI Agents SDK --------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["responses", "chat_completions"])
def test_an_agent_with_one_tool_runs_on_the_edge(gateway, api):
    from agents import (
        Agent,
        ModelSettings,
        Runner,
        function_tool,
        set_default_openai_api,
        set_default_openai_client,
        set_tracing_disabled,
    )

    calls: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city now."""
        calls.append(city)
        return f"It is sunny in {city}."

    set_tracing_disabled(True)  # the SDK would send its traces to OpenAI
    set_default_openai_client(async_client_for(gateway), use_for_tracing=False)
    set_default_openai_api(api)
    agent = Agent(
        name="weather",
        instructions="Answer with the weather tool.",
        tools=[get_weather],
        model=EDGE,
        model_settings=ModelSettings(tool_choice="required", max_tokens=60, temperature=0),
        tool_use_behavior="stop_on_first_tool",  # the tool's answer is the agent's: one round trip
    )
    result = asyncio.run(Runner.run(agent, "What is the weather in Paris?", max_turns=3))
    assert len(calls) == 1 and result.final_output == f"It is sunny in {calls[0]}."


# --- pydantic-ai ------------------------------------------------------------------------------------
def pydantic_agent(gateway, output_type=str, **options):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=base_url(gateway), api_key=APP_KEYS["alpha"])
    model = OpenAIChatModel(EDGE, provider=provider)
    return Agent(model, output_type=output_type, model_settings={"temperature": 0, "max_tokens": 60}, **options)


def test_pydantic_ai_runs_and_streams_on_the_edge(gateway):
    agent = pydantic_agent(gateway)
    result = agent.run_sync("Say hello.")
    assert result.output and result.usage.output_tokens > 0

    async def streamed() -> str:  # a new agent: the first one's HTTP client belongs to run_sync's loop
        async with pydantic_agent(gateway).run_stream("Say hello.") as run:
            return "".join([piece async for piece in run.stream_text(delta=True)])

    assert asyncio.run(streamed()).strip()


@pytest.mark.parametrize("kind", ["tool", "native"])
def test_pydantic_ai_structured_output_from_the_edge(gateway, kind):
    """A tool-call output (pydantic-ai's default) and a native JSON-schema output both parse."""
    from pydantic_ai import NativeOutput, ToolOutput

    output = ToolOutput(Capital) if kind == "tool" else NativeOutput(Capital)
    result = pydantic_agent(gateway, output, retries=2).run_sync(
        "What is the capital of France? Give the country and the city."
    )
    assert isinstance(result.output, Capital) and result.output.city


def test_pydantic_ai_calls_a_tool_on_the_edge(gateway):
    calls: list[str] = []
    agent = pydantic_agent(gateway)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city now."""
        calls.append(city)
        return f"It is sunny in {city}."

    def first_step_calls(context) -> dict:  # the 135M model calls when it must: on the first step
        return {"temperature": 0, "max_tokens": 60, "tool_choice": "required" if context.run_step <= 1 else "auto"}

    result = agent.run_sync("What is the weather in Paris?", model_settings=first_step_calls)
    assert calls and result.output


# --- Simon Willison's llm ----------------------------------------------------------------------------
def test_the_llm_cli_prompts_streams_and_follows_a_schema(gateway, tmp_path):
    """`llm` with edgeway as an OpenAI-compatible model (extra-openai-models.yaml), as its docs say."""
    (tmp_path / "extra-openai-models.yaml").write_text(
        f"- model_id: edgeway\n  model_name: {EDGE}\n  api_base: {base_url(gateway)}\n"
        "  api_key_name: edgeway\n  supports_schema: true\n"
    )
    env = {**os.environ, "LLM_USER_PATH": str(tmp_path)}
    ask = [
        sys.executable,
        "-m",
        "llm",
        "prompt",
        "-m",
        "edgeway",
        "--key",
        APP_KEYS["alpha"],
        "-o",
        "max_tokens",
        "40",
        "-o",
        "temperature",
        "0",
    ]
    plain = subprocess.run([*ask, "--no-stream", "Say hello."], capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 0 and plain.stdout.strip(), plain.stderr
    streamed = subprocess.run([*ask, "Say hello."], capture_output=True, text=True, env=env, timeout=60)
    assert streamed.returncode == 0 and streamed.stdout.strip(), streamed.stderr
    shaped = subprocess.run(
        [
            *ask,
            "--schema",
            "country, city",
            "What is the capital of France? Answer as JSON with the country and the city.",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shaped.returncode == 0, shaped.stderr
    assert set(json.loads(shaped.stdout)) == {"country", "city"}


# --- LiteLLM's SDK as a client ----------------------------------------------------------------------
def test_litellm_sdk_as_a_client(gateway):
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    ask = {
        "model": f"openai/{EDGE}",
        "api_base": base_url(gateway),
        "api_key": APP_KEYS["alpha"],
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 8,
    }
    answer = litellm.completion(**ask)
    assert answer.choices[0].message.content and answer.usage.completion_tokens <= 8
    streamed = litellm.completion(**ask, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in streamed)


# --- the async OpenAI client --------------------------------------------------------------------------
def test_the_async_openai_client_chats_streams_and_embeds(gateway):
    async def go() -> None:
        client = async_client_for(gateway)
        answer = await client.chat.completions.create(
            model=EDGE, messages=[{"role": "user", "content": "Hi"}], max_tokens=5
        )
        assert answer.choices[0].message.content
        stream = await client.chat.completions.create(
            model=EDGE, messages=[{"role": "user", "content": "Hi"}], max_tokens=5, stream=True
        )
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        vectors = await client.embeddings.create(model=EDGE, input=["one", "two"])
        assert len(vectors.data) == 2
        response = await client.responses.create(model=EDGE, input="Hi", max_output_tokens=5)
        assert response.output_text
        await client.close()

    asyncio.run(go())


def test_structured_output_arguments_are_json(gateway):
    """What the agent and LangChain read back is JSON in the schema, not prose around it."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url(gateway), api_key=APP_KEYS["alpha"], max_retries=0)
    parsed = client.chat.completions.parse(
        model=EDGE,
        messages=[
            {"role": "user", "content": "What is the capital of France? Answer as JSON with the country and the city."}
        ],
        response_format=Capital,
        max_tokens=60,
        temperature=0,
    )
    assert isinstance(parsed.choices[0].message.parsed, Capital)
    json.loads(parsed.choices[0].message.content)
