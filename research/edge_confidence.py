"""Whether the edge's confidence tells hard prompts from easy ones: on MMLU and GSM8K prompts
against their measured labels (1 = the weak model was wrong), the ROC AUC of (1 - the edge's
confidence, the geometric mean token probability of a 16-token answer), next to the complexity
prior's on the same prompts, each score from a fold model that never saw the prompt's MMLU subject
or GSM8K question (the development folds of `research.protocol`).

    python -m research.edge_confidence [--prompts 120]
"""

from __future__ import annotations

import argparse
import asyncio

import numpy as np

from edge_runtime import EdgeEngine, EdgeModelConfig
from gateway.bench.folds import routing_rows
from research.prior import SHIPPED, fit_prior
from research.protocol import Splits
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=120)
    args = parser.parse_args()
    splits = Splits.of(routing_rows())
    rows = []
    for kind in ("mmlu", "gsm8k"):
        mine, scores = splits.in_source(kind, fit_prior(SHIPPED))
        rows += [(r.prompt, int(r.weak == 0.0), float(score)) for r, score in zip(mine, scores, strict=True)]
    rng = np.random.default_rng(0)
    sample = [rows[i] for i in rng.choice(len(rows), size=min(len(rows), args.prompts), replace=False)]
    engine = EdgeEngine(EdgeModelConfig(n_ctx=2048))
    engine.load()
    try:
        confidence = asyncio.run(_confidences(EdgeModel(engine), [prompt for prompt, _, _ in sample]))
    finally:
        engine.close()
    labels = [label for _, label, _ in sample]
    print(
        f"on {len(sample)} MMLU / GSM8K prompts ({sum(labels)} the weak model got wrong): ROC AUC of "
        f"1 - edge confidence {auc([1 - c for c in confidence], labels):.3f}; of the text prior, "
        f"out of fold, {auc([score for _, _, score in sample], labels):.3f} (0.5 = no information)"
    )


if __name__ == "__main__":
    main()
