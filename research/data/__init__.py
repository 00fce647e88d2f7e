"""Training data, and the scripts that make edgeway's own labeled rows."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parent


def read_jsonl(name: str) -> list[dict]:
    """The rows of one of the data files here."""
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {path}")
