"""Masking private data before a prompt leaves, and putting it back in the answer.

Each distinct private value becomes a stable placeholder such as `[EMAIL_1]` (the same value gets
the same placeholder everywhere in the conversation); the cloud model sees only placeholders, and
its answer, streamed or not, has them replaced by the original values. A placeholder split
across stream chunks is held back until it is complete.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from classifiers.signals import PrivacyFinding
from router.request import ChatRequest

_PLACEHOLDER = re.compile(r"\[[A-Z_]+_\d+\]")
_LONGEST_PLACEHOLDER = 32


class Redaction:
    def __init__(self, request: ChatRequest, findings: tuple[PrivacyFinding, ...]) -> None:
        self.originals: dict[str, str] = {}  # placeholder -> original value
        placeholders: dict[tuple[str, str], str] = {}
        counts: dict[str, int] = {}
        messages = copy.deepcopy(request.messages)
        by_text: dict[tuple[int, int | None], list[PrivacyFinding]] = {}
        for f in findings:
            by_text.setdefault((f.message, f.part), []).append(f)
        for (message, part), found in by_text.items():
            holder = messages[message] if part is None else messages[message]["content"][part]
            key = "content" if part is None else "text"
            text = holder[key]
            for f in sorted(found, key=lambda f: f.start, reverse=True):
                value = text[f.start : f.end]
                if (f.type, value) not in placeholders:
                    counts[f.type] = counts.get(f.type, 0) + 1
                    placeholders[(f.type, value)] = f"[{f.type}_{counts[f.type]}]"
                    self.originals[placeholders[(f.type, value)]] = value
                text = text[: f.start] + placeholders[(f.type, value)] + text[f.end :]
            holder[key] = text
        self.request = dataclasses.replace(request, messages=messages, body={**request.body, "messages": messages})

    def restore(self, text: str) -> str:
        if not self.originals or "[" not in text:
            return text
        return _PLACEHOLDER.sub(lambda m: self.originals.get(m.group(), m.group()), text)

    def restore_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        for choice in body.get("choices", []):
            message = choice.get("message") or {}
            if isinstance(message.get("content"), str):
                message["content"] = self.restore(message["content"])
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if isinstance(function.get("arguments"), str):
                    function["arguments"] = self.restore(function["arguments"])
        return body

    def stream_restorer(self) -> StreamRestorer:
        return StreamRestorer(self)


class StreamRestorer:
    """Restores placeholders in streamed text, per choice, across chunk boundaries."""

    def __init__(self, redaction: Redaction) -> None:
        self._redaction = redaction
        self._held: dict[int, str] = {}

    def feed(self, index: int, text: str) -> str:
        text = self._held.pop(index, "") + text
        cut = text.rfind("[")
        if cut != -1 and "]" not in text[cut:] and len(text) - cut < _LONGEST_PLACEHOLDER:
            self._held[index] = text[cut:]
            text = text[:cut]
        return self._redaction.restore(text)

    def flush(self, index: int) -> str:
        return self._redaction.restore(self._held.pop(index, ""))

    def restore_chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        for choice in chunk.get("choices", []):
            delta = choice.get("delta") or {}
            index = choice.get("index", 0)
            if isinstance(delta.get("content"), str):
                delta["content"] = self.feed(index, delta["content"])
            if choice.get("finish_reason") is not None:
                tail = self.flush(index)
                if tail:
                    delta["content"] = (delta.get("content") or "") + tail
        return chunk
