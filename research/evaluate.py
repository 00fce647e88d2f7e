"""The regression checks, written to `research/reports/evaluation.md`.

    python -m research.evaluate

Privacy per type on the template and synthetic rows' held-out split (coverage, not a headline),
edgeway's template traffic with any finding, and the token estimate's error. The headlines are
elsewhere: routing on real data by locked test folds (`python -m research.prior`, `python -m
research.probe`), privacy on real prompts out of fold (`python -m research.crossval_privacy`).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifiers.privacy import PrivacyScanner
from classifiers.tokens import TokenEstimator
from research.data import read_jsonl
from research.privacy_model import privacy_rows
from research.train import EDGE_MODEL, complexity_rows, token_texts

REPORTS = Path(__file__).resolve().parent / "reports"
PRESIDIO_EVALUATED = {
    "PERSON": "PERSON",
    "STREET_ADDRESS": "STREET_ADDRESS",
    "ORGANIZATION": "ORGANIZATION",
    "CREDIT_CARD": "CREDIT_CARD",
    "PHONE_NUMBER": "PHONE",
    "EMAIL_ADDRESS": "EMAIL",
    "IBAN_CODE": "IBAN",
    "US_SSN": "US_SSN",
    "IP_ADDRESS": "IP_ADDRESS",
    "ZIP_CODE": "POSTAL_CODE",  # found after its cue ("ZIP: 3520"); inside a written address, the address is
    "US_DRIVER_LICENSE": "ID_NUMBER",
}


# --- privacy ------------------------------------------------------------------------------
def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


@dataclass
class TypeScore:
    gold: int = 0
    found: int = 0  # gold spans found
    predicted: int = 0
    right: int = 0  # predictions that were right

    @property
    def precision(self) -> float:
        return self.right / self.predicted if self.predicted else float("nan")

    @property
    def recall(self) -> float:
        return self.found / self.gold if self.gold else float("nan")

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else float("nan")


PRIVACY_SETS = {
    "Presidio synthetic, held-out 20%": "presidio",
    "edgeway realistic prompts, held-out half (unseen names)": "edgeway",
}


def privacy_scores(scanner: PrivacyScanner | None = None) -> dict[str, dict[str, TypeScore]]:
    """Per data set and type: a finding is right when at least half of it lies on gold spans of its
    type; a gold span is found when findings of its type cover at least half of it."""
    scanner = scanner or PrivacyScanner()
    scores: dict[str, dict[str, TypeScore]] = {title: defaultdict(TypeScore) for title in PRIVACY_SETS}
    for title, source in PRIVACY_SETS.items():
        for r in privacy_rows():
            if r["split"] != "test" or r["source"] != source:
                continue
            labeled = [
                (PRESIDIO_EVALUATED.get(s["type"]) if source == "presidio" else s["type"], s["start"], s["end"])
                for s in r["spans"]
            ]
            gold: list[tuple[str, int, int]] = [(t, s, e) for t, s, e in labeled if isinstance(t, str)]
            found = [
                f for f in scanner.scan(r["text"]) if source != "presidio" or f.type in PRESIDIO_EVALUATED.values()
            ]
            for f in found:
                covered = sum(_overlap((f.start, f.end), (s, e)) for t, s, e in gold if t == f.type)
                scores[title][f.type].predicted += 1
                scores[title][f.type].right += covered * 2 >= f.end - f.start
            for t, s, e in gold:
                covered = sum(_overlap((f.start, f.end), (s, e)) for f in found if f.type == t)
                scores[title][t].gold += 1
                scores[title][t].found += covered * 2 >= e - s
    return scores


def template_traffic_flagged(scanner: PrivacyScanner | None = None) -> tuple[int, int]:
    """How many of edgeway's template traffic prompts (`traffic_labeled.jsonl`: chat, code,
    translation, summaries of made-up notes; no one's data) have any finding, of how many. No
    privacy model trains on them."""
    scanner = scanner or PrivacyScanner()
    prompts = [r["prompt"] for r in read_jsonl("traffic_labeled.jsonl")]
    return sum(bool(scanner.scan(p)) for p in prompts), len(prompts)


def evaluate_privacy() -> list[str]:
    started = time.perf_counter()
    scores = privacy_scores()
    flagged, prompts = template_traffic_flagged()
    lines = [
        f"\nedgeway's template traffic (public tasks, no personal data), with any finding: {flagged} of "
        f"{prompts} ({flagged / prompts:.1%})"
    ]
    for title, by_type in scores.items():
        lines.append(f"\n{title}")
        lines.append("| type | gold | precision | recall | F1 |")
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        for t in sorted(t for t, score in by_type.items() if score.gold):
            score = by_type[t]
            lines.append(f"| {t} | {score.gold} | {score.precision:.3f} | {score.recall:.3f} | {score.f1:.3f} |")
        unannotated = [f"{t} ({score.predicted} found)" for t, score in sorted(by_type.items()) if not score.gold]
        if unannotated:
            lines.append(f"\nnot annotated in this set: {', '.join(unannotated)}")
    lines.append(
        f"\n(a finding is right when at least half of it lies on gold spans of its type; a gold span is "
        f"found when findings of its type cover at least half of it; evaluated in "
        f"{time.perf_counter() - started:.1f} s)"
    )
    return lines


def evaluate_tokens() -> list[str]:
    from llama_cpp import Llama

    from edge_runtime.gguf import resolve_gguf

    vocab = Llama(model_path=str(resolve_gguf(EDGE_MODEL)), vocab_only=True, verbose=False)
    estimator = TokenEstimator()
    texts = token_texts(complexity_rows(), privacy_rows(), "test")
    true = np.array([len(vocab.tokenize(t.encode(), add_bos=False, special=False)) for t in texts])
    guess = np.array([estimator.estimate(t) for t in texts])
    error = np.abs(guess - true) / np.maximum(true, 1)
    return [
        f"\ntoken estimate vs the SmolLM2 tokenizer on {len(texts)} held-out texts: mean absolute error "
        f"{error.mean():.1%}, p95 {np.percentile(error, 95):.1%}; total {guess.sum() / true.sum():.3f}x"
    ]


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    REPORTS.mkdir(exist_ok=True)
    lines = ["## Privacy, template and synthetic data (coverage only, not a headline)"]
    lines += evaluate_privacy()
    lines += ["", "## Token counts"] + evaluate_tokens()
    text = "\n".join(lines)
    print(text)
    (REPORTS / "evaluation.md").write_text(
        "# Regression checks\n\nMade by `python -m research.evaluate`.\n\n" + text + "\n"
    )


if __name__ == "__main__":
    main()
