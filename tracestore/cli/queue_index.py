"""The review queue's projection tables (migration 0002): kept up to date by appends,
queried by ``attempts`` filters and ``reviews``.

Maintenance is by catch-up: the index remembers the last log position it projected; a
command that reads the queue first compares it with the head (two indexed reads), and when
the log has grown it rebuilds the rows of exactly the traces that got new events, in one
write transaction (the append lock), then records the new position.  Events are never
updated; these rows are projections and are replaced.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import (
    Column, Integer, MetaData, String, Table, Text, delete, func, insert, select,
)

from tracestore.errors import InputError

if TYPE_CHECKING:
    from tracestore.store.log import EventStore

_meta = MetaData()
attempt_index = Table(
    "ts_attempt_index", _meta,
    Column("attempt_id", String(255), primary_key=True),
    Column("trace_id", String(255)), Column("api", String(64)),
    Column("first_position", Integer), Column("started_at", String(40)),
    Column("events", Integer), Column("status", String(32)),
    Column("first_reason", String(64)), Column("reasons", Text),
    Column("violations", Integer), Column("review_state", String(16)),
)
review_index = Table(
    "ts_review_index", _meta,
    Column("template", String(64), primary_key=True),
    Column("attempt_id", String(255), primary_key=True),
    Column("trace_id", String(255)), Column("state", String(16)), Column("digest", String(64)),
    Column("last_position", Integer), Column("detail", Text),
)
index_state = Table("ts_index_state", _meta, Column("name", String(64), primary_key=True),
                    Column("position", Integer))
_NAME: Final = "review_queue"
_F = TypeVar("_F", bound=Callable[..., Any])


def _translated(func: _F) -> _F:
    """A driver error is the store's error (``store_damaged``, ``database_unavailable``)."""
    @functools.wraps(func)
    def wrapper(store: Any, *args: Any, **kwargs: Any) -> Any:
        from sqlalchemy.exc import DBAPIError

        from tracestore.store.reads import database_error

        try:
            return func(store, *args, **kwargs)
        except DBAPIError as exc:
            raise database_error(exc, store.url, f"in {func.__name__}") from exc
    return wrapper  # type: ignore[return-value]


def _upto(conn: Any) -> int:
    return conn.execute(select(index_state.c.position)
                        .where(index_state.c.name == _NAME)).scalar() or 0


@_translated
def sync(store: EventStore) -> int:
    """Bring the queue tables up to the log's head; return how many traces were rebuilt."""
    from tracestore.review.queue import trace_rows
    from tracestore.store.schema import events

    with store._reader.connect() as conn:
        if _upto(conn) == store._head(conn)[0]:
            return 0
    rebuilt = 0
    with store._writer.begin() as conn:
        store._lock(conn)
        upto, head = _upto(conn), store._head(conn)[0]
        if upto == head:
            return 0
        traces = conn.execute(select(events.c.trace_id).distinct().where(
            events.c.position > upto, events.c.trace_id.is_not(None))).scalars().all()
        for trace_id in traces:
            attempts, reviews = trace_rows(store._read(conn, trace_id=trace_id), trace_id)
            conn.execute(delete(attempt_index).where(attempt_index.c.trace_id == trace_id))
            conn.execute(delete(review_index).where(review_index.c.trace_id == trace_id))
            if attempts:
                conn.execute(insert(attempt_index), [{
                    "attempt_id": a.attempt_id, "trace_id": a.trace_id, "api": a.api,
                    "first_position": a.first_position, "started_at": a.started_at,
                    "events": a.events, "status": a.status,
                    "first_reason": a.reasons[0] if a.reasons else None,
                    "reasons": "," + ",".join(a.reasons) + ",", "violations": a.violations,
                    "review_state": a.review_state} for a in attempts])
            if reviews:
                conn.execute(insert(review_index), [{
                    "template": r.template, "attempt_id": r.attempt_id,
                    "trace_id": r.trace_id, "state": r.state, "digest": r.digest,
                    "last_position": r.last_position,
                    "detail": json.dumps(r.detail, ensure_ascii=False)} for r in reviews])
            rebuilt += 1
        if conn.execute(select(func.count()).select_from(index_state)
                        .where(index_state.c.name == _NAME)).scalar():
            conn.execute(index_state.update().where(index_state.c.name == _NAME)
                         .values(position=head))
        else:
            conn.execute(insert(index_state), {"name": _NAME, "position": head})
    return rebuilt


