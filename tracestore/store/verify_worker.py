"""A worker process of ``verify_parallel``: one range of positions walked in order.

Kept apart from the coordinator so each module stays one idea: this one reads rows and
captures and judges them as ``verify._Walk.walk_fast`` does; the coordinator splits the
log, starts the workers and stitches what they found.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracestore.store.chain import GENESIS_HASH, chain_hash

# The SQL that knows the table's columns, in one place with the coordinator's: the
# statement a worker pages its range with (the columns ``verify._FAST_COLUMNS`` reads, in
# its order), the settled bound, a few captures at once.
SETTLED = "(txid IS NULL OR txid < %s)"
_RANGE_ROWS_SQL = (
    "SELECT position, id, stream, version, type, schema_version, recorded_at, trace_id, "
    f"payload, hash, trace_version FROM ts_events WHERE position > %s AND position <= %s "
    f"AND {SETTLED} ORDER BY position LIMIT %s")
_BLOBS_SQL = "SELECT sha256, size, data FROM ts_blobs WHERE sha256 = ANY(%s)"
_CAPTURES_PER_QUERY = 32
_CAPTURE_TYPES = frozenset({"capture.stored", "capture.segment", "evidence.attached"})


@dataclass
class Part:
    """What one worker found in its range of positions."""

    lo: int = 0
    "The range's start (exclusive)."
    count: int = 0
    last: int = 0
    last_hash: str = GENESIS_HASH
    heads: dict[str | None, tuple[int, str]] = field(default_factory=dict)
    "Each trace's last row in the range: (version, hash)."
    firsts: dict[str | None, tuple[int, tuple[Any, ...] | None]] = field(default_factory=dict)
    """Each trace's first row in the range: (its version, the row when its predecessor is
    in an earlier range: only the coordinator knows that predecessor's hash)."""
    heads_at: dict[str | None, tuple[int, str]] | None = None
    "The heads as of a tree checkpoint's position, of the rows up to it (None: none)."
    captures: set[str] = field(default_factory=set)
    anchor_hash: str | None = None
    "The hash of the row at a row checkpoint's position, when this part holds it."
    problem: int | None = None
    "The position of the first row or capture it could not confirm."
    legacy_first: tuple[Any, ...] | None = None
    """Its first row on the store's global chain (rows before per-trace chains), when the
    row before it is in an earlier range."""
    legacy_last: tuple[int, str] | None = None
    "Its last row on the global chain: (position, hash)."


@dataclass(frozen=True)
class Task:
    connect: Mapping[str, Any]
    snapshot: str
    threshold: int
    lo: int
    hi: int
    batch_size: int
    anchor: int
    tree_at: int | None
    legacy_end: int = 0
    legacy_head: str = ""


