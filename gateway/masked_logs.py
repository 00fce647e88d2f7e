"""No private value in the gateway's log: every value a client sent that the privacy scan found
(`router/client_values.py`: the router notes each request's) is written, wherever a record carries
it, as its type (`[US_SSN]`), before any handler formats the record. A provider's error that quotes
the prompt ("could not process: My SSN is ...") is the usual way a private value would reach a
log; a client's string in an exception is another; a library's message a third.

Only those values are masked: the rest of a record is the server's, its libraries' and its
operator's own words, and stays as it was written ("[Errno -2] Name or service not known", "not
valid YAML", an exporter's "Transient error"; a scan of every record read their capitalised words
as names). Within an edgeway or uvicorn record (a fixed message with `%s` arguments) the message
is the server's own and only its arguments are read, but for numbers and `Known` values (request
and batch ids, the names of models, rules and apps); any other record is read whole, and so are a
traceback's frames and exception lines.

The names of the configured models ("claude-fake", "anthropic/claude-3-5-haiku-latest") are the
log's own: a value found inside one of them, as written, is kept (a client who says "Claude" does
not mask the model's name).

Installed on the root handlers by `edgeway serve`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from classifiers.privacy.findings import drop_overlaps, masked
from classifiers.privacy.known import Known
from router.client_values import ClientValues

# Who writes a fixed message with its variable parts as arguments.
OWN_LOGGERS = ("edgeway", "uvicorn")


class MaskPrivate(logging.Filter):
    def __init__(self, values: ClientValues, model_names: Iterable[str] = ()) -> None:
        super().__init__()
        self.values = values
        self.model_names = [n for n in dict.fromkeys(model_names) if n]

    def mask(self, text: str) -> str:
        found = self.values.found(text)
        if found and self.model_names:
            names = _occurrences(text, self.model_names)
            found = [f for f in found if not any(start <= f.start and f.end <= end for start, end in names)]
        return masked(text, drop_overlaps(found)) if found else text

    def argument(self, value: Any) -> Any:
        """One argument of a fixed message, as the log may show it."""
        if value is None or isinstance(value, (Known, bool, int, float)):
            return value
        said = str(value)
        written = self.mask(said)
        return value if written == said else written

    def filter(self, record: logging.LogRecord) -> bool:
        own = record.name.split(".", 1)[0] in OWN_LOGGERS and isinstance(record.msg, str)
        if own:
            args = record.args
            if isinstance(args, dict):
                record.args = {k: self.argument(v) for k, v in args.items()}
            elif args:
                record.args = tuple(self.argument(v) for v in args)
            else:
                record.msg = self.mask(record.msg)  # a message written whole (a traceback uvicorn logs)
        else:
            record.msg, record.args = self.mask(record.getMessage()), ()
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text, record.exc_info = self.mask(text), None
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        return True


def _occurrences(text: str, names: list[str]) -> list[tuple[int, int]]:
    """Where each name stands in `text` as a whole word (not inside a longer run of letters,
    digits, dots, dashes or slashes)."""
    spans = []
    for name in names:
        at = text.find(name)
        while at >= 0:
            end = at + len(name)
            if (at == 0 or not _word_char(text[at - 1])) and (end == len(text) or not _word_char(text[end])):
                spans.append((at, end))
            at = text.find(name, end)
    return spans


def _word_char(char: str) -> bool:
    return char.isalnum() or char in "._-/@"


def install(values: ClientValues, model_names: Iterable[str] = ()) -> MaskPrivate:
    """Mask `values` in every record that reaches the root logger's handlers (the gateway's,
    uvicorn's and the libraries' that propagate to it); `model_names`: the configured models'
    names and provider ids."""
    found = MaskPrivate(values, model_names)
    for handler in logging.getLogger().handlers:
        handler.addFilter(found)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(found)
    return found
