"""Shell completion of attempt and trace ids (``tracestore --install-completion``).

Read from the review queue's index (``queue_index``), brought up to date first; any
failure (no store yet, a locked database) completes nothing rather than printing."""

from __future__ import annotations

from typing import Any

import typer


def _complete(ctx: Any, incomplete: str, what: str) -> list[str]:
    try:
        from tracestore.review import queue_index as qi
        from tracestore.store.log import EventStore

        db = (getattr(ctx, "params", None) or {}).get("db")
        with EventStore(db, create=False) as store:
            qi.sync(store)
            find = qi.attempt_ids if what == "attempt" else qi.trace_ids
            return find(store, incomplete)
    except Exception:  # noqa: BLE001 - completion must never print a traceback
        return []


def complete_attempt(ctx: typer.Context, incomplete: str) -> list[str]:
    return _complete(ctx, incomplete, "attempt")


def complete_trace(ctx: typer.Context, incomplete: str) -> list[str]:
    return _complete(ctx, incomplete, "trace")
