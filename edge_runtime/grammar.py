"""Grammars that constrain what the edge model may write: JSON, or JSON that matches a schema.

The grammar is llama.cpp's GBNF, from llama-cpp-python's own converter (`json_schema_to_gbnf`,
the port of llama.cpp's json-schema-to-grammar), and is applied while sampling: a token that
would break the grammar is never drawn, so the answer parses (unless max_tokens cuts it short,
which finish_reason `length` then says).

Any valid JSON Schema is taken, but a grammar cannot say everything a schema can (a number's
`minimum`, `uniqueItems`, `not`, `if`/`then`, most `format`s), and the converter reads some
schemas wrongly (`{}` or `true`, any value, it reads as an object; a bare `{"description": ...}`
it refuses). So the schema is first rewritten into one the converter reads as the schema means,
keeping every constraint a grammar can hold (`for_grammar`); where that drops a constraint, the
answer is checked against the whole schema after sampling (`SchemaGrammar.check`), and the caller
samples again or refuses: an answer that breaks its schema never goes out as if it held.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STRING_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F]'  # JSON's: no quote, backslash or control
_ANY_CHAR = re.compile(r'^char ::= \[\^"\\\\\]', re.M)

# Keywords that only describe: they constrain nothing, and the grammar leaves them out.
ANNOTATIONS = frozenset(
    {"title", "description", "examples", "example", "default", "$comment", "deprecated", "readOnly", "writeOnly",
     "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "contentMediaType", "contentEncoding",
     "contentSchema", "nullable", "discriminator", "xml", "externalDocs"}
)  # fmt: skip
# Keywords the converter turns into grammar exactly as the schema means them (with the rewriting
# below); any other constraining keyword is checked after sampling.
HELD = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
     "enum", "const", "anyOf", "$ref", "$defs", "definitions", "pattern", "format", "minLength", "maxLength"}
)  # fmt: skip
# A number's bounds: held where they leave a few integers (written as their list), else checked after.
BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
GRAMMAR_FORMATS = frozenset({"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"})
TYPES = ("null", "boolean", "number", "string", "array", "object")
ANY: dict[str, Any] = {"type": list(TYPES)}  # a JSON value of any kind, as the converter reads it


class GrammarError(ValueError):
    """The schema is not a JSON schema, or names what cannot be read here (a remote `$ref`)."""


@dataclass(frozen=True)
class SchemaGrammar:
    """The grammar for a schema, and, where the grammar holds less than the schema says, the check
    an answer must pass: `check(value)` is None for a value that matches, else what is wrong."""

    gbnf: str
    check: Callable[[Any], str | None] | None


def json_grammar(schema: dict[str, Any] | None = None) -> str:
    """GBNF for any JSON object, or for JSON that matches `schema` as far as a grammar can hold it."""
    from llama_cpp.llama_grammar import JSON_GBNF

    if schema is None:
        return JSON_GBNF.replace("root   ::= object", "root ::= object", 1)
    return schema_grammar(schema).gbnf


def schema_grammar(schema: Any) -> SchemaGrammar:
    """The grammar for `schema` and its check after sampling (None where the grammar holds it all)."""
    validator = _validator(schema)
    rewritten, exact = for_grammar(schema)
    return SchemaGrammar(rewritten_gbnf(rewritten), None if exact else _check(validator))


def for_grammar(schema: Any) -> tuple[dict[str, Any], bool]:
    """`schema` rewritten into what the converter reads as the schema means, and whether that
    keeps every constraint (else the answer must be checked after sampling)."""
    rewriting = _Rewriting()
    return rewriting.node(schema), rewriting.exact


class _Rewriting:
    def __init__(self) -> None:
        self.exact = True

    def loses(self) -> None:
        self.exact = False

    def node(self, schema: Any) -> dict[str, Any]:
        if schema is True:
            return dict(ANY)
        if schema is False:  # no value matches: the check says so
            self.loses()
            return dict(ANY)
        if not isinstance(schema, dict):
            raise GrammarError(f"a schema must be an object or a boolean, not {schema!r}")
        kept = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
        for key in list(kept):
            if key not in HELD and key not in BOUNDS:
                del kept[key]
                if _constrains(key):
                    self.loses()
        if "allOf" in schema:
            kept = self._all_of(kept, schema["allOf"])
        if "oneOf" in schema:
            branches = schema["oneOf"]
            if not isinstance(branches, list) or not branches:
                raise GrammarError("oneOf must be a non-empty list of schemas")
            if len(branches) > 1 or "anyOf" in kept:
                self.loses()  # that only one branch matches is for the check
            if "anyOf" not in kept:
                kept["anyOf"] = branches
        return self._held(kept)

    def _all_of(self, kept: dict[str, Any], parts: Any) -> dict[str, Any]:
        """Every part merged into one schema where they do not disagree; what they disagree on,
        and what a part says that a grammar cannot, is for the check."""
        if not isinstance(parts, list):
            raise GrammarError("allOf must be a list of schemas")
        merged = dict(kept)
        for part in parts:
            if part is True:
                continue
            if not isinstance(part, dict):
                self.loses()
                continue
            for key, value in part.items():
                if key in ANNOTATIONS:
                    continue
                if key not in HELD and key not in BOUNDS:
                    if _constrains(key) or key in ("allOf", "oneOf"):
                        self.loses()
                elif key == "properties" and isinstance(value, dict):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = sorted({*merged.get("required", []), *value})
                elif key not in merged:
                    merged[key] = value
                elif merged[key] != value:
                    self.loses()
        return merged

    def _held(self, node: dict[str, Any]) -> dict[str, Any]:
        """A node of held keywords, rewritten into the branch of the converter that reads it."""
        for key in ("$defs", "definitions"):
            if isinstance(node.get(key), dict):
                node[key] = {name: self.node(sub) for name, sub in node[key].items()}
        ref = node.get("$ref")
        if ref is not None:
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise GrammarError(f"$ref {ref!r} is not in the schema itself; the edge fetches no schema")
            if any(k not in ("$ref", "$defs", "definitions") for k in node):
                self.loses()  # the converter reads the reference alone
            return {k: v for k, v in node.items() if k in ("$ref", "$defs", "definitions")}
        if "anyOf" in node:
            rest = {k: v for k, v in node.items() if k not in ("anyOf", "$defs", "definitions")}
            if not isinstance(node["anyOf"], list) or not node["anyOf"]:
                raise GrammarError("anyOf must be a non-empty list of schemas")
            # each branch carries what stands beside anyOf: the converter reads anyOf alone
            branches = [self.node({**rest, **b} if isinstance(b, dict) else b) for b in node["anyOf"]]
            return {"anyOf": branches, **_defs(node)}
        if "const" in node or "enum" in node:
            if any(k not in ("const", "enum", "type", "$defs", "definitions") for k in node):
                self.loses()
            if "const" in node and "enum" in node:
                self.loses()
            key = "const" if "const" in node else "enum"
            return {key: node[key], **_defs(node)}
        kinds = node.get("type")
        if isinstance(kinds, list):
            if not kinds:
                raise GrammarError("type must not be an empty list")
            rest = {k: v for k, v in node.items() if k not in ("type", "$defs", "definitions")}
            return {"anyOf": [self._typed({**rest, "type": kind}) for kind in kinds], **_defs(node)}
        if kinds is None:
            kinds = _implied_type(node)
            if kinds is None:
                return {**ANY, **_defs(node)}  # nothing that constrains: any value
            node = {**node, "type": kinds}
        return {**self._typed(node), **_defs(node)}

    def _typed(self, node: dict[str, Any]) -> dict[str, Any]:
        """A node of one type, with the keywords the converter holds for it."""
        kind = node["type"]
        if kind not in (*TYPES, "integer"):
            raise GrammarError(f"type {kind!r} is not a JSON schema type")
        if kind == "object":
            out: dict[str, Any] = {"type": "object"}
            properties = node.get("properties")
            if isinstance(properties, dict):
                out["properties"] = {}
                for name, sub in properties.items():
                    if sub is False:  # may not appear: the grammar leaves it out
                        if name in (node.get("required") or []):
                            self.loses()
                        continue
                    out["properties"][name] = self.node(sub)
            if isinstance(node.get("required"), list):
                out["required"] = [r for r in node["required"] if r in out.get("properties", {})]
                if len(out["required"]) < len(node["required"]):
                    self.loses()  # a required key with no schema: the converter cannot require it
            extra = node.get("additionalProperties", True)
            if extra is False or (extra is True and "properties" in out):
                # Beside named properties, the grammar writes those alone (a subset of what the
                # schema allows: a small model held to the keys it was given).
                out["additionalProperties"] = False
            elif extra is not True:
                out["additionalProperties"] = self.node(extra)
            if "properties" not in out and "additionalProperties" not in out:
                return {"type": "object"}  # any object
            out.setdefault("properties", {})
            return out
        if kind == "array":
            out = {"type": "array"}
            items, prefix = node.get("items"), node.get("prefixItems")
            if isinstance(prefix, list):
                out["prefixItems"] = [self.node(p) for p in prefix]
                if items is not None and items is not False:
                    self.loses()  # items after the prefix: the converter writes the prefix only
                if "minItems" in node or "maxItems" in node:
                    self.loses()
                return out
            if isinstance(items, list):  # the older tuple form
                return {"type": "array", "prefixItems": [self.node(p) for p in items]}
            out["items"] = self.node(True if items is None else items)
            for key in ("minItems", "maxItems"):
                if key in node:
                    out[key] = node[key]
            return out
        if kind == "string":
            pattern, format_ = node.get("pattern"), node.get("format")
            bounded = "minLength" in node or "maxLength" in node
            if pattern is not None:
                if format_ is not None or bounded or not _pattern_held(pattern):
                    self.loses()
                if _pattern_held(pattern):
                    return {"type": "string", "pattern": pattern}
                return {"type": "string"}
            if format_ is not None:
                if format_ in GRAMMAR_FORMATS:
                    if bounded:
                        self.loses()
                    return {"type": "string", "format": format_}
                self.loses()  # an email, a URI: checked after
            if bounded:
                return {"type": "string", **{k: node[k] for k in ("minLength", "maxLength") if k in node}}
            return {"type": "string"}
        if kind == "integer":
            allowed = _small_range(node)
            if allowed is not None:  # a few integers: the grammar names them, exactly
                return {"enum": allowed}
        # null, boolean, number, integer: the converter holds the type; a number's bounds are checked after
        if kind in ("number", "integer") and BOUNDS.intersection(node):
            self.loses()
        return {"type": kind}


SMALL_RANGE = 256  # an integer bounded to this many values or fewer is written as their list


def _small_range(node: dict[str, Any]) -> list[int] | None:
    """The integers a bounded integer schema allows, where they are few (else None)."""
    low, high = node.get("minimum"), node.get("maximum")
    exclusive_low, exclusive_high = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if isinstance(exclusive_low, (int, float)) and not isinstance(exclusive_low, bool):
        low = exclusive_low if low is None else max(low, exclusive_low)
        low = math.floor(low) + 1 if low == exclusive_low else low
    elif exclusive_low is True and low is not None:  # draft 4: a flag on minimum
        low = math.floor(low) + 1
    if isinstance(exclusive_high, (int, float)) and not isinstance(exclusive_high, bool):
        high = exclusive_high if high is None else min(high, exclusive_high)
        high = math.ceil(high) - 1 if high == exclusive_high else high
    elif exclusive_high is True and high is not None:
        high = math.ceil(high) - 1
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return None
    first, last = math.ceil(low), math.floor(high)
    if last - first >= SMALL_RANGE:
        return None
    step = node.get("multipleOf")
    values = list(range(first, last + 1))
    if step is not None:
        if not isinstance(step, (int, float)) or isinstance(step, bool) or step <= 0:
            return None
        values = [v for v in values if (v / step).is_integer()]
    return values or None


def _defs(node: dict[str, Any]) -> dict[str, Any]:
    return {k: node[k] for k in ("$defs", "definitions") if k in node}


def _implied_type(node: dict[str, Any]) -> str | None:
    """The type a node's keywords imply when it names none (a schema of `properties` alone)."""
    if "properties" in node or "additionalProperties" in node or "required" in node:
        return "object"
    if "items" in node or "prefixItems" in node or "minItems" in node or "maxItems" in node:
        return "array"
    if "pattern" in node or "format" in node or "minLength" in node or "maxLength" in node:
        return "string"
    return None


