"""Turning a stream of token bytes into text deltas that honour stop sequences.

A token may end inside a UTF-8 character, and a stop sequence may straddle tokens, so text is
released only when it can no longer become part of a stop sequence.
"""

from __future__ import annotations

import codecs


class TextStream:
    def __init__(self, stop: list[str]) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stop = [s for s in stop if s]
        self._held = ""
        self.stopped = False
        self.stopped_by: str | None = None  # the stop sequence that ended it (Anthropic reports it)

    def feed(self, piece: bytes) -> str:
        """Add one token's bytes; return the text that is now safe to send."""
        if self.stopped:
            return ""
        self._held += self._decoder.decode(piece)
        hits = [(at, stop) for stop in self._stop if (at := self._held.find(stop)) != -1]
        if hits:
            at, self.stopped_by = min(hits, key=lambda hit: hit[0])
            self.stopped = True
            out, self._held = self._held[:at], ""
            return out
        keep = self._longest_stop_prefix_suffix()
        out = self._held[: len(self._held) - keep]
        self._held = self._held[len(out) :]
        return out

    def flush(self) -> str:
        """The end of generation: release whatever was held back. The bytes of a character that
        max_tokens cut in half are dropped, not sent as U+FFFD."""
        if self.stopped:
            return ""
        out = self._held
        self._held = ""
        self._decoder.reset()
        return out

    def _longest_stop_prefix_suffix(self) -> int:
        """Length of the longest end of the held text that begins some stop sequence."""
        best = 0
        for stop in self._stop:
            for n in range(min(len(stop) - 1, len(self._held)), best, -1):
                if self._held.endswith(stop[:n]):
                    best = n
                    break
        return best
