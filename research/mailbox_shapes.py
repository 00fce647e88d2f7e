"""How often prose takes the shape of a mailbox spelled in words (`classifiers.privacy.mailboxes`):
the public prompts in ../shared/data and the research sets, and PUPA's private prompts, each
counted where the shape reads an address in it.

    python -m research.mailbox_shapes
"""

from __future__ import annotations

import json
from pathlib import Path

from classifiers.privacy.mailboxes import shaped
from research.data.real_privacy import private_prompts

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCES = {  # file -> the field its text is in
    "routing/routellm_train.jsonl": "prompt",
    "routing/alpaca_eval_dev.jsonl": "prompt",
    "privacy/presidio_synth_v2.jsonl": "text",
}


def main() -> None:
    for source, field in SOURCES.items():
        lines = (DATA / source).read_text(encoding="utf-8").split("\n")  # (JSON strings may hold U+2028)
        texts = [json.loads(line)[field] for line in lines if line]
        _report(source, texts)
    _report("PUPA's private prompts", [p.text for p in private_prompts()])


def _report(source: str, texts: list[str]) -> None:
    read = [(t, r) for t in texts if (r := shaped(t)) is not None]
    print(f"{source}: {len(read)} of {len(texts)}")
    for text, reading in read:
        at = next(i for i, (a, b) in enumerate(zip(text, reading.text, strict=False)) if a != b)
        print(f"  ...{reading.text[max(0, at - 40) : at + 40]!r}")


if __name__ == "__main__":
    main()
