"""Cascades: what holding back a streamed edge answer costs. Time to first token of a streamed edge
answer, plain and cascaded (held back until the whole answer and its confidence are known), for
the same prompts and max_tokens. Whether the edge's confidence tells hard prompts from easy ones is
research's question (`python -m research.edge_confidence`).
"""

from __future__ import annotations

import asyncio
import statistics
import time

from edge_runtime import EdgeEngine, EdgeModelConfig
from router.edge import EdgeModel
from router.request import parse_chat_request


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
    finally:
        engine.close()
