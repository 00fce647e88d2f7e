"""The real prompts privacy is trained and measured on: PUPA's private prompts (with the units
their annotators marked), AlpacaEval's public instructions, and the exam questions of the routing
data (MMLU, GSM8K), public questions that name people and places: every `EXAM_SAMPLE`-th is
trained on, the rest only measured."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent

# Checked by hand (all 404 were read for names, addresses, emails and numbers): one AlpacaEval
# instruction does carry personal data, a conference's participants with their email addresses,
# so it is not counted as a public prompt. Famous people, places, works and products are public.
PUBLIC_WITH_PERSONAL_DATA = ("Please prepare a table containing a summary of the information of the participants",)


@dataclass(frozen=True)
class PrivatePrompt:
    text: str
    units: tuple[tuple[int, int], ...]  # where its annotated private units occur
    category: str


def _read(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def unit_spans(prompt: str, units: list[str]) -> tuple[tuple[int, int], ...]:
    """Where the annotated private units occur, in any case (most are annotated in lower case)."""
    lowered, spans = prompt.lower(), []
    for unit in (u.lower() for u in units):
        start = lowered.find(unit)
        while start >= 0 and unit:
            spans.append((start, start + len(unit)))
            start = lowered.find(unit, start + 1)
    return tuple(spans)


def private_prompts() -> list[PrivatePrompt]:
    return [
        PrivatePrompt(r["prompt"], unit_spans(r["prompt"], r["pii_units"]), r["category"])
        for r in _read("pupa_dev.jsonl")
    ]


def public_prompts() -> list[str]:
    return [
        r["prompt"] for r in _read("alpaca_eval_dev.jsonl") if not r["prompt"].startswith(PUBLIC_WITH_PERSONAL_DATA)
    ]


EXAM_SAMPLE = 5  # the gate trains on every fifth MMLU / GSM8K question


def exam_questions(trained: bool) -> dict[str, list[str]]:
    """The MMLU and GSM8K questions the private-context gate trains on (`trained`), or the ones it
    never sees, by source (39 MMLU questions are in the file twice: each counts as seen)."""
    rows = _read("routellm_train.jsonl")
    seen = {r["prompt"] for r in rows[::EXAM_SAMPLE]}
    by_source: dict[str, list[str]] = {"gsm8k": [], "mmlu": []}
    for i, r in enumerate(rows):
        keep = i % EXAM_SAMPLE == 0 if trained else r["prompt"] not in seen
        if keep:
            by_source["gsm8k" if r["source"] == "gsm8k" else "mmlu"].append(r["prompt"])
    return by_source
