"""`edgeway bench semantic-cache`: how the semantic cache's match was chosen, measured.

Pairs of requests (`gateway/bench/data/cache_pairs.jsonl`: written for this measurement, so it
is coverage, not a sample of anyone's traffic): paraphrases and rewordings that deserve the same
answer, and near-misses that share most words but not the answer (another country, another
number, two terms swapped). For each way of matching it prints the share of paraphrases served
from the cache (hits) and of near-misses served the wrong answer (false hits), side by side:
the bundled edge model's embedding similarity alone at several thresholds, the content-word
check alone, and both, as `router/semantic.py` matches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edge_runtime.config import EdgeModelConfig
from edge_runtime.embedder import Embedder
from policies.schema import DEFAULT_MIN_SIMILARITY
from router.semantic import content_words, cosine

PAIRS = Path(__file__).parent / "data" / "cache_pairs.jsonl"
THRESHOLDS = (0.90, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999)


def run(repeat: int = 1) -> None:
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    embedder = Embedder(EdgeModelConfig(name="smollm2", gguf="bundled:smollm2-135m", n_ctx=2048))
    texts = sorted({p[side] for p in pairs for side in ("a", "b")})
    vectors = dict(zip(texts, embedder.embed(texts)[0], strict=True))
    embedder.close()
    for p in pairs:
        p["similarity"] = cosine(vectors[p["a"]], vectors[p["b"]])
        p["words"] = content_words(p["a"]) == content_words(p["b"])
    same = [p for p in pairs if p["same"]]
    near = [p for p in pairs if not p["same"]]
    print(f"{len(same)} pairs that deserve the same answer, {len(near)} near-misses that do not")
    print(f"{'match':<44} {'hits':>12} {'false hits':>12}")

    def row(name: str, match: Callable[[dict[str, Any]], bool]) -> None:
        hits, false = sum(1 for p in same if match(p)), sum(1 for p in near if match(p))
        print(
            f"{name:<44} {hits:>4}/{len(same):<3} {hits / len(same):4.0%} "
            f"{false:>4}/{len(near):<3} {false / len(near):4.0%}"
        )

    def above(threshold: float) -> Callable[[dict[str, Any]], bool]:
        return lambda p: bool(p["similarity"] >= threshold)

    for t in THRESHOLDS:
        row(f"embedding similarity >= {t}", above(t))
    row("content words, in order", lambda p: p["words"])
    chosen = DEFAULT_MIN_SIMILARITY
    row(f"both (edgeway: min_similarity {chosen})", lambda p: p["words"] and p["similarity"] >= chosen)
    ranked = sum(1 for s in same for n in near if s["similarity"] > n["similarity"]) / (len(same) * len(near))
    print(f"\nP(a paraphrase pair is more similar than a near-miss pair), embeddings alone: {ranked:.2f}")
    print("the pairs the content words let through:")
    for p in sorted((p for p in pairs if p["words"]), key=lambda p: p["similarity"]):
        print(f"  {p['similarity']:.4f} {'same' if p['same'] else 'NEAR-MISS'}: {p['a']!r} / {p['b']!r}")
