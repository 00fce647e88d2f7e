"""Signals per request: all of them, for conversations of about 100, 1,000 and 10,000 tokens, on
one core, next to LiteLLM's complexity_router on the same conversations.
"""

from __future__ import annotations

import gc
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.bench import hostile
from gateway.percentiles import percentile

# The prompts of the repository's research data (a checkout's, not installed): real questions and
# private-data prompts, made into conversations.
DATA = Path(__file__).resolve().parents[2] / "research" / "data"
SIZES = (100, 1_000, 10_000)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def require_data() -> None:
    """Stop, saying why, where the repository's prompt data is not (an installed package): before
    a benchmark loads anything it would not use."""
    if not DATA.is_dir():
        raise SystemExit(
            "edgeway bench: this benchmark makes its conversations from the repository's prompt data "
            "(research/data), which is not installed: run it from a checkout of edgeway"
        )


def conversations(tokens: int, count: int, estimate: Callable[[str], int]) -> list[list[dict[str, Any]]]:
    """Realistic multi-turn conversations (system prompt, earlier turns, private details) of about
    `tokens` tokens, made from the repository's prompt data."""
    require_data()
    rng = random.Random(tokens)
    pool = [json.loads(line)["prompt"] for line in open(DATA / "routellm_train.jsonl", encoding="utf-8")]
    pool += [json.loads(line)["text"] for line in open(DATA / "privacy_prompts.jsonl", encoding="utf-8")]
    out = []
    for _ in range(count):
        messages = [{"role": "system", "content": "You are a helpful assistant for Acme support."}]
        while estimate(" ".join(m["content"] for m in messages)) < tokens:
            role = "user" if len(messages) % 2 else "assistant"
            messages.append({"role": role, "content": rng.choice(pool)})
        out.append(messages)
    return out


def run(repeat: int = 3) -> None:
    require_data()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target says
    gc.collect()
    before = rss_mb()
    from classifiers import Scorer

    scorer = Scorer()
    _ = scorer.signals([{"role": "user", "content": "warm up"}]).complexity
    added = rss_mb() - before

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from litellm.router_strategy.complexity_router.complexity_router import ComplexityRouter

        litellm = ComplexityRouter("bench", ctx=None)
    except ImportError:
        litellm = None

    print("all signals per request (complexity, privacy, token estimate, language), one core;")
    print("cold: no message seen before; next turn: the history was scanned on the previous turn and one new")
    print("user message (a chat client resends the history every turn)")
    print(
        f"{'tokens':>7} {'cold p50':>9} {'cold p99':>9} {'ms/1k tok':>10} {'next-turn p50':>14} {'p99':>7} "
        f"{'LiteLLM p50':>12} {'LiteLLM/cold':>13}"
    )
    new_turn = {"role": "user", "content": "Thanks! One more question: can you summarize that in two lines?"}
    for size in SIZES:
        samples = conversations(size, 60 if size < 10_000 else 20, scorer.tokens.estimate)
        timings, warm, theirs = [], [], []
        for _ in range(repeat * (5 if size < 10_000 else 2)):
            for messages in samples:
                scorer.seen.clear()
                started = time.perf_counter()
                _ = scorer.signals(messages, max_tokens=256).complexity  # all signals: complexity is lazy
                timings.append(time.perf_counter() - started)
                started = time.perf_counter()
                _ = scorer.signals(messages + [new_turn], max_tokens=256).complexity
                warm.append(time.perf_counter() - started)
        if litellm is not None:
            for messages in samples:
                user = "\n".join(m["content"] for m in messages if m["role"] == "user")
                started = time.perf_counter()
                litellm.classify(user, messages[0]["content"])
                theirs.append(time.perf_counter() - started)
        p50, p99 = statistics.median(timings) * 1e3, percentile(timings, 0.99) * 1e3
        their = (
            f"{statistics.median(theirs) * 1e3:>12.3f} {statistics.median(theirs) * 1e3 / p50:>12.2f}x"
            if theirs
            else f"{'(not installed)':>12}"
        )
        print(
            f"{size:>7} {p50:>9.3f} {p99:>9.3f} {p50 / size * 1e3:>10.3f} {statistics.median(warm) * 1e3:>14.3f} "
            f"{percentile(warm, 0.99) * 1e3:>7.3f} {their}"
        )
    print(f"resident memory added by the classifiers: {added:.1f} MB (target <= 150)")
    print("targets at 1,000 tokens: p50 <= 1 ms, p99 <= 2 ms (issue #12: headroom for accuracy)")
    hostile.run(scorer.privacy.scan)
