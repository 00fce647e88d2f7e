"""Labeled examples of the traffic that RouteLLM's file lacks, made from templates.

`python -m research.data.make_traffic` rewrites `traffic_labeled.jsonl` (deterministic: a
fixed seed). Each example gets `needs_cloud` by the rubric of its kind, written next to each
kind below and in README.md here: the label says whether a Mixtral-class open model (the "weak"
model of the RouteLLM labels) would be expected to answer well, as judged by the authors. These
labels are judgments, not measurements; the RouteLLM rows are the measured ones.
"""

from __future__ import annotations

import random
from pathlib import Path

from research.data import write_rows

OUT = Path(__file__).with_name("traffic_labeled.jsonl")

TOPICS = [
    "the weather",
    "coffee",
    "my weekend",
    "football",
    "a movie I saw",
    "cooking pasta",
    "my cat",
    "gardening",
    "a trip to Lisbon",
    "learning guitar",
    "running",
    "board games",
    "the new phone",
    "a podcast",
    "sleep",
]
SENTENCES = [
    "The meeting has been moved to Thursday afternoon because the projector is broken.",
    "Our quarterly sales grew by twelve percent, mostly thanks to the new online store.",
    "Please remember to water the plants while I am away on holiday next week.",
    "The library will close early on Friday for the annual inventory count.",
    "I really enjoyed the concert, although the sound was a bit too loud at times.",
    "The delivery arrived two days late and the box was slightly damaged.",
    "We are looking for a volunteer to organize the team lunch in March.",
    "The update fixes several bugs and improves battery life on older devices.",
    "Customers can now return items within sixty days instead of thirty.",
    "The train was cancelled, so I took the bus and arrived an hour late.",
]
LANGS = ["French", "Spanish", "German", "Italian", "Portuguese", "Dutch"]
CODE_EASY = [
    "reverse a string",
    "check if a number is even",
    "sum a list of numbers",
    "read a text file line by line",
    "convert Celsius to Fahrenheit",
    "find the largest element of a list",
    "count the vowels in a word",
    "capitalize every word in a sentence",
    "remove duplicates from a list",
    "format a date as YYYY-MM-DD",
]
CODE_HARD = [
    "a lock-free multi-producer multi-consumer queue",
    "an LRU cache with O(1) operations and TTL expiry",
    "a B-tree with deletion and range scans",
    "a Raft leader election with log replication",
    "a regex engine supporting backtracking and lookahead",
    "a consistent-hashing ring with virtual nodes",
    "an incremental parser for a Pratt-style expression grammar with error recovery",
    "a rate limiter shared across processes with Redis and a Lua script",
    "a garbage collector using tri-color marking",
    "an async connection pool with health checks and backoff",
]
LANGS_CODE = ["Python", "Rust", "Go", "TypeScript", "C++", "Java"]


def _doc(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choice(SENTENCES) for _ in range(sentences))


def chit_chat(rng: random.Random) -> tuple[str, int]:
    # Small talk: any instruction-tuned model handles it.
    t = rng.choice(
        [
            "Hi! How are you today?",
            "Tell me something nice about {t}.",
            "What do you think about {t}?",
            "Thanks, that was helpful!",
            "Good morning! Any tips for enjoying {t}?",
            "lol that's funny",
            "Can you recommend something fun to do related to {t}?",
            "I'm bored, chat with me about {t}.",
        ]
    )
    return t.format(t=rng.choice(TOPICS)), 0


def rewriting(rng: random.Random) -> tuple[str, int]:
    # Rewording one supplied text: the answer is in the prompt.
    t = rng.choice(
        [
            "Rewrite this more politely: {s}",
            "Fix the grammar: {s}",
            "Make this sentence shorter: {s}",
            "Paraphrase in plain English: {s}",
            "Rewrite this in a formal tone: {s}",
            "Turn this into a friendly tweet: {s}",
        ]
    )
    return t.format(s=rng.choice(SENTENCES)), 0


def extraction(rng: random.Random) -> tuple[str, int]:
    # Pulling stated facts out of a short supplied text.
    t = rng.choice(
        [
            "From the text below, list every day of the week mentioned.\n\n{d}",
            "Extract the main action item from this note as one line: {d}",
            "Return a JSON object with keys 'topic' and 'date' for this text: {d}",
            "Which numbers appear in this text? {d}",
        ]
    )
    return t.format(d=_doc(rng, rng.randint(1, 3))), 0


def summarization(rng: random.Random) -> tuple[str, int]:
    # A short text summarized: easy. A long report with a demanding brief: hard.
    if rng.random() < 0.75:
        return f"Summarize in one sentence:\n\n{_doc(rng, rng.randint(2, 5))}", 0
    brief = rng.choice(
        [
            "Write an executive summary that reconciles the contradictions between sections and "
            "estimates the financial impact of each, with assumptions stated",
            "Produce a structured risk analysis of the following report, ranking risks by likelihood "
            "and impact and citing the exact sentences that support each",
        ]
    )
    return f"{brief}:\n\n{_doc(rng, rng.randint(25, 60))}", 1


