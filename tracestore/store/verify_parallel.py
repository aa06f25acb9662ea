"""``verify`` on PostgreSQL with the log walked in parallel worker processes.

The settled positions are split into ``jobs`` ranges, and each worker walks its range in
position order on its own connection, checking what the single pass
(``verify.verify_log``) checks of a row: its trace's version follows the last, its hash
chains onto the trace's previous row, and a capture it names is in ``ts_blobs`` with bytes
that hash to it and the size recorded (a batch's captures read a few per query).  Each
worker reads only its own rows, in the order the table was written.  A trace's first row
in a range has its predecessor in an earlier range, whose hash the worker does not know:
the worker returns that row, and every trace's last version and hash in its range, and
the coordinator stitches the ranges in order (``_stitch``): the row's version must follow
the trace's last in the ranges before, and its hash must chain onto that row's.  Each
trace's rows are thus judged in the order the single pass judges them, the first row of a
range a moment later.

Every worker reads the same rows the single pass would: the coordinator exports one
snapshot (``pg_export_snapshot``) and fixes in it the settled bound (rows written by
transactions older than the oldest still open, ``pg_bulk.pg_settled_threshold``) and the
last settled position; each worker imports that snapshot and applies that bound.

The parallel pass only ever says "ok": the first row or capture a worker cannot confirm,
a range that does not chain onto the ones before, a checkpoint that does not hold, or any
error in a worker stops every worker, and the single pass then runs and makes the report,
so a damaged store is reported exactly as the single pass reports it (the first broken
position, the events verified before it, the head hash and captures re-hashed up to it).
An intact store's result is built from the ranges: the events summed, the captures
counted once each, the last position and its hash, the tree head over every trace's head,
and a checkpoint's row or tree head checked as the single pass checks them.

Rows stored before per-trace chains (up to ``ts_meta.legacy_chain_end``) are on one
global chain, each row hashed onto the row before it in position order: a worker checks
that chain in its range (contiguous positions, ``chain_hash``), and the coordinator joins
it across the ranges' starts and checks it reaches ``legacy_chain_end``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tracestore.store.chain import GENESIS_HASH, Expected, VerifyResult
from tracestore.store.tree_head import tree_head
from tracestore.store.verify_worker import SETTLED, Part, Task, worker

if TYPE_CHECKING:
    from sqlalchemy import Connection

#: A store smaller than this is verified in one pass when ``jobs`` is left to its default
#: (starting the workers costs more than they save).
PARALLEL_MIN_EVENTS = 20_000

# The SQL that knows the table's columns, in one place with ``verify_worker``'s: the end
# of the settled rows.
_LAST_SETTLED_SQL = ("SELECT coalesce(max(position), 0) FROM ts_events WHERE "
                     + SETTLED.replace("%s", "{threshold}"))
_SNAPSHOT_ID = re.compile(r"^[0-9A-Fa-f]+-[0-9A-Fa-f]+(-[0-9]+)?$")


def check_jobs(jobs: int | None, option: str = "jobs") -> None:
    """A worker count must be 1 or more (None: the default)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        from tracestore.errors import InputError

        raise InputError(f"{option} {jobs!r} is not a number of worker processes (1 or more)",
                         code="invalid_option", option=option)


def choose_jobs(conn: Connection, jobs: int | None) -> int:
    """The workers a pass uses: ``jobs`` when given; by default, on PostgreSQL, one per
    CPU for a store of at least ``PARALLEL_MIN_EVENTS`` events; on SQLite always 1."""
    check_jobs(jobs)
    if conn.dialect.name != "postgresql":
        return 1
    if jobs is not None:
        return jobs
    from sqlalchemy import text

    last = conn.execute(text("SELECT max(position) FROM ts_events")).scalar()
    return default_jobs() if (last or 0) >= PARALLEL_MIN_EVENTS else 1


def default_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def _exported_snapshot(connect: Mapping[str, Any]) -> Iterator[tuple[str, int, int]]:
    """(snapshot id, settled threshold, last settled position) of a read-only transaction
    held open while the workers import its snapshot."""
    import psycopg

    from tracestore.store.pg_bulk import pg_settled_threshold

    with psycopg.connect(**connect, autocommit=True) as pg:
        pg.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        row = pg.execute(f"SELECT pg_export_snapshot(), {pg_settled_threshold()}").fetchone()
        assert row is not None
        snapshot, threshold = str(row[0]), int(row[1])
        if not _SNAPSHOT_ID.match(snapshot):
            raise ValueError(f"unexpected snapshot id {snapshot!r}")
        last = pg.execute(_LAST_SETTLED_SQL.format(threshold=threshold)).fetchone()
        assert last is not None
        try:
            yield snapshot, threshold, int(last[0])
        finally:
            pg.execute("ROLLBACK")


def _connect_args(conn: Connection) -> dict[str, Any]:
    """The psycopg keyword arguments the read engine connects with (SQLAlchemy's own
    adapters left out: the workers read only plain columns)."""
    engine = conn.engine
    _, kwargs = engine.dialect.create_connect_args(engine.url)
    return {key: value for key, value in kwargs.items() if key != "context"}


