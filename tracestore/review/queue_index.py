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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import (
    Column, Integer, MetaData, String, Table, Text, delete, insert, select,
)

from tracestore.errors import InputError
from tracestore.review.audit_index import QUEUE_STATE

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
    Column("violation_codes", Text),
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
_NAME: Final = QUEUE_STATE
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


def _upto(conn: Any, name: str = _NAME) -> int | None:
    """The position the rows named ``name`` are current to (0 for the queue's when never
    built, ``None`` for an audit state row this code never wrote)."""
    position = conn.execute(select(index_state.c.position)
                            .where(index_state.c.name == name)).scalar()
    return position if position is not None or name != _NAME else 0


def _behind(store: EventStore) -> bool:
    """Whether the log grew since the index was built (or the audit rows are missing):
    ONE statement, as driver SQL on the store's quick connection (no engine is built for
    an index that is up to date)."""
    mark = store._mark
    sql = (f"SELECT (SELECT max(position) FROM ts_events WHERE {store.settled_sql()}), "
           "(SELECT position FROM "
           f"ts_index_state WHERE name = {mark}), (SELECT max(position) FROM "
           f"ts_index_state WHERE name LIKE {mark})")
    ((head, upto, audited),) = store.fetch_driver(sql, (_NAME, "audit:%"), during="in sync")
    return not (head or 0) == (upto or 0) == (audited or 0)


#: Traces projected per flush of the rebuilt rows (one ``executemany`` per table).
_FLUSH_TRACES: Final = 1000


@_translated
def sync(store: EventStore) -> int:
    """Bring the queue tables up to the log's head; return how many traces were rebuilt.

    One write transaction: the traces that got events since the index's position are read
    with one prepared driver statement each on the transaction's own connection (no SQL
    compiled per trace), and their rows are replaced by ``executemany`` in flushes of
    ``_FLUSH_TRACES`` traces -- the first build of a 100k-attempt store is a bulk build,
    not 400k compiled statements."""
    from tracestore.review import audit_index
    from tracestore.store.schema import events

    if not _behind(store):
        return 0
    audit_name = audit_index.state_name()
    with store._writer.begin() as conn:
        store._lock_index(conn)
        upto, head = _upto(conn), store._settled_head(conn)
        audited = _upto(conn, audit_name)
        if upto == head and audited == head:
            return 0
        if audited != upto:  # no audit rows of this code yet: every trace, once
            upto = 0
        traces = conn.execute(select(events.c.trace_id).distinct().where(
            events.c.position > upto, events.c.position <= head,
            events.c.trace_id.is_not(None))).scalars().all()
        rebuilt = project_traces(conn, store, traces)
        mark_current(conn, head, audit_name)
    return rebuilt


def project_traces(conn: Any, store: EventStore, traces: Any) -> int:
    """Replace the queue and audit rows of ``traces`` from their events, inside the
    caller's write transaction; return how many traces were projected."""
    from tracestore.review import audit_index
    from tracestore.review.queue import trace_projection
    from tracestore.store.reads import ROW_COLUMNS, _driver_fetch, _stored_from_row

    mark = store._mark
    per_trace = (f"SELECT {ROW_COLUMNS} FROM ts_events WHERE trace_id = {mark} "
                 "ORDER BY position")
    rebuilt = 0
    cursor = conn.connection.cursor()
    try:
        times: dict[str, Any] = {}
        done: list[str] = []
        attempt_rows: list[tuple[Any, ...]] = []
        review_rows: list[tuple[Any, ...]] = []
        audit_rows: list[tuple[Any, ...]] = []
        for trace_id in traces:
            stored = [_stored_from_row(row, times)
                      for row in _driver_fetch(conn, cursor, per_trace, (trace_id,))]
            if len(times) > 64:
                times.clear()
            attempts, reviews, report = trace_projection(stored, trace_id)
            attempt_rows.extend(_attempt_values(a) for a in attempts)
            review_rows.extend(_review_values(r) for r in reviews)
            audit_rows.append(audit_index.row(trace_id, stored[0].position, report))
            done.append(trace_id)
            rebuilt += 1
            if len(done) >= _FLUSH_TRACES:
                _replace(conn, cursor, mark, done, attempt_rows, review_rows, audit_rows)
                done, attempt_rows, review_rows, audit_rows = [], [], [], []
        _replace(conn, cursor, mark, done, attempt_rows, review_rows, audit_rows)
    finally:
        cursor.close()
    return rebuilt


