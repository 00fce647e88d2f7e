"""The labelled prompt set that ships with edgeway for `edgeway router probe` (router/data/).

    python -m research.probe_set

Every AlpacaEval instruction of research/data, labelled for both edge classes (what routing buys
over a 1B model, and over the 7B-14B ones), and for the mid-size class a share of the exam
questions with Mixtral's labels: `MMLU_PER_SUBJECT` of each MMLU subject and `GSM8K` GSM8K
questions (the first by a hash of the prompt). The small class's probe reads the AlpacaEval
instructions alone: its own label.
"""

from __future__ import annotations

import json
from pathlib import Path

from gateway.bench.folds import hashed_fold, routing_rows

OUT = Path(__file__).resolve().parent.parent / "router" / "data" / "probe_set.jsonl"
MMLU_PER_SUBJECT, GSM8K = 8, 200


def probe_set() -> list[dict[str, object]]:
    small = {r.prompt: r for r in routing_rows("small")}
    rows: list[dict[str, object]] = []
    for r in routing_rows("mid"):
        if r.kind == "alpaca_eval":
            targets = {"small": round(small[r.prompt].target, 4), "mid": round(r.target, 4)}
            rows.append({"source": r.kind, "prompt": r.prompt, "targets": targets})
    taken: dict[str, int] = {}
    exams = sorted(
        (r for r in routing_rows("mid") if r.kind in ("mmlu", "gsm8k")), key=lambda r: hashed_fold(r.prompt, 1 << 30)
    )
    for r in exams:
        quota = MMLU_PER_SUBJECT if r.kind == "mmlu" else GSM8K
        key = r.group if r.kind == "mmlu" else "gsm8k"
        if taken.get(key, 0) < quota:
            taken[key] = taken.get(key, 0) + 1
            rows.append({"source": r.kind, "prompt": r.prompt, "targets": {"mid": r.target}})
    return rows


def main() -> None:
    rows = probe_set()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} prompts to {OUT}")


if __name__ == "__main__":
    main()
