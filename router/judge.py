"""A pairwise judge: which of two answers to one request is better, asked as MT-Bench asks it.

The prompt is MT-Bench's pairwise one (FastChat's `pair-v2`), whose judge ends with `[[A]]`,
`[[B]]` or `[[C]]` (a tie). Each comparison is asked in both orders, to cancel the judge's
position bias as MT-Bench and AlpacaEval do: the same winner both times wins; two different
verdicts are a tie; a judgement without a verdict makes the comparison unjudged, never guessed.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from router.request import ChatRequest

Verdict = Literal["edge", "tie", "cloud", "unjudged"]
Said = Literal["A", "B", "C"]

SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI "
    "assistants to the user question displayed below. You should choose the assistant that follows the "
    "user's instructions and answers the user's question better. Your evaluation should consider factors "
    "such as the helpfulness, relevance, accuracy, depth, creativity, and level of detail of their "
    "responses. Begin your evaluation by comparing the two responses and provide a short explanation. "
    "Avoid any position biases and ensure that the order in which the responses were presented does not "
    "influence your decision. Do not allow the length of the responses to influence your evaluation. Do "
    "not favor certain names of the assistants. Be as objective as possible. After providing your "
    'explanation, output your final verdict by strictly following this format: "[[A]]" if assistant A '
    'is better, "[[B]]" if assistant B is better, and "[[C]]" for a tie.'
)
TEMPLATE = (
    "[User Question]\n{question}\n\n"
    "[The Start of Assistant A's Answer]\n{answer_a}\n[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]\n{answer_b}\n[The End of Assistant B's Answer]"
)
JUDGE_MAX_TOKENS = 512
_VERDICT = re.compile(r"\[\[([ABC])\]\]")
SAID: dict[str, Said] = {"A": "A", "B": "B", "C": "C"}
EDGE_AS_A: dict[Said, Verdict] = {"A": "edge", "B": "cloud", "C": "tie"}
CLOUD_AS_A: dict[Said, Verdict] = {"A": "cloud", "B": "edge", "C": "tie"}


def question_of(request: ChatRequest) -> str:
    """What the user asked: the prompt, the one message, or the conversation turn by turn."""
    if request.prompt is not None:
        return request.prompt
    turns = [(m.get("role", "user"), request.text_of(m)) for m in request.messages if isinstance(m, dict)]
    if len(turns) == 1:
        return turns[0][1]
    return "\n\n".join(f"{role}: {text}" for role, text in turns)


def judge_body(model: str, question: str, answer_a: str, answer_b: str) -> dict[str, Any]:
    """The judge's Chat Completions body: deterministic, and short enough to be cheap."""
    return {
        "model": model,
        "temperature": 0,
        "max_tokens": JUDGE_MAX_TOKENS,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TEMPLATE.format(question=question, answer_a=answer_a, answer_b=answer_b)},
        ],
    }


def said(judgement: str) -> Said | None:
    """The verdict the judgement ends with; None when it gives none."""
    found = _VERDICT.findall(judgement)
    return SAID[found[-1]] if found else None


def verdict(edge_first: Said | None, cloud_first: Said | None) -> Verdict:
    """Both orders' verdicts (edge as A, then cloud as A) as one."""
    if edge_first is None or cloud_first is None:
        return "unjudged"
    one, two = EDGE_AS_A[edge_first], CLOUD_AS_A[cloud_first]
    return one if one == two else "tie"
