"""A character tagger for names, addresses, birth dates and health conditions in the scripts the
span model was not made for (research: it does not generalise yet, and nothing installed uses it).

The span model reads Latin words by their shapes: capitals, endings, the words around them. Most
scripts have no capitals and some no spaces ("我叫王伟。"), so this model reads characters: each
character is labeled PERSON, STREET_ADDRESS, DATE_OF_BIRTH, HEALTH or nothing by a multinomial
logistic regression over hashed features of the characters around it (each of the nine from four
before to four after, the pairs and triples among them, their classes: space, digit, punctuation,
Latin or other letter) and of the words around it where the script is written with spaces. A run
of characters with one label is a finding, as sure as the label's mean probability over it.
`research.script_tagger` trains and measures it; its docstring has the figures.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import numpy.typing as npt

from classifiers.privacy.findings import Finding

LABELS = ("O", "PERSON", "STREET_ADDRESS", "DATE_OF_BIRTH", "HEALTH")
DETECTOR = "script-tagger"
AROUND = 4  # characters either side a feature reads

_SPACE, _DIGIT, _PUNCT, _LATIN, _LETTER, _PAD = range(6)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MUL = np.uint64(0xBF58476D1CE4E5B9)


def _classes(text: str) -> npt.NDArray[np.uint64]:
    out = np.empty(len(text), dtype=np.uint64)
    for i, ch in enumerate(text):
        if ch.isspace():
            out[i] = _SPACE
        elif ch.isdigit():
            out[i] = _DIGIT
        elif not ch.isalpha():
            out[i] = _PUNCT
        elif ch < "\u0250":
            out[i] = _LATIN
        else:
            out[i] = _LETTER
    return out


def _word_hash(word: str) -> int:
    h = 1469598103934665603  # FNV-1a: the same number in every process, unlike `hash`
    for ch in word:
        h = ((h ^ ord(ch)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def _words(text: str) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """For each character, a hash of its word, the word before and the word after (0 for none;
    a word: a run of characters between spaces, its punctuation at either end left off)."""
    n = len(text)
    here = np.zeros(n, dtype=np.uint64)
    before = np.zeros(n, dtype=np.uint64)
    after = np.zeros(n, dtype=np.uint64)
    spans: list[tuple[int, int, int]] = []
    i = 0
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        j = i
        while j < n and not text[j].isspace():
            j += 1
        spans.append((i, j, _word_hash(text[i:j].strip(_EDGES).lower())))
        i = j
    for k, (start, end, h) in enumerate(spans):
        here[start:end] = h
        if k:
            before[start:end] = spans[k - 1][2]
        if k + 1 < len(spans):
            after[start:end] = spans[k + 1][2]
    return here, before, after


_EDGES = "\"'()[]{}<>«»“”‘’„,.;:!?¿¡、。，：；！？《》「」『』・…—–-"


def _mix(*parts: npt.NDArray[np.uint64] | int) -> npt.NDArray[np.uint64]:
    h = np.zeros((), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for part in parts:
            h = (h ^ np.asarray(part, dtype=np.uint64)) * _MUL + _MIX
            h = h ^ (h >> np.uint64(29))
    return np.asarray(h, dtype=np.uint64)


def features(text: str, buckets: int, words: bool = True) -> npt.NDArray[np.int64]:
    """The hashed features of each character of `text`: an array (characters, features) of
    buckets in [0, buckets); `words`: with those of the words around it."""
    n = len(text)
    pad = np.full(AROUND, 0, dtype=np.uint64)
    codes = np.concatenate((pad, np.fromiter(map(ord, text), dtype=np.uint64, count=n), pad))
    kinds = np.concatenate((pad + _PAD, _classes(text), pad + _PAD))

    def at(array: npt.NDArray[np.uint64], d: int) -> npt.NDArray[np.uint64]:
        return array[AROUND + d : AROUND + d + n]

    columns = [_mix(0, np.zeros(n, dtype=np.uint64))]
    columns += [_mix(1, d + 8, at(codes, d)) for d in range(-AROUND, AROUND + 1)]
    columns += [_mix(2, d + 8, at(codes, d), at(codes, d + 1)) for d in range(-AROUND, AROUND)]
    columns += [_mix(3, d + 8, at(codes, d), at(codes, d + 1), at(codes, d + 2)) for d in range(-2, 1)]
    columns += [_mix(4, d + 8, at(kinds, d)) for d in range(-3, 4)]
    columns.append(_mix(5, at(kinds, -1), at(kinds, 0), at(kinds, 1)))
    if words:
        here, before, after = _words(text)
        columns += [_mix(6, here), _mix(7, before), _mix(8, after)]
    hashed = np.stack(columns, axis=1)
    return (hashed % np.uint64(buckets)).astype(np.int64)


class Tagger:
    """A trained model: weights per bucket and label, the threshold a finding is kept from, and
    whether it reads the words around a character."""

    def __init__(self, weights: npt.NDArray[np.float32], threshold: float, words: bool) -> None:
        self.weights = weights
        self.threshold = threshold
        self.words = words

    def probabilities(self, text: str) -> npt.NDArray[np.float64]:
        """Each character's probability of each label, an array (characters, labels)."""
        logits = self.weights[features(text, len(self.weights), self.words)].sum(axis=1, dtype=np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def find(self, text: str) -> list[Finding]:
        """The runs of `text`'s characters with one label, each as sure as the label's mean
        probability over it, from the model's threshold."""
        return runs(text, self.probabilities(text), self.threshold)


def runs(text: str, probabilities: npt.NDArray[np.float64], threshold: float) -> list[Finding]:
    """The runs of one label in `text` (spaces within a run take the run's label; punctuation and
    spaces at its ends are left off), each kept from `threshold`."""
    labels = probabilities.argmax(axis=1)
    found = []
    i, n = 0, len(text)
    while i < n:
        label = labels[i]
        if label == 0 or not _inner(text[i]):
            i += 1
            continue
        j = i + 1
        while j < n and (labels[j] == label or (text[j].isspace() and j + 1 < n and labels[j + 1] == label)):
            j += 1
        end = j
        while end > i and not _inner(text[end - 1]):
            end -= 1
        inner = [k for k in range(i, end) if not text[k].isspace()]
        if len(inner) >= 2:
            confidence = float(probabilities[inner, label].mean())
            if confidence >= threshold:
                found.append(Finding(LABELS[label], i, end, confidence, DETECTOR))
        i = j
    return found


def _inner(ch: str) -> bool:
    """Whether a run may begin or end with `ch`: a letter, a digit or a mark, not a space or
    punctuation (a name's full stop or comma is not the name's)."""
    return ch.isalnum() or unicodedata.category(ch).startswith("M")
