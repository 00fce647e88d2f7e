"""The texts the disclosure reader (`classifiers.privacy.disclosure`) learns from and is measured
on: whether a text discloses something private about a person, in any language.

Sources, each split into five folds by a stable hash of its text's opening (near-duplicates stay
together), fold 0 of each LOCKED before any choice was made (the reader's features, its model, its
thresholds): the test fold, reported once per change; every choice is made on folds 1-4.

| source | private | public |
| --- | --- | --- |
| `multilingual` (`multilingual_dev.jsonl`, 34 languages, values marked by type) | 680 | 680 |
| `made` (`privacy_made/*.jsonl`, written for edgeway in the same schema, two writers) | half | half |
| `pupa` (real WildChat prompts with private units) | 438 | |
| `alpaca_eval` (real instructions, public) | | 403 |
| `gsm8k`, `mmlu` (exam questions, public: they name people and places) | | sampled |

    python -m research.disclosure_data      # counts per source, fold and label
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from gateway.bench.folds import hashed_fold, opening
from research.data.real_privacy import DATA, exam_questions, private_prompts, public_prompts

FOLDS = 5
LOCKED = 0  # each source's test fold: fixed before anything was chosen
MADE = DATA / "privacy_made"
EXAMS_PER_SOURCE = 600  # a sample of each exam's questions: public text enough, kept cheap to read


@dataclass(frozen=True)
class Span:
    type: str
    start: int
    end: int


@dataclass(frozen=True)
class Labelled:
    source: str
    lang: str
    text: str
    private: bool
    spans: tuple[Span, ...]
    fold: int

    @property
    def locked(self) -> bool:
        return self.fold == LOCKED


def fold_of(text: str) -> int:
    return hashed_fold(opening(text), FOLDS)


def _marked(path: Path, source: str) -> list[Labelled]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            spans = tuple(Span(s["type"], s["start"], s["end"]) for s in r["spans"])
            rows.append(Labelled(source, r["lang"], r["text"], bool(r["private"]), spans, fold_of(r["text"])))
    return rows


def texts(exams: int = EXAMS_PER_SOURCE) -> list[Labelled]:
    found = _marked(DATA / "multilingual_dev.jsonl", "multilingual")
    for path in sorted(MADE.glob("*.jsonl")):
        found += _marked(path, "made")
    for p in private_prompts():
        spans = tuple(Span("PUPA", start, end) for start, end in p.units)
        found.append(Labelled("pupa", "en", p.text, True, spans, fold_of(p.text)))
    found += [Labelled("alpaca_eval", "en", t, False, (), fold_of(t)) for t in public_prompts()]
    for source, questions in sorted(exam_questions(trained=False).items()):
        sample = random.Random(source).sample(questions, min(exams, len(questions)))
        found += [Labelled(source, "en", t, False, (), fold_of(t)) for t in sample]
    return found


def main() -> None:
    rows = texts()
    counts: dict[tuple[str, bool, bool], int] = {}
    for r in rows:
        key = (r.source, r.private, r.locked)
        counts[key] = counts.get(key, 0) + 1
    for (source, private, locked), n in sorted(counts.items()):
        print(f"{source:12} {'private' if private else 'public ':7} {'locked' if locked else 'develop'} {n:5}")


if __name__ == "__main__":
    main()
