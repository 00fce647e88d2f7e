"""The clients teams use, pointed at edgeway unchanged: LangChain, the OpenAI Agents SDK, LiteLLM's
SDK and the async OpenAI client, against a real gateway on loopback and the bundled edge model."""

from __future__ import annotations

import asyncio
import json
import os

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
