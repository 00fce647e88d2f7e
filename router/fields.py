"""One field of a JSON request body, read as OpenAI reads it: its type and range, and an error
that names the field and what it got when it is wrong."""

from __future__ import annotations

from typing import Any

from router.errors import InvalidRequest


def require_object(where: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise InvalidRequest(
            f"Invalid type for '{where}': expected an object, got {kind_of(value)}.", param=where, code="invalid_type"
        )


def optional(obj: dict[str, Any], key: str, kind: type, expected: str, prefix: str = "") -> Any:
    value = obj.get(key)
    if value is None:
        return None
    # bool is an int subclass in Python; JSON keeps them apart and so do we.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidRequest(
            f"Invalid type for '{prefix}{key}': expected {expected}, got {kind_of(value)}.",
            param=prefix + key,
            code="invalid_type",
        )
    return value


def number_in(body: dict[str, Any], key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequest(
            f"Invalid type for '{key}': expected a number, got {kind_of(value)}.", param=key, code="invalid_type"
        )
    if not low <= value <= high:
        raise InvalidRequest(
            f"Invalid value for '{key}': {value} is outside [{low:g}, {high:g}].", param=key, code="invalid_value"
        )
    return float(value)


def kind_of(value: Any) -> str:
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)