def verify_log_parallel(conn: Connection, jobs: int, *, batch_size: int = 5000,
                        expected: Expected | None = None) -> VerifyResult:
    """``verify_log`` with the positions split into ``jobs`` ranges, each walked in its
    own process; the single pass on ``conn`` makes the report when a range holds a
    problem."""
    from tracestore.store.verify import _legacy_marks, verify_log

    if conn.dialect.name != "postgresql" or jobs < 1:
        return verify_log(conn, batch_size=batch_size, expected=expected)
    legacy = _legacy_marks(conn)
    parts = _run_parts(_connect_args(conn), jobs, batch_size, expected, legacy)
    result = None if parts is None else _merge(parts, expected, legacy[0])
    if result is None:
        return verify_log(conn, batch_size=batch_size, expected=expected)
    return result


def _run_parts(connect: Mapping[str, Any], jobs: int, batch_size: int,
               expected: Expected | None, legacy: tuple[int, str] = (0, ""),
               ) -> list[Part] | None:
    """Every part's findings, or None when one found a problem or failed (the others are
    stopped: the single pass makes the report, or raises the database's error).
    ``legacy``: the end of the global chain and its recorded hash (``ts_meta``)."""
    import multiprocessing

    anchor = 0 if expected is None or expected.root is not None else expected.position
    tree_at = None if expected is None or expected.root is None else expected.position
    # fork: a worker needs nothing of the parent but its task, and starts in milliseconds.
    context = multiprocessing.get_context("fork")
    try:
        with _exported_snapshot(connect) as (snapshot, threshold, last):
            workers: list[tuple[Any, Any]] = []
            try:
                edges = [last * part // jobs for part in range(jobs + 1)]
                for lo, hi in zip(edges, edges[1:]):
                    receive, send = context.Pipe(duplex=False)
                    task = Task(dict(connect), snapshot, threshold, lo, hi, batch_size,
                                anchor, tree_at, *legacy)
                    process = context.Process(target=worker, args=(task, send), daemon=True)
                    process.start()
                    send.close()
                    workers.append((process, receive))
                return _collect([receive for _, receive in workers])
            finally:  # also on Ctrl-C: no worker, and so no connection, outlives the pass
                for process, receive in workers:
                    if process.is_alive():
                        process.kill()
                    process.join()
                    receive.close()
    except Exception:  # noqa: BLE001 - a worker's failure: the single pass says why
        return None


def _collect(receivers: list[Any]) -> list[Part] | None:
    """Each worker's findings as they come; None at the first problem or failure (a
    worker that died sends nothing: its pipe ends)."""
    from multiprocessing.connection import wait

    pending, found = set(receivers), []
    while pending:
        ready_ones: list[Any] = wait(list(pending))  # the receiving ends given
        for ready in ready_ones:
            try:
                part: Part | None = ready.recv()
            except EOFError:
                return None
            pending.discard(ready)
            if part is None or part.problem is not None:
                return None
            found.append(part)
    return found


def _stitch(parts: list[Part], legacy_end: int = 0,
            ) -> dict[str | None, tuple[int, str]] | None:
    """Every trace's head after the ranges in order, or None when the ranges do not join:
    a trace's first row in a range does not follow its last row in the ranges before (its
    version is not the next, or its hash does not chain onto that row's: the workers could
    not know that hash), or the global chain of the rows before per-trace chains skips a
    position, does not chain across a range's start, or ends before ``legacy_end``."""
    from tracestore.store.chain import chain_hash, trace_chain_hash

    heads: dict[str | None, tuple[int, str]] = {}
    glob_last, glob_hash = 0, GENESIS_HASH
    for part in parts:
        row = part.legacy_first
        if row is not None and (row[0] != glob_last + 1 or chain_hash(
                glob_hash, row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7],
                row[8].encode()) != row[9]):
            return None
        glob_last, glob_hash = part.legacy_last or (glob_last, glob_hash)
        for trace, (version, row) in part.firsts.items():
            have, prev = heads.get(trace, (0, GENESIS_HASH))
            if version != have + 1:
                return None
            if row is not None and trace_chain_hash(
                    prev, row[0], row[10], row[1], row[2], row[3], row[4], row[5], row[6],
                    row[7], row[8].encode()) != row[9]:
                return None
        heads.update(part.heads)
    return heads if glob_last == legacy_end else None


def _merge(parts: list[Part], expected: Expected | None, legacy_end: int = 0,
           ) -> VerifyResult | None:
    """The single pass's result on an intact store, from its ranges; None when the ranges
    do not chain or a checkpoint does not hold (the single pass then says how)."""
    parts = sorted(parts, key=lambda part: part.lo)
    heads = _stitch(parts, legacy_end)
    if heads is None:
        return None
    captures: set[str] = set()
    for part in parts:
        captures |= part.captures
    last = max(parts, key=lambda part: part.last)
    if expected is not None and expected.root is None and expected.position != 0:
        if not any(part.anchor_hash == expected.hash for part in parts):
            return None
    elif expected is not None:
        heads_at: dict[str | None, tuple[int, str]] = {}
        for part in parts:  # in order: a later range's heads replace an earlier one's
            heads_at.update(part.heads_at or {})
        head = tree_head(heads_at, expected.position)
        if (head.size, head.root) != (expected.tree_size, expected.root):
            return None
    head = tree_head(heads, last.last)
    return VerifyResult(True, sum(part.count for part in parts), None, None, last.last_hash,
                        len(captures), expected.position if expected else None,
                        last_position=last.last, tree_size=head.size, tree_root=head.root)


__all__ = ["PARALLEL_MIN_EVENTS", "check_jobs", "choose_jobs", "default_jobs",
           "verify_log_parallel"]
