"""Token counts without a tokenizer: a linear estimate fitted against the edge model's tokenizer.

`research.train` fits the coefficients on the training texts (`models/token_estimate.json`);
`research.evaluate` prints the error on held-out texts. The estimate is linear in counts that
add up, so a conversation's estimate comes from its messages' counts, each counted once.
"""

from __future__ import annotations

import json
from pathlib import Path

from classifiers import _scan

MODEL_PATH = Path(__file__).resolve().parent / "models" / "token_estimate.json"
_SYMBOLS = ".,;:!?()[]{}'\"-/*+=<>_#$%&@|\\`~^"

Counts = tuple[int, int, int, int, int, int]  # spaces, newlines, digits, symbols, extra UTF-8 bytes, length


def text_counts(text: str) -> Counts:
    """Counted in one pass in C (classifiers/scan/windows.c).

    UTF-8 bytes are counted as `text.encode("utf-8", "surrogatepass")` has them."""
    return _scan.counts(text, _SYMBOLS)


def joined_counts(parts: list[Counts]) -> Counts:
    """The counts of "\\n".join(texts) from those of the texts."""
    if not parts:
        return (0, 0, 0, 0, 0, 0)
    glue = len(parts) - 1
    spaces, newlines, digits, symbols, extra, length = (sum(column) for column in zip(*parts, strict=True))
    return spaces, newlines + glue, digits, symbols, extra, length + glue


def count_features(counts: Counts) -> list[float]:
    spaces, newlines, digits, symbols, extra, length = counts
    return [
        1.0,
        float(spaces + newlines + 1),
        float(digits),
        float(symbols),
        float(extra),
        float(newlines),
        float(length),
    ]


def token_features(text: str) -> list[float]:
    return count_features(text_counts(text))


class TokenEstimator:
    def __init__(self, path: Path = MODEL_PATH) -> None:
        self.coefficients: list[float] = json.loads(path.read_text())["coefficients"]

    def estimate(self, text: str) -> int:
        return self.from_counts(text_counts(text)) if text else 0

    def from_counts(self, counts: Counts) -> int:
        if not counts[5]:
            return 0
        value = float(sum(c * f for c, f in zip(self.coefficients, count_features(counts), strict=True)))
        return max(1, round(value))