# -- filters -------------------------------------------------------------------------------

_RELATIVE: Final = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(value: str, option: str, now: dt.datetime | None = None) -> str:
    """``24h``/``1d``/``30m`` before now, or an ISO date/time (UTC if no zone), as the
    index stores recorded times."""
    text = value.strip()
    m = _RELATIVE.match(text)
    if m:
        when = (now or dt.datetime.now(dt.timezone.utc)) - dt.timedelta(
            seconds=int(m.group(1)) * _UNITS[m.group(2)])
    else:
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InputError(f"{option} takes an ISO time (2026-12-01T10:00) or an age like "
                             f"24h, 7d, 30m; got {value!r}", code="invalid_time",
                             option=option, value=value) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")


def check_choice(value: str | None, known: tuple[str, ...], option: str) -> str | None:
    if value is not None and value not in known:
        raise InputError(f"{option} {value!r} is not one of: {', '.join(known)}",
                         code="unknown_filter_value", option=option, value=value,
                         known=list(known))
    return value


@_translated
def query_attempts(store: EventStore, *, status: str | None = None,
                   reason: str | None = None, api: str | None = None,
                   trace: str | None = None, since: str | None = None,
                   until: str | None = None, has_violations: bool | None = None,
                   review_state: str | None = None, limit: int | None = None,
                   ) -> list[dict[str, Any]]:
    t = attempt_index
    query = select(t).order_by(t.c.first_position)
    if status is not None:
        query = query.where(t.c.status == status)
    if reason is not None:
        query = query.where(t.c.reasons.contains(f",{reason},", autoescape=True))
    if api is not None:
        query = query.where(t.c.api == api)
    if trace is not None:
        query = query.where(t.c.trace_id == trace)
    if since is not None:
        query = query.where(t.c.started_at >= since)
    if until is not None:
        query = query.where(t.c.started_at <= until)
    if has_violations is not None:
        query = query.where(t.c.violations > 0 if has_violations else t.c.violations == 0)
    if review_state is not None:
        query = query.where(t.c.review_state == review_state)
    if limit is not None:
        query = query.limit(limit)
    with store._reader.connect() as conn:
        rows = conn.execute(query).mappings().all()
    return [{"attempt_id": r["attempt_id"], "trace_id": r["trace_id"], "api": r["api"],
             "events": r["events"], "first_position": r["first_position"],
             "started_at": r["started_at"], "status": r["status"],
             "first_reason": r["first_reason"],
             "reasons": [x for x in r["reasons"].split(",") if x],
             "violations": r["violations"], "review_state": r["review_state"]}
            for r in rows]


@_translated
def query_reviews(store: EventStore, *, state: str | None = None,
                  template: str | None = None, trace: str | None = None,
                  ) -> list[dict[str, Any]]:
    t = review_index
    query = select(t).order_by(t.c.last_position)
    if state is not None:
        query = query.where(t.c.state == state)
    if template is not None:
        query = query.where(t.c.template == template)
    if trace is not None:
        query = query.where(t.c.trace_id == trace)
    with store._reader.connect() as conn:
        rows = conn.execute(query).mappings().all()
    return [{"template": r["template"], "attempt_id": r["attempt_id"],
             "trace_id": r["trace_id"], "state": r["state"], "digest": r["digest"],
             "last_position": r["last_position"], **json.loads(r["detail"])} for r in rows]


@_translated
def attempt_ids(store: EventStore, prefix: str, limit: int = 200) -> list[str]:
    t = attempt_index
    with store._reader.connect() as conn:
        return list(conn.execute(select(t.c.attempt_id).where(t.c.attempt_id.startswith(
            prefix, autoescape=True)).order_by(t.c.attempt_id).limit(limit)).scalars())


@_translated
def trace_ids(store: EventStore, prefix: str, limit: int = 200) -> list[str]:
    t = attempt_index
    with store._reader.connect() as conn:
        return list(conn.execute(select(t.c.trace_id).distinct().where(t.c.trace_id.startswith(
            prefix, autoescape=True)).order_by(t.c.trace_id).limit(limit)).scalars())
