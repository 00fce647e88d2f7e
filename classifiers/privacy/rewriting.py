"""A text read another way, each character of the reading knowing where in the text it came
from: what is found in the reading is masked whole where it was written."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from classifiers.privacy.findings import Finding


class Reading(NamedTuple):
    """A text read another way, and for each of its characters where the text it came from starts
    and ends."""

    text: str
    starts: list[int]
    ends: list[int]

    def located(self, found: Finding, length: int) -> Finding:
        """`found` in this reading, located in the text it came from (`length` long)."""
        start = self.starts[found.start] if found.start < len(self.text) else length
        return found._replace(start=start, end=self.ends[found.end - 1] if found.end > found.start else start)

    def then(self, other: Reading | None) -> Reading:
        """`other`, a reading of this reading's text, as a reading of the text this one came from."""
        if other is None:
            return self
        starts = [self.starts[i] if i < len(self.text) else (self.ends[-1] if self.ends else 0) for i in other.starts]
        ends = [self.ends[e - 1] if e > 0 else (self.starts[0] if self.starts else 0) for e in other.ends]
        return Reading(other.text, starts, ends)


def as_written(text: str, start: int, end: int, out: list[str], starts: list[int], ends: list[int]) -> None:
    out.append(text[start:end])
    starts += range(start, end)
    ends += range(start + 1, end + 1)


def rewritten(text: str, spans: Iterable[tuple[int, int, list[tuple[str, int, int]]]]) -> Reading | None:
    """`text` with each of `spans` (start, end, and what it reads as: pieces of text, each with
    where in `text` it comes from) read as written there, the rest as it is; None for no span."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for start, end, pieces in spans:
        as_written(text, at, start, out, starts, ends)
        for chars, first, last in pieces:
            out.append(chars)
            starts += [first] * len(chars)
            ends += [last] * len(chars)
        at = end
    if not out:
        return None
    as_written(text, at, len(text), out, starts, ends)
    return Reading("".join(out), starts, ends)
