"""Whether a rule's `when` holds for one request, and which values it looked at (for explain)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from policies.schema import NumberTest, TextTest, When


@dataclass(frozen=True)
class Facts:
    """What a condition can test: the request's signals, its metadata and the live state."""

    complexity_of: Callable[[], float] = lambda: 0.0  # read only when a rule tests complexity
    prompt_tokens: int = 0
    max_tokens: int | None = None
    pii: frozenset[str] = frozenset()
    model: str = "auto"
    language: str = "und"
    tags: frozenset[str] = frozenset()
    needs: frozenset[str] = frozenset()  # of policies.needs.Need
    latency_budget_ms: float | None = None
    edge_queue_wait_ms: float = 0.0
    budget_left_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def complexity(self) -> float:
        return self.complexity_of()


def _number(test: NumberTest, value: float | None) -> bool:
    if value is None:
        return False  # an absent value (no max_tokens, no budget) passes no comparison
    return (
        (test.gt is None or value > test.gt)
        and (test.gte is None or value >= test.gte)
        and (test.lt is None or value < test.lt)
        and (test.lte is None or value <= test.lte)
        and (test.eq is None or value == test.eq)
        and (test.in_ is None or value in test.in_)
    )


def _text(test: TextTest, value: str) -> bool:
    return (test.eq is None or value == test.eq) and (test.in_ is None or value in test.in_)


_NUMERIC = ("complexity", "prompt_tokens", "max_tokens", "latency_budget_ms", "edge_queue_wait_ms", "budget_left_usd")


def matches(when: When | None, facts: Facts, observed: dict[str, Any]) -> bool:
    """True when every key of `when` holds; records each value it read in `observed`."""
    if when is None:
        return True
    result = True
    for key in when.model_fields_set:
        test = getattr(when, key)
        if key in _NUMERIC:
            value = getattr(facts, key)
            observed[key] = value
            ok = _number(test, value)
        elif key == "pii":
            observed["pii"] = sorted(facts.pii)
            ok = bool(facts.pii) if test == "any" else bool(facts.pii & set(test))
        elif key in ("model", "language"):
            observed[key] = getattr(facts, key)
            ok = _text(test, getattr(facts, key))
        elif key == "tags":
            observed["tags"] = sorted(facts.tags)
            ok = bool(facts.tags & set(test))
        elif key == "needs":
            observed["needs"] = sorted(facts.needs)
            ok = bool(facts.needs & set(test))
        elif key == "all":
            ok = all([matches(w, facts, observed) for w in test])
        elif key == "any":
            ok = any([matches(w, facts, observed) for w in test])
        elif key == "not_":
            ok = not matches(test, facts, observed)
        else:  # pragma: no cover - the schema admits no other key
            raise KeyError(key)
        result = result and ok
    return result
