"""The audit index (migration 0004): each trace's ``audit --json`` text, kept by appends.

``queue_index.sync`` judges every trace that got new events for the review queue; the same
judging is the trace's audit, so sync also keeps that trace's audit as text here (its
attempts exactly as ``audit --json`` writes them, its violations with their positions).
A whole-store ``audit --json`` then reads one row per trace and judges live only the
traces that got events since the index was built -- read-only, so an archive benefits
too.  An ``ingest`` into a store whose index is current keeps it current in its own
transaction (``follow_append``).  The state row is named after the code that wrote the rows (``audit:<fingerprint>``,
``tracestore.store.code_version``): another tracestore never reads them, it audits live.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from tracestore.store.log import EventStore

STATE_PREFIX: Final = "audit:"
#: The review queue's state row (``queue_index``'s; named here so an append's check of the
#: two rows loads neither the queue's tables nor SQLAlchemy).
QUEUE_STATE: Final = "review_queue"
_BATCH: Final = 1000
INSERT_COLUMNS: Final = ("trace_id", "first_position", "attempts", "violations")


def state_name() -> str:
    from tracestore.store.code_version import code_fingerprint

    return STATE_PREFIX + code_fingerprint()


def _text(value: Any) -> str:
    from tracestore.review.escape import json_text

    return json_text(value, indent=None, default=str)


def attempt_texts(report: Any) -> str:
    """The trace's attempts as ``audit --json`` writes them, joined by ``", "``."""
    return ", ".join(_text(a.to_dict()) for a in report.attempts)


def violation_texts(report: Any) -> list[tuple[int, str]]:
    return [(v.position, _text(v.to_dict())) for v in report.violations]


def row(trace_id: str, first_position: int, report: Any) -> tuple[Any, ...]:
    """The ``ts_audit_index`` row of one trace (``INSERT_COLUMNS`` order)."""
    return (trace_id, first_position, attempt_texts(report),
            json.dumps(violation_texts(report), ensure_ascii=False))


def write_indexed_audit(store: EventStore, write: Callable[[str], Any]) -> int | None:
    """``audit --json`` of the whole log from the index, byte for byte what the live audit
    writes; ``None`` (nothing written) when this code has no index in the store.

    One read transaction: the index's position, the traces with events after it (judged
    live, from their events), then the rows in trace order (keyset batches: memory holds
    one batch).  Traces first seen after the index's position follow, in log order."""
    from tracestore.projections import audit
    from tracestore.store.reads import ROW_COLUMNS, _stored_from_row

    mark = store._mark
    per_trace = (f"SELECT {ROW_COLUMNS} FROM ts_events WHERE trace_id = {mark} "
                 "ORDER BY position")
    with store.driver_reads() as fetch:
        state = fetch(f"SELECT position FROM ts_index_state WHERE name = {mark}",
                      (state_name(),))
        if not state:
            return None
        upto = state[0][0]
        changed = dict(fetch(
            "SELECT trace_id, min(position) FROM ts_events WHERE position > "
            f"{mark} AND trace_id IS NOT NULL GROUP BY trace_id", (upto,)))
        violations: list[tuple[int, str]] = []
        separator = ""
        times: dict[str, Any] = {}

        def live(trace_id: str) -> tuple[str, list[tuple[int, str]]]:
            events = [_stored_from_row(r, times) for r in fetch(per_trace, (trace_id,))]
            if len(times) > 64:
                times.clear()
            report = audit(events, trace_id=trace_id)
            return attempt_texts(report), violation_texts(report)

        write('{"attempts": [')
        last = -1
        while True:
            batch = fetch("SELECT trace_id, first_position, attempts, violations FROM "
                          f"ts_audit_index WHERE first_position > {mark} ORDER BY "
                          f"first_position LIMIT {_BATCH}", (last,))
            for trace_id, _, attempts, found in batch:
                if trace_id in changed:
                    del changed[trace_id]
                    attempts, listed = live(trace_id)
                else:
                    listed = [(p, t) for p, t in json.loads(found)] if found != "[]" else []
                if attempts:
                    write(separator + attempts)
                    separator = ", "
                violations.extend(listed)
            if len(batch) < _BATCH:
                break
            last = batch[-1][1]
        for trace_id in sorted(changed, key=changed.__getitem__):  # traces new since
            attempts, listed = live(trace_id)
            if attempts:
                write(separator + attempts)
                separator = ", "
            violations.extend(listed)
    violations.sort(key=lambda v: v[0])
    write('], "violations": [' + ", ".join(t for _, t in violations) + "]}\n")
    return len(violations)



def follow_append(view: Any, traces: Any) -> int:
    """Keep the index current through one append, inside its transaction (``settled`` of
    the ingest's tap; ``traces`` are the traces it wrote): when the queue's and this
    code's audit rows were current to the head before the append, those traces are
    projected again and both rows move to the new head.  An index that was behind (or
    never built, or another code's) is left as it is, so a stale index is never made to
    look fresh.  Returns the traces projected (0 when the index was not current)."""
    conn, store, before = view.conn, view.store, view.head_position
    name, mark = state_name(), view.store._mark
    state = f"(SELECT position FROM ts_index_state WHERE name = {mark})"
    ((head, queue, audited),) = conn.exec_driver_sql(
        f"SELECT (SELECT max(position) FROM ts_events), {state}, {state}",
        (QUEUE_STATE, name)).all()
    if not (queue == audited == before) or head == before:
        return 0
    from tracestore.review.queue_index import project_traces

    projected = project_traces(conn, store, list(traces))
    conn.exec_driver_sql(f"UPDATE ts_index_state SET position = {mark} WHERE name IN "
                         f"({mark}, {mark})", (head, QUEUE_STATE, name))
    return projected
