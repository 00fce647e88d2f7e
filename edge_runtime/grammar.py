"""Grammars that constrain what the edge model may write: JSON, or JSON that matches a schema.

The grammar is llama.cpp's GBNF, from llama-cpp-python's own converter (`json_schema_to_gbnf`,
the port of llama.cpp's json-schema-to-grammar), and is applied while sampling: a token that
would break the grammar is never drawn, so the answer parses (unless max_tokens cuts it short,
which finish_reason `length` then says).
"""

from __future__ import annotations

import json
import re
from typing import Any

STRING_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F]'  # JSON's: no quote, backslash or control
_ANY_CHAR = re.compile(r'^char ::= \[\^"\\\\\]', re.M)


class GrammarError(ValueError):
    """The schema cannot be turned into a grammar (an unsupported keyword, a bad reference)."""


def json_grammar(schema: dict[str, Any] | None = None) -> str:
    """GBNF for any JSON object, or for JSON that matches `schema`."""
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    if schema is None:
        return JSON_GBNF.replace("root   ::= object", "root ::= object", 1)
    try:
        grammar = str(json_schema_to_gbnf(json.dumps(schema)))
    except (ValueError, KeyError, TypeError, RecursionError, AssertionError, NotImplementedError) as exc:
        raise GrammarError(f"the JSON schema cannot be enforced on the edge model ({exc})") from None
    # The converter's string character admits raw control characters (a line break inside a
    # string), which JSON does not: the model wrote such strings and the client's parser refused
    # them. Its own JSON grammar (JSON_GBNF) excludes them; so does this one, now.
    return _ANY_CHAR.sub(lambda _: STRING_CHAR, grammar)
