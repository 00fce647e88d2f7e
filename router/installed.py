"""Each app's installed routers: versioned, kept beside the ledger (`router.documents`), read by
every replica and swapped in without a restart.

`edgeway router fit --write` installs a new version; `--rollback` makes the previous one current
again. A replica reads an app's current version when it first needs it and again once `REFRESH_S`
have passed, so an installed router is in use everywhere within a few seconds; a store that cannot
be read keeps the version a replica has (or the cold-start router).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from router.app_router import AppRouter, Combination, cold_start
from router.documents import Document, Documents, MemoryDocuments

log = logging.getLogger("edgeway.router")
ROUTERS, ACTIVE = "router", "router-active"
REFRESH_S = 5.0


@dataclass(frozen=True)
class _Seen:
    router: AppRouter | None
    at: float


class InstalledRouters:
    def __init__(self, documents: Documents | None = None, refresh_s: float = REFRESH_S) -> None:
        self.documents = documents or MemoryDocuments()
        self.refresh_s = refresh_s
        self._seen: dict[str, _Seen] = {}
        self._lock = threading.Lock()

    # --- what a request reads ---------------------------------------------------------------
    def current(self, app: str, read: Combination | None, gguf: str | None = None) -> AppRouter:
        """The app's installed router, else the cold-start one (the prior alone, and `read`: the
        edge probe's combination). An installed router whose reading was fitted on another GGUF's
        probe (`gguf`) keeps its text combination and takes the probe's own for the reading."""
        now = time.monotonic()
        seen = self._seen.get(app)
        if seen is None or now - seen.at >= self.refresh_s:
            try:
                seen = _Seen(self.active(app), now)
            except Exception as exc:  # the store is away: keep what this replica has
                log.warning("installed routers: cannot read the store (%s); keeping the router in use", exc)
                seen = _Seen(seen.router if seen is not None else None, now)
            with self._lock:
                self._seen[app] = seen
        installed = seen.router
        if installed is None:
            return cold_start(read)
        if installed.fitted.get("gguf") not in (None, gguf):
            return AppRouter(installed.text, read, installed.version, installed.threshold, installed.fitted)
        return installed

    # --- what `edgeway router fit` does -----------------------------------------------------
    def versions(self, app: str) -> list[AppRouter]:
        """Every version ever installed for `app`, oldest first."""
        found = [AppRouter.of(d.data) for d in self.documents.find(ROUTERS, app)]
        return sorted(found, key=lambda r: r.version)

    def active(self, app: str) -> AppRouter | None:
        pointer = self.documents.get(ACTIVE, app)
        if pointer is None or not pointer.data.get("version"):
            return None
        found = self.documents.get(ROUTERS, f"{app}:{pointer.data['version']}")
        return None if found is None else AppRouter.of(found.data)

    def install(self, app: str, router: AppRouter) -> AppRouter:
        """Keep `router` as the app's next version and make it current; returns it, numbered."""
        versions = self.versions(app)
        number = (versions[-1].version if versions else 0) + 1
        numbered = AppRouter(router.text, router.read, number, router.threshold, router.fitted)
        now = time.time()
        self.documents.put(ROUTERS, Document(f"{app}:{number}", app, now, numbered.as_dict()))
        self._point(app, number, now)
        return numbered

    def rollback(self, app: str) -> AppRouter | None:
        """Make the version before the current one current (None: back to the cold-start router)."""
        current = self.active(app)
        if current is None:
            raise LookupError(f"{app} has no installed router to roll back")
        earlier = [r for r in self.versions(app) if r.version < current.version]
        previous = earlier[-1] if earlier else None
        self._point(app, previous.version if previous else 0, time.time())
        return previous

    def _point(self, app: str, version: int, now: float) -> None:
        self.documents.put(ACTIVE, Document(app, app, now, {"version": version}))
        with self._lock:
            self._seen.pop(app, None)
