"""The hyperparameters chosen on validation folds, kept as data (research/chosen.json).

Training reads them and never re-chooses: a choice between candidates whose scores differ by less
than one machine's rounding from another's would otherwise flip from one CPU to the next, and
every artifact with it. `python -m research.select` reruns the choices (with a margin and a fixed
tie-break) and rewrites the file; a change to it is a change to review, like any other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research.privacy_model import Thresholds

CHOSEN = Path(__file__).with_name("chosen.json")


def _read() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CHOSEN.read_text(encoding="utf-8"))
    return data


def privacy_thresholds() -> Thresholds:
    return Thresholds(**_read()["privacy_thresholds"])


def write(thresholds: Thresholds) -> None:
    data = {"privacy_thresholds": thresholds.as_dict()}
    CHOSEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