# Keywords that name nothing a value must be (unknown to JSON Schema, or only read by others).
_NOT_CONSTRAINING = frozenset({"$dynamicRef", "$recursiveAnchor", "$recursiveRef"})
_KNOWN_CONSTRAINTS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "not", "if", "then", "else",
     "dependentRequired", "dependentSchemas", "dependencies", "patternProperties", "propertyNames",
     "unevaluatedProperties", "unevaluatedItems", "contains", "minContains", "maxContains", "uniqueItems",
     "minProperties", "maxProperties", "allOf", "oneOf", "additionalItems"}
)  # fmt: skip


def _constrains(key: str) -> bool:
    """Whether a keyword the grammar leaves out says something a value must be (else it is one
    JSON Schema ignores: an unknown keyword constrains nothing)."""
    return key in _KNOWN_CONSTRAINTS and key not in ("allOf", "oneOf")


def _pattern_held(pattern: Any) -> bool:
    """Whether the converter can write this regular expression as grammar."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    if not isinstance(pattern, str):
        return False
    try:
        json_schema_to_gbnf(json.dumps({"type": "string", "pattern": pattern}))
    except Exception:  # noqa: BLE001 - the converter raises what it likes on a pattern it cannot read
        return False
    return True


def rewritten_gbnf(schema: dict[str, Any]) -> str:
    """GBNF for a schema `for_grammar` wrote (the converter reads it as it means)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        grammar = str(json_schema_to_gbnf(json.dumps(schema)))
    except (ValueError, KeyError, TypeError, RecursionError, AssertionError, NotImplementedError) as exc:
        raise GrammarError(f"the JSON schema cannot be written as a grammar ({exc})") from None
    # The converter's string character admits raw control characters (a line break inside a
    # string), which JSON does not: the model wrote such strings and the client's parser refused
    # them. Its own JSON grammar (JSON_GBNF) excludes them; so does this one, now.
    return _ANY_CHAR.sub(lambda _: STRING_CHAR, grammar)


def _validator(schema: Any) -> Any:
    """A jsonschema validator for `schema`, by its `$schema` (2020-12 when it names none); a
    schema that is not one is a GrammarError."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, (dict, bool)):
        raise GrammarError("a JSON schema must be an object")
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise GrammarError(f"not a valid JSON schema: {exc.message}") from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _check(validator: Any) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        from jsonschema.exceptions import ValidationError

        try:
            error = next(iter(validator.iter_errors(value)), None)
        except ValidationError as exc:  # (iter_errors yields them; a broken $ref may raise)
            error = exc
        except Exception as exc:  # noqa: BLE001 - an unresolvable reference, a bad regex
            return f"cannot be checked against the schema ({exc})"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message}" + (f" (at {where})" if where else "")

    return check