def mark_current(conn: Any, head: int, audit_name: str) -> None:
    """The queue's and this code's audit rows are current to ``head`` (any other code's
    audit state row goes)."""
    from tracestore.review import audit_index

    conn.execute(delete(index_state).where(index_state.c.name.in_([_NAME, audit_name])
                                           | index_state.c.name.startswith(
                                               audit_index.STATE_PREFIX)))
    conn.execute(insert(index_state), [{"name": _NAME, "position": head},
                                       {"name": audit_name, "position": head}])


_ATTEMPT_INSERT: Final = ("attempt_id", "trace_id", "api", "first_position", "started_at",
                          "events", "status", "first_reason", "reasons", "violations",
                          "violation_codes", "review_state")
_REVIEW_INSERT: Final = ("template", "attempt_id", "trace_id", "state", "digest",
                         "last_position", "detail")


def _attempt_values(a: Any) -> tuple[Any, ...]:
    return (a.attempt_id, a.trace_id, a.api, a.first_position, a.started_at, a.events,
            a.status, a.reasons[0] if a.reasons else None, "," + ",".join(a.reasons) + ",",
            a.violations, "," + ",".join(a.violation_codes) + ",", a.review_state)


def _review_values(r: Any) -> tuple[Any, ...]:
    return (r.template, r.attempt_id, r.trace_id, r.state, r.digest, r.last_position,
            json.dumps(r.detail, ensure_ascii=False))


def _replace(conn: Any, cursor: Any, mark: str, traces: list[str],
             attempt_rows: list[tuple[Any, ...]], review_rows: list[tuple[Any, ...]],
             audit_rows: list[tuple[Any, ...]]) -> None:
    """Replace the rows of ``traces`` (driver ``executemany``; errors as ``DBAPIError``)."""
    if not traces:
        return
    from sqlalchemy.exc import DBAPIError

    from tracestore.review.audit_index import INSERT_COLUMNS

    def insert_sql(table: str, columns: tuple[str, ...]) -> str:
        return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                f"({', '.join([mark] * len(columns))})")

    keys = [(t,) for t in traces]
    statements = [
        (f"DELETE FROM {table} WHERE trace_id = {mark}", keys)
        for table in ("ts_attempt_index", "ts_review_index", "ts_audit_index")] + [
        (insert_sql("ts_attempt_index", _ATTEMPT_INSERT), attempt_rows),
        (insert_sql("ts_review_index", _REVIEW_INSERT), review_rows),
        (insert_sql("ts_audit_index", INSERT_COLUMNS), audit_rows)]
    dbapi = conn.dialect.loaded_dbapi
    for sql, rows in statements:
        if not rows:
            continue
        try:
            cursor.executemany(sql, rows)
        except dbapi.Error as exc:
            raise DBAPIError.instance(sql, rows[:1], exc, dbapi.Error,
                                      dialect=conn.dialect) from exc


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


_ATTEMPT_COLUMNS: Final = ("attempt_id", "trace_id", "api", "events", "first_position",
                           "started_at", "status", "first_reason", "reasons", "violations",
                           "violation_codes", "review_state")


@_translated
def query_attempts(store: EventStore, *, status: str | None = None,
                   reason: str | None = None, api: str | None = None,
                   trace: str | None = None, since: str | None = None,
                   until: str | None = None, has_violations: bool | None = None,
                   review_state: str | None = None, limit: int | None = None,
                   violation: str | None = None) -> list[dict[str, Any]]:
    """Attempt rows matching every filter given, in log order: one indexed statement."""
    mark, where, params = store._mark, [], []
    for column, op, value in (("status", "=", status), ("api", "=", api),
                              ("trace_id", "=", trace), ("started_at", ">=", since),
                              ("started_at", "<=", until), ("review_state", "=", review_state)):
        if value is not None:
            where.append(f"{column} {op} {mark}")
            params.append(value)
    find = "instr({}, {}) > 0" if store._dialect == "sqlite" else "strpos({}, {}) > 0"
    if reason is not None:  # reasons is ",a,b,": a whole code is found, no LIKE escapes
        where.append(find.format("reasons", mark))
        params.append(f",{reason},")
    if violation is not None:  # ",code,code:destination,"
        where.append(find.format("violation_codes", mark))
        params.append(f",{violation},")
    if has_violations is not None:
        where.append("violations > 0" if has_violations else "violations = 0")
    sql = (f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM ts_attempt_index"
           + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY first_position"
           + (f" LIMIT {int(limit)}" if limit is not None else ""))
    rows = store.fetch_driver(sql, params, during="in query_attempts")
    listing = []
    for row in rows:
        item = dict(zip(_ATTEMPT_COLUMNS, row))
        item["reasons"] = [x for x in item["reasons"].split(",") if x]
        item["violation_codes"] = [x for x in item["violation_codes"].split(",")
                                   if x and ":" not in x]
        listing.append(item)
    return listing


