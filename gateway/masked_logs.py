"""No private value in the gateway's log: every value a record carries that a client could have
sent is read by the privacy scan and written with each finding masked (`[US_SSN]`), before any
handler formats it. A provider's error that quotes the prompt ("could not process: My SSN is ...")
is the usual way a private value would reach a log; a client's string in an exception is another.

What is read depends on who wrote the line:

- edgeway's own loggers (`edgeway.*`) and uvicorn's write a fixed message with `%s` arguments:
  the message is the server's own words and stays as it is ("Uvicorn running on ...", "Press
  CTRL+C"); each argument is read, but for numbers and `Known` values (request and batch ids, the
  names of models, rules and apps), which are the gateway's own and stay greppable;
- any other library's record is read whole (a library may put a prompt in its message);
- a traceback's frames, which are edgeway's and its libraries' code, are read for identifiers and
  secrets only (read as prose, `Traceback` is a name, `self.app` a host and `ModelFileError` a
  person), and its exception lines for their message, after the exception's class
  (`edge_runtime.errors.PromptTooLong: ...` keeps its class). A message that carries a traceback
  as text (uvicorn logs a failed start-up so) is read the same way.

A message is masked of every type but links and the loopback and unspecified addresses (a log
names the nodes and providers it talks to, and where the gateway listens). The names of the
configured models ("claude-fake", "anthropic/claude-3-5-haiku-latest") are not read as people: a
finding that lies inside one of them, as written, is kept; "Claude" anywhere else is masked as any
name.

Installed on the root handlers by `edgeway serve`: a record costs one scan of each argument.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable
from typing import Any

from classifiers.privacy import STRUCTURED_TYPES, PrivacyScanner
from classifiers.privacy.findings import Finding, masked
from classifiers.privacy.known import Known

NOT_MASKED = frozenset({"URL"})
TRACEBACK = "Traceback (most recent call last):"
_FRAME = "  File "  # a traceback's frame line; the code lines under it are indented by four
# An exception line: the exception's qualified class, then its message (which may hold a client's text).
_EXCEPTION_LINE = re.compile(r"^(\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*: )")
# Who writes a fixed message with its variable parts as arguments.
OWN_LOGGERS = ("edgeway", "uvicorn")


class MaskPrivate(logging.Filter):
    def __init__(self, scanner: PrivacyScanner, model_names: Iterable[str] = ()) -> None:
        super().__init__()
        self.scanner = scanner
        self.model_names = [n for n in dict.fromkeys(model_names) if n]

    def mask(self, text: str, only: frozenset[str] | None = None) -> str:
        found = [
            f
            for f in self.scanner.scan(text)
            if f.type not in NOT_MASKED and (only is None or f.type in only) and not _this_machine(text, f)
        ]
        if found and self.model_names:
            names = _occurrences(text, self.model_names)
            found = [f for f in found if not any(start <= f.start and f.end <= end for start, end in names)]
        return masked(text, found) if found else text

    def mask_trace(self, text: str) -> str:
        """Code lines (a frame's, and the source and carets under it) of structured values only;
        an exception line's message after its class; every other line in full."""
        structured = frozenset(STRUCTURED_TYPES)
        lines, in_frame = [], False
        for line in text.split("\n"):
            in_frame = line.startswith(_FRAME) or (in_frame and line.startswith("    "))
            if in_frame:
                lines.append(self.mask(line, structured))
                continue
            exception = _EXCEPTION_LINE.match(line)
            if exception is not None:
                lines.append(exception.group(1) + self.mask(line[exception.end() :]))
            else:
                lines.append(self.mask(line))
        return "\n".join(lines)

    def argument(self, value: Any) -> Any:
        """One argument of a fixed message, as the log may show it."""
        if value is None or isinstance(value, (Known, bool, int, float)):
            return value
        return self.mask(str(value))

    def filter(self, record: logging.LogRecord) -> bool:
        own = record.name.split(".", 1)[0] in OWN_LOGGERS and isinstance(record.msg, str)
        if own and TRACEBACK not in record.msg:
            args = record.args
            if isinstance(args, dict):
                record.args = {k: self.argument(v) for k, v in args.items()}
            elif args:
                record.args = tuple(self.argument(v) for v in args)
        else:
            message = record.getMessage()
            record.msg, record.args = self.mask_trace(message) if TRACEBACK in message else self.mask(message), ()
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text, record.exc_info = self.mask_trace(text), None
        if record.stack_info:
            record.stack_info = self.mask_trace(record.stack_info)
        return True


def _this_machine(text: str, finding: Finding) -> bool:
    """127.0.0.1, ::1, 0.0.0.0: where the gateway listens, no one's private address."""
    if finding.type != "IP_ADDRESS":
        return False
    try:
        address = ipaddress.ip_address(text[finding.start : finding.end].strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


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


def install(scanner: PrivacyScanner, model_names: Iterable[str] = ()) -> MaskPrivate:
    """Mask every record that reaches the root logger's handlers (the gateway's, uvicorn's and the
    libraries' that propagate to it); `model_names`: the configured models' names and provider ids."""
    found = MaskPrivate(scanner, model_names)
    for handler in logging.getLogger().handlers:
        handler.addFilter(found)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(found)
    return found
