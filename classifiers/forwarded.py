"""Every string of a request body that a provider would receive, each with its JSON path.

The privacy scan reads these, not only the messages' text: a name in a message's `name`, a card
in an earlier tool call's arguments, an email in `user`, `metadata`, a tool's description, a
prediction or a media URL's query string reaches the provider as surely as the prompt does.
Media that edgeway cannot read (images, audio, files) is listed apart, so that a policy can keep
it local instead of forwarding it unread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MEDIA_PARTS = frozenset({"image_url", "input_audio", "file", "input_image", "input_file"})
PAYLOAD_KEYS = frozenset({"data", "file_data"})  # base64 media bytes: not text to scan


@dataclass(frozen=True)
class Key:
    """A path step naming a mapping's key itself (a private value used as a key), not its value."""

    name: str


Path = tuple[str | int | Key, ...]


def forwarded_strings(body: Mapping[str, Any]) -> tuple[list[tuple[Path, str]], list[Path]]:
    """(path, string) for every string in `body`, keys included, and the paths of media parts."""
    strings: list[tuple[Path, str]] = []
    media: list[Path] = []
    stack: list[tuple[Path, Any]] = [((), body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            strings.append((path, value))
        elif isinstance(value, dict):
            if value.get("type") in MEDIA_PARTS:
                media.append(path)
            for key, item in value.items():
                if not isinstance(key, str):
                    continue
                if path and key not in _SCHEMA_KEYS:
                    strings.append(((*path, Key(key)), key))
                if isinstance(item, str):
                    if key in _ENUMERATED and item in _ENUMERATED[key]:
                        continue  # a schema's word ("user", "text", "function"), validated elsewhere
                    if path and (key in PAYLOAD_KEYS or (item.startswith("data:") and len(item) > 256)):
                        continue  # media bytes: the part is listed in `media`
                stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack += [((*path, i), item) for i, item in enumerate(value)]
    strings.reverse()  # in document order, as the stack popped them backwards
    return strings, media


_ENUMERATED = {
    "role": frozenset({"system", "developer", "user", "assistant", "tool", "function"}),
    "type": frozenset({"text", "image_url", "input_audio", "file", "refusal", "function", "object", "string",
                       "number", "integer", "boolean", "array", "null", "json_schema", "json_object", "content"}),
    "detail": frozenset({"auto", "low", "high"}),
    "format": frozenset({"wav", "mp3", "flac", "opus", "pcm16"}),
}  # fmt: skip

# Keys of the request schemas edgeway accepts: not free text, and never private. Any other key
# (of `metadata`, a tool's parameters, a JSON schema's properties) is scanned like a value.
_SCHEMA_KEYS = frozenset(
    {
        "role", "content", "name", "type", "text", "refusal", "image_url", "url", "detail", "input_audio",
        "data", "format", "file", "file_id", "file_data", "filename", "tool_calls", "id", "function",
        "arguments", "tool_call_id", "description", "parameters", "strict", "properties", "required",
        "items", "enum", "additionalProperties", "anyOf", "oneOf", "allOf", "$ref", "$defs", "default",
        "title", "minimum", "maximum", "minLength", "maxLength", "pattern", "const", "json_schema", "schema",
        "audio", "prediction", "cache_control", "annotations", "index", "prefix", "reasoning_content",
    }
)  # fmt: skip
