"""Writes that outlast a short database outage.

A recorder must not lose an attempt because another process held the SQLite write lock for
longer than the driver's busy timeout, or because a PostgreSQL server restarted: a write
that failed with ``database_unavailable`` wrote nothing (its transaction rolled back), so it
is tried again, waiting longer each time, until ``EventStore.outage_s`` seconds have passed
since the first failure.  Commands leave ``outage_s`` at 0 and fail at once, so a person
at a terminal hears about a locked database instead of waiting on it.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tracestore.errors import StoreError

_Method = TypeVar("_Method", bound=Callable[..., Any])
log = logging.getLogger("tracestore.store")

FIRST_WAIT_S = 0.25
LONGEST_WAIT_S = 5.0


def outlasting(method: _Method) -> _Method:
    """Retry ``method`` (an append of ``EventStore``) through an outage of up to the
    store's ``outage_s``.  An append with a ``tap`` is never retried: the tap heard the
    failed attempt's events."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        budget = getattr(self, "outage_s", 0.0)
        if budget <= 0 or kwargs.get("tap") is not None:
            return method(self, *args, **kwargs)
        return retrying(lambda: method(self, *args, **kwargs), budget)

    return wrapper  # type: ignore[return-value]


def retrying(call: Callable[[], Any], budget: float,
             sleep: Callable[[float], None] = time.sleep) -> Any:
    deadline: float | None = None
    wait = FIRST_WAIT_S
    while True:
        try:
            return call()
        except StoreError as exc:
            if exc.code != "database_unavailable":
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + budget
                log.warning("tracestore: %s; trying again for up to %.0f s", exc.message,
                            budget)
            if now >= deadline:
                raise
            sleep(min(wait, deadline - now))
            wait = min(wait * 2, LONGEST_WAIT_S)


__all__ = ["outlasting", "retrying"]