def translation(rng: random.Random) -> tuple[str, int]:
    # A plain sentence into a major language: easy. Verse or legal text preserving form: hard.
    if rng.random() < 0.8:
        return f"Translate into {rng.choice(LANGS)}: {rng.choice(SENTENCES)}", 0
    kind = rng.choice(
        [
            "this sonnet, keeping the rhyme scheme and meter",
            "this contract clause, keeping its exact "
            "legal effect under civil law and noting any term with no equivalent",
        ]
    )
    return f"Translate into {rng.choice(LANGS)} {kind}: {_doc(rng, 3)}", 1


def classification(rng: random.Random) -> tuple[str, int]:
    # Choosing among named labels for a short text.
    t = rng.choice(
        [
            "Is the sentiment of this review positive, negative or neutral? {s}",
            "Classify this message as 'complaint', 'question' or 'praise': {s}",
            "Which department should handle this: sales, support or billing? {s}",
            "Is this spam? Answer yes or no. {s}",
        ]
    )
    return t.format(s=rng.choice(SENTENCES)), 0


def writing(rng: random.Random) -> tuple[str, int]:
    # A short everyday text: easy. Long, constrained or expert writing: hard.
    if rng.random() < 0.6:
        t = rng.choice(
            [
                "Write a short thank-you note to a colleague about {t}.",
                "Write a haiku about {t}.",
                "Draft a two-line reminder email about {t}.",
                "Give me three catchy titles for a blog on {t}.",
            ]
        )
        return t.format(t=rng.choice(TOPICS)), 0
    t = rng.choice(
        [
            "Write a 2,000-word short story about {t} told backwards in time, where each section reveals a "
            "motive that changes the meaning of the previous one.",
            "Write a grant proposal about {t} with a literature review, measurable aims, a budget "
            "justification and a risk-mitigation plan.",
            "Write a persuasive op-ed about {t} that steelmans the opposing view and rebuts it with "
            "empirical evidence, citing studies.",
        ]
    )
    return t.format(t=rng.choice(TOPICS)), 1


def code(rng: random.Random) -> tuple[str, int]:
    # A textbook snippet: easy. A concurrent or algorithmic system with edge cases: hard.
    lang = rng.choice(LANGS_CODE)
    if rng.random() < 0.5:
        return f"Write a {lang} function to {rng.choice(CODE_EASY)}.", 0
    t = rng.choice(
        [
            "Implement {x} in {l}, with tests for the edge cases and an explanation of its complexity.",
            "Design and implement {x} in {l}; explain how it behaves under concurrent access and failure.",
            "My {l} implementation of {x} deadlocks under load about once a day. Explain the likely causes "
            "and how to find and fix them.",
        ]
    )
    return t.format(x=rng.choice(CODE_HARD), l=lang), 1


def reasoning(rng: random.Random) -> tuple[str, int]:
    # Several dependent steps, where one slip ruins the answer.
    a, b, c = rng.randint(3, 40), rng.randint(2, 9), rng.randint(5, 60)
    t = rng.choice(
        [
            f"A tank fills at {a} liters per minute and drains at {b} liters per minute. It starts with {c} liters. "
            f"After how many minutes will it hold {c * 5} liters? Then, if the drain doubles after 10 minutes, how "
            f"does the answer change? Show your reasoning step by step.",
            f"Five people sit in a row. Ana is not next to Ben, Carla sits exactly {b % 3 + 1} seats from Dan, and Eve "
            f"is at one end. List every valid arrangement and prove there are no others.",
            f"Prove that the sum of the first {a} odd numbers is a perfect square, then generalize and prove it by "
            f"induction.",
            f"A company has {a} employees; each quarter {b}% leave and {c} are hired. Model the headcount over three "
            f"years, find the steady state, and explain whether it is stable.",
        ]
    )
    return t, 1


def long_document(rng: random.Random) -> tuple[str, int]:
    # Reasoning across a long supplied document.
    question = rng.choice(
        [
            "Across this whole document, which statements contradict each other, and which one is "
            "most likely correct? Justify with quotes.",
            "Build a timeline of every event in this document and identify causal links between them.",
        ]
    )
    return f"{_doc(rng, rng.randint(40, 90))}\n\n{question}", 1


KINDS = {
    "chit_chat": chit_chat,
    "rewriting": rewriting,
    "extraction": extraction,
    "summarization": summarization,
    "translation": translation,
    "classification": classification,
    "writing": writing,
    "code": code,
    "reasoning": reasoning,
    "long_document": long_document,
}
PER_KIND = 160


def build(seed: int = 20261130) -> list[dict]:
    rng = random.Random(seed)
    rows, seen = [], set()
    for kind, make in KINDS.items():
        made = 0
        for _ in range(PER_KIND * 20):
            prompt, label = make(rng)
            if prompt in seen:
                continue
            seen.add(prompt)
            rows.append({"source": f"edgeway/{kind}", "prompt": prompt, "needs_cloud": bool(label)})
            made += 1
            if made == PER_KIND:
                break
    return rows


def main() -> None:
    write_rows(OUT, build())


if __name__ == "__main__":
    main()
