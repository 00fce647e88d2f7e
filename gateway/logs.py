"""The gateway's one log format: every line (edgeway's, uvicorn's, the libraries') through one
handler on stderr, as plain text or, for log shippers, one JSON object a line (`edgeway serve
--log-format json`). What a line may say is masked before it is formatted (gateway/masked_logs.py
filters the same handler)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLines(logging.Formatter):
    """A record as one JSON object: its time (ISO 8601, UTC), level, logger and message, each of
    its named arguments as a key of its own (the access line's `status`, `app`, `route`, `model`,
    `rule`, `latency_ms`, `request_id`, ...: gateway/access_log.py), and its exception's traceback
    where it has one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if isinstance(record.args, Mapping):  # a message written from named fields: each a key
            line |= {str(k): v for k, v in record.args.items() if k not in line}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: str, form: str) -> None:
    """One handler on the root logger, in `form` (`plain` or `json`), at `level`; uvicorn's loggers
    write through it (they keep no handler of their own)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if form == "json" else logging.Formatter(PLAIN))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
