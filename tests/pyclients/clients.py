"""The Python clients whose pins conflict with the suite's own (instructor wants jiter<0.15,
llama-index's OpenAI integration openai<3, and DSPy comes with them), pointed at edgeway from a
virtual environment of their own: `python clients.py <gateway url> <app key> <edge model>`.
Prints one JSON object: for each client, what its plain call, its stream and its structured or
tool feature returned. tests/test_pinned_clients.py checks it; requirements.txt pins what it runs
with.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

url, key, model = sys.argv[1:4]
CAPITAL = "What is the capital of France? Answer as JSON with the country and the city."


def instructor_modes() -> dict[str, Any]:
    import instructor
    import openai
    from pydantic import BaseModel

    class Capital(BaseModel):
        country: str
        city: str

    sdk = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)
    asked = {
        "model": model,
        "response_model": Capital,
        "max_retries": 0,
        "max_tokens": 60,
        "temperature": 0,
        "messages": [{"role": "user", "content": CAPITAL}],
    }
    found: dict[str, Any] = {}
    for mode in ("TOOLS", "TOOLS_STRICT", "JSON_SCHEMA"):  # the schema goes with the request: the edge holds it
        client = instructor.from_openai(sdk, mode=getattr(instructor.Mode, mode))
        found[mode] = client.chat.completions.create(**asked).model_dump()
    # JSON mode asks for any JSON object and tells the schema in a system message, which the bundled
    # 135M model may follow or copy out: what is checked is that the request and its JSON answer went
    # through (a Capital, or instructor's own word on the object the model wrote).
    client = instructor.from_openai(sdk, mode=instructor.Mode.JSON)
    try:
        found["JSON"] = client.chat.completions.create(**asked).model_dump()
    except Exception as exc:  # the test reads which: only instructor's own parse errors are the model's doing
        found["JSON"] = {"model_wrote": type(exc).__name__}
    client = instructor.from_openai(sdk, mode=instructor.Mode.TOOLS)
    partials = list(client.chat.completions.create_partial(**asked))
    found["partial"] = {"count": len(partials), "last": partials[-1].model_dump() if partials else None}
    return found


def llama_index() -> dict[str, Any]:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.prompts import PromptTemplate
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike
    from pydantic import BaseModel

    class Capital(BaseModel):
        country: str
        city: str

    def get_weather(city: str) -> str:
        """The weather in a city now."""
        return f"It is sunny in {city}."

    llm = OpenAILike(
        model=model,
        api_base=f"{url}/v1",
        api_key=key,
        is_chat_model=True,
        is_function_calling_model=True,
        max_tokens=60,
        temperature=0,
        max_retries=0,
    )
    hello = [ChatMessage(role="user", content="Say hello.")]
    streamed = "".join(piece.delta or "" for piece in llm.stream_chat(hello))
    tool = FunctionTool.from_defaults(fn=get_weather)
    called = llm.chat_with_tools([tool], user_msg="What is the weather in Paris?", tool_required=True)
    calls = llm.get_tool_calls_from_response(called, error_on_no_tool_call=False)
    structured = llm.structured_predict(Capital, PromptTemplate(CAPITAL))
    return {
        "complete": llm.complete("Say hello.").text,
        "chat": llm.chat(hello).message.content,
        "streamed": streamed,
        "tool": calls[0].tool_name if calls else None,
        "structured": structured.model_dump(),
    }


def dspy_modules() -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # (LiteLLM under DSPy: no price map fetched)
    import dspy

    # room for DSPy's field markers and, where it falls back to JSON, a whole object
    lm = dspy.LM(f"openai/{model}", api_base=f"{url}/v1", api_key=key, max_tokens=200, temperature=0, cache=False)
    dspy.configure(lm=lm)
    capital = dspy.Predict("question -> country: str, city: str")(question=CAPITAL)
    answered = dspy.Predict("question -> answer")(question="Say hello.")
    return {"predict": answered.answer, "typed": {"country": capital.country, "city": capital.city}}


def main() -> None:
    out: dict[str, Any] = {}
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "instructor": instructor_modes,
        "llama-index": llama_index,
        "dspy": dspy_modules,
    }
    for name, run in runs.items():
        try:
            out[name] = run()
        except Exception as exc:  # reported, for the test to show
            out[name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
