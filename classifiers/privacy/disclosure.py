"""Whether a text discloses something private about a person, in any language: the disclosure
reader.

The detectors read forms (a card's check digit, a key's prefix, a language's words for a birth
date or a condition), which exist for some languages only; a text in Polish, Swahili or Thai
held no form they read and failed closed whole, a pierogi recipe as surely as a diagnosis. The
reader decides what forms cannot: it reads a text's characters, in any script, and says how
likely it tells something private about someone (their health by a drug or a lab value, their
money, their papers, their secrets, a named private person) rather than asks about the world.

It is a logistic regression over hashed character n-grams of the text in lower case, every digit
read as 0 and white space as one space (`features`), sublinear counts L2-normalized, fitted by
`research.disclosure` on prompts in 34 languages written with their private values marked, on
real private prompts (PUPA) and real public ones (AlpacaEval, exam questions). The n-grams are
hashed in numpy, a whole text at once (`grams`): about 0.1 ms for 500 characters. A long text is
read in windows (`WINDOW` characters, every `STRIDE`), and reads as its most private window.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_PATH = Path(__file__).resolve().parent.parent / "models" / "disclosure.npz"
WINDOW = 600  # characters: what most prompts of the training data hold whole
STRIDE = 400
_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d")
# odd multipliers for the positions of an n-gram (splitmix64's constants and their kin)
_MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93, 0xA0761D6478BD642F,
     0xE7037ED1A0B428DB],
    dtype=np.uint64,
)  # fmt: skip


def normalized(text: str) -> str:
    """What the reader reads of `text`: lower case, every digit 0, white space one space, padded."""
    return " " + _DIGITS.sub("0", _SPACES.sub(" ", text.lower())).strip() + " "


def grams(text: str, orders: tuple[int, ...], bits: int) -> np.ndarray:
    """The bucket of every character n-gram of `normalized(text)`, for each n of `orders`."""
    codes = np.frombuffer(normalized(text).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    out = []
    for n in orders:
        if len(codes) < n:
            continue
        h = np.full(len(codes) - n + 1, np.uint64(n), dtype=np.uint64)
        for k in range(n):
            h ^= codes[k : len(codes) - n + 1 + k] * _MULTIPLIERS[k]
            h *= _MULTIPLIERS[-1]
        h ^= h >> np.uint64(31)
        out.append(h >> np.uint64(64 - bits))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


def features(text: str, orders: tuple[int, ...], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The text's distinct buckets and their values: log(1 + count), L2-normalized."""
    buckets, counts = np.unique(grams(text, orders, bits), return_counts=True)
    values = np.log1p(counts.astype(np.float64))
    norm = math.sqrt(float(values @ values)) or 1.0
    return buckets.astype(np.int64), values / norm


def windows(text: str) -> list[tuple[int, int]]:
    """Where `text`'s windows lie: `WINDOW` characters every `STRIDE` (a short text whole)."""
    if len(text) <= WINDOW:
        return [(0, len(text))]
    return [(at, min(at + WINDOW, len(text))) for at in range(0, len(text) - WINDOW + STRIDE, STRIDE)]


@dataclass(frozen=True)
class DisclosureModel:
    weights: np.ndarray  # one a bucket
    bias: float
    orders: tuple[int, ...]
    bits: int
    private_at: float  # words no detector reads are private from this probability on
    named_at: float  # names and places found by no form are, from this one

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> DisclosureModel:
        with np.load(path) as data:
            return cls(
                data["weights"].astype(np.float64),
                float(data["bias"]),
                tuple(int(n) for n in data["orders"]),
                int(data["bits"]),
                float(data["private_at"]),
                float(data["named_at"]),
            )

    def save(self, path: Path) -> None:
        np.savez_compressed(
            path,
            weights=self.weights.astype(np.float32),
            bias=np.float64(self.bias),
            orders=np.array(self.orders, dtype=np.int64),
            bits=np.int64(self.bits),
            private_at=np.float64(self.private_at),
            named_at=np.float64(self.named_at),
        )

    def logit(self, text: str) -> float:
        buckets, values = features(text, self.orders, self.bits)
        return self.bias + float(self.weights[buckets] @ values)

    def window_probability(self, window: str) -> float:
        """P(`window` discloses something private about someone)."""
        if not window or window.isspace():
            return 0.0
        return 1.0 / (1.0 + math.exp(-max(-500.0, min(500.0, self.logit(window)))))

    def probability(self, text: str) -> float:
        """The probability of `text`'s most private window."""
        return max(self.window_probability(text[start:end]) for start, end in windows(text))
