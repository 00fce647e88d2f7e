"""Cascades: what holding back a streamed edge answer costs, and whether the edge's confidence
tells hard prompts from easy ones.

1. Time to first token of a streamed edge answer, plain and cascaded (held back until the whole
   answer and its confidence are known), for the same prompts and max_tokens.
2. The edge's confidence (geometric mean token probability) on MMLU and GSM8K prompts against
   their measured labels (1 = the weak model was wrong): ROC AUC of (1 - confidence), next to the
   complexity classifier's on the same prompts, each score from a fold model that never saw the
   prompt's MMLU subject or GSM8K question (`classifiers.crossval`; the shipped model trained on
   them all).
"""

from __future__ import annotations

import asyncio
import statistics
import time

import numpy as np

from classifiers import crossval
from edge_runtime import EdgeEngine, EdgeModelConfig
from router.edge import EdgeModel
from router.request import parse_chat_request


def auc(scores: list[float], labels: list[int]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    s, y = np.array(scores), np.array(labels)
    pos, neg = s[y == 1], s[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


async def _measure(edge: EdgeModel, prompts: list[str], max_tokens: int) -> tuple[list[float], list[float]]:
    plain, held = [], []
    for prompt in prompts:
        body = {
            "model": "auto",
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": True,
            "messages": [{"role": "user", "content": prompt}],
        }
        started = time.perf_counter()
        stream = await edge.stream(parse_chat_request(body))
        async for chunk in stream:
            if chunk["choices"][0]["delta"].get("content"):
                plain.append(time.perf_counter() - started)
                break
        await stream.aclose()
        await asyncio.sleep(0.05)  # let the cancelled generation leave the worker
        started = time.perf_counter()
        await edge.complete(parse_chat_request({**body, "stream": False}), confidence=True)
        held.append(time.perf_counter() - started)
    return plain, held


async def _confidences(edge: EdgeModel, prompts: list[str]) -> list[float]:
    out = []
    for prompt in prompts:
        body = {
            "model": "auto",
            "max_tokens": 16,
            "temperature": 0,
            "messages": [{"role": "user", "content": prompt[-3000:]}],
        }
        answer = await edge.complete(parse_chat_request(body), confidence=True)
        out.append(answer.confidence if answer.confidence is not None else 1.0)
    return out


def run(repeat: int = 3) -> None:
    engine = EdgeEngine(EdgeModelConfig(n_ctx=2048))
    engine.load()
    edge = EdgeModel(engine)
    try:
        prompts = ["Say hello.", "What is the capital of France?", "Give me three tips for sleeping well."] * repeat
        for max_tokens in (16, 64):
            plain, held = asyncio.run(_measure(edge, prompts, max_tokens))
            print(
                f"streamed edge answer, max_tokens {max_tokens}: time to first token plain "
                f"{statistics.median(plain) * 1e3:.0f} ms, cascaded (held back) {statistics.median(held) * 1e3:.0f} "
                f"ms: {statistics.median(held) / statistics.median(plain):.1f}x"
            )
        oof = crossval.out_of_fold_words()
        weight = oof.best_weights()
        rows = [
            (r.prompt, int(r.weak == 0.0), float(score))
            for kind in ("mmlu", "gsm8k")
            for r, score in zip(oof.rows[kind], oof.scores(kind, weight), strict=True)
        ]
        rng = np.random.default_rng(0)
        sample = [rows[i] for i in rng.choice(len(rows), size=min(len(rows), 40 * repeat), replace=False)]
        confidence = asyncio.run(_confidences(edge, [prompt for prompt, _, _ in sample]))
        labels = [label for _, label, _ in sample]
        print(
            f"on {len(sample)} MMLU / GSM8K prompts ({sum(labels)} the weak model got wrong): ROC AUC of "
            f"1 - edge confidence {auc([1 - c for c in confidence], labels):.3f}; of the complexity classifier, "
            f"out of fold, {auc([score for _, _, score in sample], labels):.3f} (0.5 = no information)"
        )
    finally:
        engine.close()
