"""Policy files that take effect when they change, without a restart.

`PolicyFiles.refresh()` (the gateway calls it every half second) reloads each file whose
modification time or size changed, once it has stopped changing: a file is read when two looks in
a row see the same new time and size, so an edit written in two steps (truncated, then written,
as `Path.write_text` and many editors do) is read whole, not half-written and reported as a
failure. A valid edit replaces the policy for the next request (within a second); requests
already running keep the decision they were given. An invalid edit keeps the last good policy and
is reported in `errors` (the gateway shows it in the log, /readyz and /metrics).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from classifiers.privacy.known import Known
from policies.policy import AppPolicy, Models, load_policy
from policies.yaml_source import FileError, Problem

log = logging.getLogger("edgeway.policies")


@dataclass
class Loaded:
    path: Path
    policy: AppPolicy
    stamp: tuple[float, int]
    loaded_at: float
    error: str | None = None
    reloads: int = 0
    failed_reloads: int = 0
    settling: tuple[float, int] | None = None  # a new stamp seen once, read when seen again


def _stamp(path: Path) -> tuple[float, int]:
    stat = os.stat(path)
    return stat.st_mtime, stat.st_size


class PolicyFiles:
    def __init__(self, paths: dict[str, Path], models: Models, shared: str | None = None) -> None:
        """Loads every file now; raises FileError (all problems of all files) if any is invalid.
        `paths`: each app's file, by the app's name (whose `app:` must name it), and under `shared`
        the file every other app decides by (the default policy: its `app:` names none of them)."""
        self.models = models
        self.shared = shared
        self.loaded: dict[str, Loaded] = {}
        problems = []
        for app, path in paths.items():
            try:
                stamp = _stamp(path)
                self.loaded[app] = Loaded(path, load_policy(path, models, self._owner(app)), stamp, time.time())
            except FileError as exc:
                problems += exc.problems
            except OSError as exc:
                raise FileError([_unreadable(path, exc)]) from None
        if problems:
            raise FileError(problems)

    def _owner(self, app: str) -> str | None:
        return None if app == self.shared else app

    def current(self, app: str) -> AppPolicy:
        return self.loaded[app].policy

    def refresh(self) -> None:
        for app, entry in self.loaded.items():
            try:
                stamp = _stamp(entry.path)
            except OSError as exc:
                self._failed(app, entry, str(_unreadable(entry.path, exc)))
                continue
            if stamp == entry.stamp:
                entry.settling = None
                continue
            if stamp != entry.settling:
                entry.settling = stamp
                continue
            entry.stamp, entry.settling = stamp, None
            try:
                entry.policy = load_policy(entry.path, self.models, self._owner(app))
            except FileError as exc:
                self._failed(app, entry, str(exc))
            except (OSError, UnicodeDecodeError) as exc:
                self._failed(app, entry, f"{entry.path}: {exc}")
            else:
                entry.error, entry.loaded_at = None, time.time()
                entry.reloads += 1
                log.info("policy for app %s reloaded from %s", Known(app), Known(str(entry.path)))

    def _failed(self, app: str, entry: Loaded, error: str) -> None:
        if entry.error != error:
            log.error("policy for app %s NOT reloaded; the last good one stays in force:\n%s", Known(app), error)
            entry.failed_reloads += 1
        entry.error = error

    def status(self) -> dict[str, dict[str, object]]:
        return {
            app: {"file": str(e.path), "loaded_at": round(e.loaded_at, 3), "reloads": e.reloads, "error": e.error}
            for app, e in self.loaded.items()
        }


def _unreadable(path: Path, exc: OSError) -> Problem:
    return Problem(str(path), 1, 1, "", f"cannot read the policy file: {exc.strerror or exc}")