def _walk_part(task: Task) -> Part:
    """The rows of one range of positions in order, judged as ``verify._Walk.walk_fast``
    judges them, except each trace's first row in the range when its predecessor is in an
    earlier one (kept for ``_stitch``); stops at the first batch holding a row or capture
    it cannot confirm."""
    import psycopg

    sha256, out = hashlib.sha256, Part(lo=task.lo)
    heads, firsts, cursor = out.heads, out.firsts, task.lo
    with psycopg.connect(**task.connect, autocommit=True) as pg, pg.cursor() as cur:
        cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cur.execute(f"SET TRANSACTION SNAPSHOT '{task.snapshot}'")
        # The primary key's order is the plan: a sort of the range, or parallel workers
        # for it, would only add to the workers already using the CPUs.
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        while True:
            cur.execute(_RANGE_ROWS_SQL, (cursor, task.hi, task.threshold, task.batch_size))
            rows = cur.fetchall()
            wanted: dict[str, int] = {}
            "Captures named in this batch not re-hashed yet: the first position naming each."
            for row in rows:
                (position, event_id, stream, version, type_name, schema_version, recorded_at,
                 trace_id, payload, digest, trace_version) = row
                if task.tree_at is not None and out.heads_at is None \
                        and position > task.tree_at:
                    out.heads_at = dict(heads)
                seen = heads.get(trace_id)
                if payload.__class__ is not str or (seen is not None
                                                    and trace_version != seen[0] + 1):
                    out.problem = position
                    return out
                if position <= task.legacy_end:
                    if seen is None:  # its version is checked when the ranges are joined
                        firsts[trace_id] = (trace_version, None)
                    if not _on_global_chain(task, out, row):
                        out.problem = position
                        return out
                elif seen is None and trace_version != 1:
                    firsts[trace_id] = (trace_version, row)
                else:
                    if seen is None:
                        firsts[trace_id] = (1, None)
                    prev = GENESIS_HASH if seen is None else seen[1]
                    h = sha256(f"{prev}\x1f{position}\x1f{trace_version}\x1f{event_id}"
                               f"\x1f{stream}\x1f{version}\x1f{type_name}\x1f{schema_version}"
                               f"\x1f{recorded_at}\x1f{trace_id or ''}\x1f".encode())
                    h.update(payload.encode())
                    if h.hexdigest() != digest:
                        out.problem = position
                        return out
                if type_name in _CAPTURE_TYPES:
                    sha = _capture_sha(payload)
                    if sha is None:
                        out.problem = position
                        return out
                    if sha not in out.captures:
                        wanted.setdefault(sha, position)
                heads[trace_id] = (trace_version, digest)
                out.count, out.last, out.last_hash = out.count + 1, position, digest
                if position == task.anchor:
                    out.anchor_hash = digest
            out.problem = _captures_hold(cur, wanted, out.captures)
            if out.problem is not None or len(rows) < task.batch_size:
                break
            cursor = rows[-1][0]
        cur.execute("COMMIT")
    if task.tree_at is not None and out.heads_at is None:
        out.heads_at = dict(heads)
    return out


def _on_global_chain(task: Task, out: Part, row: tuple[Any, ...]) -> bool:
    """Whether a row stored before per-trace chains follows the range's previous such row
    (the next position, hashed onto it with ``chain_hash``), or is position 1 on nothing;
    the first one of a range that starts later is kept for the coordinator."""
    position, digest = row[0], row[9]
    if out.legacy_last is None and task.lo > 0:
        out.legacy_first = row
    else:
        last, prev = out.legacy_last or (0, GENESIS_HASH)
        if position != last + 1 or digest != chain_hash(
                prev, row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7],
                row[8].encode()):
            return False
    out.legacy_last = (position, digest)
    return not (position == task.legacy_end and task.legacy_head
                and digest != task.legacy_head)


def _capture_sha(payload: str) -> str | None:
    """The sha256 a capture event names (None: its payload names none)."""
    try:
        sha = json.loads(payload).get("sha256")
    except (ValueError, AttributeError):
        return None
    return sha if isinstance(sha, str) else None


def _captures_hold(cur: Any, wanted: Mapping[str, int], checked: set[str]) -> int | None:
    """None when every capture in ``wanted`` is stored as bytes that hash to it, of the
    size recorded (``verify._capture_problem`` says why one is not), and adds them to
    ``checked``; else the position naming one that is not.  A few captures per query:
    fewer round trips, and memory bounded by a few captures, however large."""
    shas = list(wanted)
    for start in range(0, len(shas), _CAPTURES_PER_QUERY):
        chunk = shas[start:start + _CAPTURES_PER_QUERY]
        cur.execute(_BLOBS_SQL, (chunk,))
        found = {sha: (size, data) for sha, size, data in cur.fetchall()}
        for sha in chunk:
            size, data = found.get(sha, (None, None))
            if not isinstance(data, bytes) or not isinstance(size, int) \
                    or size != len(data) or hashlib.sha256(data).hexdigest() != sha:
                return wanted[sha]
            checked.add(sha)
    return None


def worker(task: Task, send: Any) -> None:
    """A worker process: its part's findings, or None when it failed, sent back once.
    Ctrl-C reaches the whole process group: only the coordinator acts on it (it kills the
    workers); SIGTERM ends a worker outright (the CLI's handler, inherited by the fork,
    would raise inside the walk instead)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        found: Part | None = _walk_part(task)
    except Exception:  # noqa: BLE001 - any failure: the single pass reports it
        found = None
    send.send(found)
    send.close()


__all__ = ["SETTLED", "Part", "Task", "worker"]
