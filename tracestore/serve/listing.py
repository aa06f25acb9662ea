"""The desk's index: one page of the review queue, read from the queue index.

The filter vocabulary is the CLI queue's (``tracestore attempts``): the same
``QueueFilter``, checked by the same ``check_choice``/``parse_time`` calls with the same
error codes, over the same projection table (``ts_attempt_index``, kept up to date by
``queue_index.sync``).  What is new is paging: a page is the next ``limit`` rows after a
log position (keyset paging on the indexed ``first_position``), and one ``COUNT`` says how
many rows match in all -- two indexed statements, whatever the store's size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from tracestore.errors import InputError

if TYPE_CHECKING:
    from tracestore.review.queue_index import QueueFilter
    from tracestore.store.log import EventStore

PAGE_SIZE: Final = 50
#: The query-string names of the filters: the CLI option names without the dashes.
FILTER_PARAMS: Final = ("status", "reason", "api", "trace", "since", "until",
                        "violations", "review_state", "violation")
_COLUMNS: Final = ("attempt_id", "trace_id", "api", "events", "first_position",
                   "started_at", "status", "first_reason", "reasons", "violations",
                   "violation_codes", "review_state")


@dataclass(frozen=True)
class Page:
    rows: list[dict[str, Any]]
    total: int
    "Rows matching the filter in all (every page)."
    after: int
    "The position this page starts after (0: the first page)."
    next_after: int | None
    "The ``after`` of the next page, None on the last."


def parse_filter(params: Mapping[str, str]) -> QueueFilter:
    """The query string as a ``QueueFilter`` (empty values are no filter)."""
    from tracestore.review.queue_index import QueueFilter

    def value(name: str) -> str | None:
        text = params.get(name, "").strip()
        return text or None

    violations = value("violations")
    if violations not in (None, "yes", "no"):
        raise InputError("violations is yes or no", code="unknown_filter_value",
                         option="--has-violations", value=violations)
    return QueueFilter(status=value("status"), reason=value("reason"), api=value("api"),
                       trace=value("trace"), since=value("since"), until=value("until"),
                       has_violations=None if violations is None else violations == "yes",
                       review_state=value("review_state"), violation=value("violation"))


def check_filter(f: QueueFilter) -> tuple[str | None, str | None]:
    """The checks ``queue_index.select_attempts`` runs, with its codes; returns the
    (since, until) times as the index stores them."""
    from tracestore.review import queue_index as qi
    from tracestore.projections import reasons as R
    from tracestore.providers.base import PROVIDER_NAMES

    qi.check_choice(f.status, R.STATUSES, "--status")
    qi.check_choice(f.review_state, qi.REVIEW_STATES, "--review-state")
    codes = tuple(sorted(R.DESCRIPTIONS))
    if f.reason is not None:
        qi.check_choice(f.reason, codes, "--reason")
    if f.violation is not None:
        code, _, destination = f.violation.partition(":")
        qi.check_choice(code, codes, "--violation")
        if destination:
            qi.check_choice(destination, ("progress", "ui", "history", "export", "copy"),
                            "--violation")
    if f.api is not None:
        qi.check_choice(f.api, (*PROVIDER_NAMES, *qi._EXTRA_APIS), "--api")
    since = qi.parse_time(f.since, "--since") if f.since is not None else None
    until = qi.parse_time(f.until, "--until") if f.until is not None else None
    return since, until


def where_clause(store: EventStore, f: QueueFilter, since: str | None, until: str | None,
                 ) -> tuple[list[str], list[Any]]:
    """The WHERE terms of ``queue_index.query_attempts``, for the same filter."""
    mark, where, params = store._mark, [], []
    for column, op, value in (("status", "=", f.status), ("api", "=", f.api),
                              ("trace_id", "=", f.trace), ("started_at", ">=", since),
                              ("started_at", "<=", until),
                              ("review_state", "=", f.review_state)):
        if value is not None:
            where.append(f"{column} {op} {mark}")
            params.append(value)
    find = "instr({}, {}) > 0" if store._dialect == "sqlite" else "strpos({}, {}) > 0"
    if f.reason is not None:
        where.append(find.format("reasons", mark))
        params.append(f",{f.reason},")
    if f.violation is not None:
        where.append(find.format("violation_codes", mark))
        params.append(f",{f.violation},")
    if f.has_violations is not None:
        where.append("violations > 0" if f.has_violations else "violations = 0")
    return where, params


def query_page(store: EventStore, f: QueueFilter, *, after: int = 0,
               limit: int = PAGE_SIZE, sync: bool = True) -> Page:
    """One page of the queue (``sync`` first, unless the store is read-only or the caller
    synced it a moment ago)."""
    from tracestore.review import queue_index as qi

    since, until = check_filter(f)
    if store.read_only and qi._behind(store):  # an archive: judged here, nothing written
        judged = [r for r in qi.select_attempts(store, f) if r["first_position"] > after]
        return Page(judged[:limit], len(judged), after,
                    judged[limit - 1]["first_position"] if len(judged) > limit else None)
    if sync and not store.read_only:
        qi.sync(store)
    where, params = where_clause(store, f, since, until)
    mark = store._mark
    sql = (f"SELECT {', '.join(_COLUMNS)} FROM ts_attempt_index WHERE "
           + " AND ".join([*where, f"first_position > {mark}"])
           + f" ORDER BY first_position LIMIT {int(limit) + 1}")
    count = ("SELECT count(*) FROM ts_attempt_index"
             + (f" WHERE {' AND '.join(where)}" if where else ""))
    with store._reader.connect() as conn:
        rows = conn.exec_driver_sql(sql, (*params, int(after))).all()
        total = conn.exec_driver_sql(count, tuple(params)).scalar() or 0
    listing: list[dict[str, Any]] = []
    for row in rows[:limit]:
        item: dict[str, Any] = dict(zip(_COLUMNS, row, strict=True))
        item["reasons"] = [x for x in (item["reasons"] or "").split(",") if x]
        item["violation_codes"] = [x for x in (item["violation_codes"] or "").split(",")
                                   if x and ":" not in x]
        listing.append(item)
    more = len(rows) > limit
    return Page(listing, int(total), after,
                listing[-1]["first_position"] if more and listing else None)


def raw_sql(store: EventStore, f: QueueFilter, limit: int = PAGE_SIZE) -> tuple[str, tuple]:
    """The statement behind the first page (the benchmark's baseline)."""
    since, until = check_filter(f)
    where, params = where_clause(store, f, since, until)
    sql = (f"SELECT {', '.join(_COLUMNS)} FROM ts_attempt_index"
           + (f" WHERE {' AND '.join(where)}" if where else "")
           + f" ORDER BY first_position LIMIT {int(limit)}")
    return sql, tuple(params)
