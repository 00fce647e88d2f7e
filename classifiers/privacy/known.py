"""`Known`: a text the gateway made or was configured with, which no scan needs to read."""

from __future__ import annotations


class Known(str):
    """A request id, a batch id, a model's or a rule's name: written to a log as it is. The log
    masker reads every other value a log line carries for private data (`gateway.masked_logs`),
    and would read an id's letters and digits as a name or a number."""

    __slots__ = ()