@_translated
def query_reviews(store: EventStore, *, state: str | None = None,
                  template: str | None = None, trace: str | None = None,
                  ) -> list[dict[str, Any]]:
    mark, where, params = store._mark, [], []
    for column, value in (("state", state), ("template", template), ("trace_id", trace)):
        if value is not None:
            where.append(f"{column} = {mark}")
            params.append(value)
    sql = ("SELECT template, attempt_id, trace_id, state, digest, last_position, detail "
           "FROM ts_review_index" + (f" WHERE {' AND '.join(where)}" if where else "")
           + " ORDER BY last_position")
    rows = store.fetch_driver(sql, params, during="in query_reviews")
    return [{"template": t, "attempt_id": a, "trace_id": tr, "state": st, "digest": d,
             "last_position": lp, **json.loads(detail)}
            for t, a, tr, st, d, lp, detail in rows]


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


# -- one filter, shared by attempts and review-batch ----------------------------------------

REVIEW_STATES: Final = ("unreviewed", "in-review", "approved", "stale", "conflict")
#: APIs that are not wire providers but name attempts (agent runs).
_EXTRA_APIS: Final = ("agent-run",)


@dataclass(frozen=True)
class QueueFilter:
    """The queue options as typed (checked by ``select_attempts``)."""

    status: str | None = None
    reason: str | None = None
    api: str | None = None
    trace: str | None = None
    since: str | None = None
    until: str | None = None
    has_violations: bool | None = None
    review_state: str | None = None
    violation: str | None = None

    def given(self) -> bool:
        return any(v is not None for v in vars(self).values())


def select_attempts(store: EventStore, f: QueueFilter) -> list[dict[str, Any]]:
    """Check every filter value (``unknown_filter_value``), bring the index up to date and
    return the matching attempts."""
    from tracestore.errors import NotFound
    from tracestore.projections import reasons as R

    check_choice(f.status, R.STATUSES, "--status")
    check_choice(f.review_state, REVIEW_STATES, "--review-state")
    if f.reason is not None:
        check_choice(f.reason, tuple(sorted(R.DESCRIPTIONS)), "--reason")
    if f.violation is not None:
        code, _, destination = f.violation.partition(":")
        check_choice(code, tuple(sorted(R.DESCRIPTIONS)), "--violation")
        if destination:
            check_choice(destination, ("progress", "ui", "history", "export", "copy"),
                         "--violation")
    if f.api is not None:
        from tracestore.providers.base import PROVIDER_NAMES

        check_choice(f.api, (*PROVIDER_NAMES, *_EXTRA_APIS), "--api")
    since = parse_time(f.since, "--since") if f.since is not None else None
    until = parse_time(f.until, "--until") if f.until is not None else None
    if f.trace is not None and not store.read(trace_id=f.trace, limit=1):
        raise NotFound(f"no trace {f.trace!r} in the log", code="trace_not_found",
                       trace_id=f.trace)
    if store.read_only and _behind(store):  # an archive: judge it here, write nothing
        return _attempts_in_memory(store, f, since, until)
    sync(store)
    return query_attempts(store, status=f.status, reason=f.reason, api=f.api, trace=f.trace,
                          since=since, until=until, has_violations=f.has_violations,
                          review_state=f.review_state, violation=f.violation)


def _attempts_in_memory(store: EventStore, f: QueueFilter, since: str | None,
                        until: str | None) -> list[dict[str, Any]]:
    """The queue of a store that cannot be written (a read-only archive whose index is
    behind): the same rows and filters as the index, computed trace by trace in memory."""
    from tracestore.review.queue import trace_rows

    traces = [f.trace] if f.trace is not None else store.trace_ids()
    rows = [a for t in traces for a in trace_rows(store.read(trace_id=t), t)[0]]

    def keep(a: Any) -> bool:
        return ((f.status is None or a.status == f.status)
                and (f.api is None or a.api == f.api)
                and (since is None or a.started_at >= since)
                and (until is None or a.started_at <= until)
                and (f.review_state is None or a.review_state == f.review_state)
                and (f.reason is None or f.reason in a.reasons)
                and (f.violation is None or f.violation in a.violation_codes)
                and (f.has_violations is None or (a.violations > 0) == f.has_violations))

    return [{"attempt_id": a.attempt_id, "trace_id": a.trace_id, "api": a.api,
             "events": a.events, "first_position": a.first_position,
             "started_at": a.started_at, "status": a.status,
             "first_reason": a.reasons[0] if a.reasons else None, "reasons": list(a.reasons),
             "violations": a.violations,
             "violation_codes": [c for c in a.violation_codes if ":" not in c],
             "review_state": a.review_state}
            for a in sorted(filter(keep, rows), key=lambda a: a.first_position)]
