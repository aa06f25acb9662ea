"""``verify`` on PostgreSQL with worker processes reports exactly what the single pass
reports, on intact and on damaged stores (no timing: results are compared field by field).

The worker path is checked twice: that its own findings (``_run_parts``, ``_merge``) make
the single pass's result on an intact store, and that on a damaged one it finds a problem
(so the single pass makes the report).  Damage is planted as in test_verify_damage.py:
the append-only triggers disabled, the rows changed, the triggers enabled again.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clihelp import run
from conftest import PG_URL, _fresh_pg_url
from tracestore.store import verify_parallel as vp
from tracestore.store import verify_worker as vw
from tracestore.store.chain import Expected, VerifyResult
from tracestore.store.log import EventStore
from tracestore.store.verify import verify_log, verify_store

pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server "
                                "(set TRACESTORE_TEST_PG_URL)")

REPO = Path(__file__).resolve().parents[1]
PROJECTIONS = [REPO / "fixtures" / "projections" / name for name in ("t1.json", "s1.json",
                                                                      "s2.json")]


def build(url: str, attempts: int = 12, first: int = 0) -> None:
    """Attempts of three distinct captures over five traces (several attempts share a
    trace, and so a capture is named more than once), plus rows of no trace."""
    from tracestore.events import FrameReceived, SerializedEvent
    from tracestore.ingest import plan_ingest
    from tracestore.recording.rows import fresh_ids
    from tracestore.store.append_types import canonical_payload

    with EventStore(url) as store:
        for n in range(first, first + attempts):
            data = PROJECTIONS[n % 3].read_bytes()
            plan = plan_ingest(data, filename=PROJECTIONS[n % 3].name, attempt_id=f"a{n}",
                               trace_id=f"t{n % 5}")
            store.append(plan.events, blob_data=[data])
            if n % 4 == 0:
                payload = canonical_payload(FrameReceived(
                    attempt_id="loose", api="openai-responses", native={"n": n}))
                loose: list[Any] = [SerializedEvent("loose", event_id, None,
                                                    "frame.received", payload)
                                    for event_id in fresh_ids(2)]
                store.append(loose)


def damage(url: str, *statements: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE ts_events DISABLE TRIGGER USER"))
        conn.execute(text("ALTER TABLE ts_blobs DISABLE TRIGGER USER"))
        for statement in statements:
            conn.execute(text(statement))
        conn.execute(text("ALTER TABLE ts_events ENABLE TRIGGER USER"))
        conn.execute(text("ALTER TABLE ts_blobs ENABLE TRIGGER USER"))
    engine.dispose()


@pytest.fixture(scope="module")
def intact_url() -> Iterator[str]:
    url = _fresh_pg_url()
    build(url)
    yield url


@pytest.fixture
def damaged_url() -> str:
    url = _fresh_pg_url()
    build(url)
    return url


def both(url: str, jobs: int = 3, expected: Expected | None = None,
         ) -> tuple[VerifyResult, VerifyResult, list[Any] | None]:
    """(single pass, parallel pass, the workers' own findings or None).

    A write transaction of ANOTHER database of the shared server that ends between a
    statement's snapshot and its look at ``pg_stat_activity`` lowers that statement's
    settled bound (``pg_bulk.pg_settled_threshold``: such a transaction is kept, it may
    have been an append), so a pass may stop short of the newest rows: a pair where one
    did is taken again."""
    from sqlalchemy import text

    from tracestore.store.verify import _legacy_marks

    for _ in range(5):
        with EventStore(url) as store, store._reader.connect() as conn:
            head = conn.execute(text("SELECT coalesce(max(position), 0) FROM ts_events")
                                ).scalar()
            single = verify_store(conn, expected=expected, jobs=1)
            parallel = verify_store(conn, expected=expected, jobs=jobs)
            parts = vp._run_parts(vp._connect_args(conn), jobs, 7, expected,
                                  _legacy_marks(conn))
        ends = [result.last_position for result in (single, parallel) if result.ok]
        if parts is not None and parts:
            ends.append(max(part.last for part in parts))
        if all(end == head for end in ends):
            break
    return single, parallel, parts


@pytest.mark.parametrize("jobs", [1, 2, pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(7, marks=pytest.mark.slow)])
def test_an_intact_store_gives_the_single_pass_result_from_the_workers(
        intact_url: str, jobs: int) -> None:
    single, parallel, parts = both(intact_url, jobs)
    assert single.ok and single.count > 100 and single.tree_size == 6  # 5 traces + loose
    assert parallel == single
    assert parts is not None and len(parts) == jobs
    assert vp._merge(parts, None) == single  # made by the workers, not the single pass


def assert_found_by_the_stitch(url: str, jobs: int, position: int) -> None:
    """Both passes break at ``position``, and no worker saw it alone: the stitch did."""
    single, parallel, parts = both(url, jobs)
    assert not single.ok and single.first_broken_position == position
    assert parallel == single
    assert parts is not None and vp._merge(parts, None) is None


def test_an_empty_store_verifies_alike() -> None:
    url = _fresh_pg_url()
    EventStore(url).close()
    single, parallel, parts = both(url)
    assert parallel == single and single.ok and parts is not None


#: Damage planted with SQL: (statements, what the single pass must say).
DAMAGE: dict[str, tuple[list[str], str]] = {
    "payload edited": (
        ["UPDATE ts_events SET payload = replace(payload, 'a', 'b') WHERE position = "
         "(SELECT min(position) FROM ts_events WHERE type = 'frame.received' AND "
         "trace_id = 't3')"], "hash does not match"),
    "a middle event deleted": (
        ["DELETE FROM ts_events WHERE trace_id = 't2' AND trace_version = 5"],
        "is missing version 5"),
    "a hash replaced": (
        ["UPDATE ts_events SET hash = repeat('0', 64) WHERE trace_id = 't1' AND "
         "trace_version = 3"], "hash does not match"),
    "two events of a trace swap positions": (
        ["DO $$ DECLARE a bigint; b bigint; BEGIN "
         "SELECT position INTO a FROM ts_events WHERE trace_id = 't4' AND trace_version = 3; "
         "SELECT position INTO b FROM ts_events WHERE trace_id = 't4' AND trace_version = 4; "
         "UPDATE ts_events SET position = -1 WHERE position = a; "
         "UPDATE ts_events SET position = a WHERE position = b; "
         "UPDATE ts_events SET position = b WHERE position = -1; END $$"], "version"),
    "an event moved to another trace": (
        ["UPDATE ts_events SET trace_id = 't0', trace_version = 999 WHERE trace_id = 't3' "
         "AND trace_version = 2"], ""),
    "a loose event edited": (
        ["UPDATE ts_events SET payload = payload || ' ' WHERE position = (SELECT "
         "max(position) FROM ts_events WHERE trace_id IS NULL)"], "hash does not match"),
    "a capture deleted": (
        ["DELETE FROM ts_blobs WHERE sha256 = (SELECT min(sha256) FROM ts_blobs)"],
        "is missing from ts_blobs"),
    "a capture's bytes changed": (
        ["UPDATE ts_blobs SET data = data || '\\x00'::bytea, size = size + 1 WHERE sha256 = "
         "(SELECT max(sha256) FROM ts_blobs)"], "was changed"),
    "a capture NULL": (
        ["ALTER TABLE ts_blobs ALTER COLUMN data DROP NOT NULL",
         "UPDATE ts_blobs SET data = NULL WHERE sha256 = (SELECT min(sha256) FROM ts_blobs)"],
        "is stored as null, not bytes"),
    "a capture's size off by one": (
        ["UPDATE ts_blobs SET size = size + 1"], "its size column records"),
}


@pytest.mark.parametrize("jobs", [2, pytest.param(7, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_store_is_reported_as_the_single_pass_reports_it(damaged_url: str,
                                                                   name: str,
                                                                   jobs: int) -> None:
    statements, reason = DAMAGE[name]
    damage(damaged_url, *statements)
    single, parallel, parts = both(damaged_url, jobs)
    assert not single.ok and reason in (single.reason or ""), single
    assert parallel == single
    # A worker found it, or the ranges do not chain: the single pass made the report.
    assert parts is None or vp._merge(parts, None) is None


@pytest.mark.parametrize("jobs", [2, 3])
def test_each_range_boundary_is_chained(damaged_url: str, jobs: int) -> None:
    """A trace's first row in a range, its predecessor in the range before, is judged
    when the ranges are stitched: its payload edited there is found (the rows after it
    chain onto its stored hash, so no worker can see it)."""
    from sqlalchemy import text

    with EventStore(damaged_url) as store, store._reader.connect() as conn:
        last = conn.execute(text("SELECT max(position) FROM ts_events")).scalar()
        assert last is not None
        position = conn.execute(text(
            "SELECT position FROM ts_events e WHERE position > :lo AND trace_version > 1 "
            "AND NOT EXISTS (SELECT 1 FROM ts_events f WHERE f.trace_id IS NOT DISTINCT "
            "FROM e.trace_id AND f.position > :lo AND f.position < e.position) "
            "ORDER BY position LIMIT 1"), {"lo": last // jobs}).scalar()
    damage(damaged_url, "UPDATE ts_events SET payload = payload || ' ' WHERE position = "
                        f"{position}")
    assert_found_by_the_stitch(damaged_url, jobs, position)


def test_a_trace_started_again_in_a_later_range(damaged_url: str) -> None:
    """A row numbered 1 of a trace that already has rows, hashed onto nothing as a first
    row is: valid alone, so only the stitch sees its version does not follow."""
    from sqlalchemy import text

    from tracestore.store.chain import GENESIS_HASH, trace_chain_hash

    jobs = 7
    with EventStore(damaged_url) as store, store._reader.connect() as conn:
        position = int(conn.execute(text("SELECT max(position) FROM ts_events")).scalar_one()) + 1
        trace = conn.execute(text(  # a trace with no row in the last range
            "SELECT trace_id FROM ts_events WHERE trace_id IS NOT NULL GROUP BY trace_id "
            "HAVING max(position) <= :edge ORDER BY 1 LIMIT 1"),
            {"edge": position * (jobs - 1) // jobs}).scalar_one()
    row = (position, "restarted", "attempt:restarted", 1, "frame.received", 1,
           "2026-01-01T00:00:00+00:00", trace, "{}")
    digest = trace_chain_hash(GENESIS_HASH, position, 1, *row[1:8], b"{}")
    damage(damaged_url, "ALTER TABLE ts_events DROP CONSTRAINT uq_ts_events_trace_version",
           "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
           "recorded_at, trace_id, payload, hash, trace_version, trace_key) VALUES "
           f"({position}, 'restarted', 'attempt:restarted', 1, 'frame.received', 1, "
           f"'{row[6]}', '{trace}', '{{}}', '{digest}', 1, '{trace}')")
    assert_found_by_the_stitch(damaged_url, jobs, position)


def test_a_deleted_tail_verifies_alike_with_another_root(damaged_url: str) -> None:
    before = both(damaged_url)[0]
    damage(damaged_url, "DELETE FROM ts_events WHERE trace_id = 't1' AND trace_version = "
                        "(SELECT max(trace_version) FROM ts_events WHERE trace_id = 't1')")
    single, parallel, parts = both(damaged_url)
    assert single.ok and single.tree_root != before.tree_root
    assert parallel == single and parts is not None


def _checkpoints(url: str) -> tuple[Expected, Expected]:
    """A tree checkpoint and a row checkpoint of ``url`` as it is now."""
    from sqlalchemy import text

    with EventStore(url) as store, store._reader.connect() as conn:
        now = verify_log(conn)
        position, digest = conn.execute(text(
            "SELECT position, hash FROM ts_events WHERE trace_id = 't2' ORDER BY position "
            "DESC LIMIT 1")).one()
    return (Expected(now.last_position, root=now.tree_root, tree_size=now.tree_size),
            Expected(position, digest))


def test_checkpoints_hold_and_fail_alike(damaged_url: str) -> None:
    tree, row = _checkpoints(damaged_url)
    build(damaged_url, attempts=3, first=12)  # the store grows past both
    for expected in (tree, row):
        single, parallel, parts = both(damaged_url, expected=expected)
        assert single.ok and single.checkpoint_position == expected.position
        assert parallel == single and parts is not None
    forged = Expected(row.position, "f" * 64)
    single, parallel, parts = both(damaged_url, expected=forged)
    assert not single.ok and parallel == single and parts is not None  # the merge refuses
    damage(damaged_url, "DELETE FROM ts_events WHERE trace_id = 't2' AND position = "
                        f"{row.position}")
    for expected in (tree, row):
        single, parallel, _ = both(damaged_url, expected=expected)
        assert not single.ok and parallel == single


@pytest.mark.parametrize("name", ["a capture NULL",
                                  pytest.param("payload edited", marks=pytest.mark.slow),
                                  pytest.param("a middle event deleted",
                                               marks=pytest.mark.slow)])
def test_the_cli_reports_the_same_with_and_without_workers(damaged_url: str,
                                                           name: str) -> None:
    for url in (_intact_copy(), damaged_url):
        if url == damaged_url:
            damage(url, *DAMAGE[name][0])
        for _ in range(5):  # a pass stopped short of the newest rows is taken again (both)
            one, many = ([run("verify", *flags, "--jobs", jobs,
                              db=url)  # type: ignore[arg-type]
                          for flags in ([], ["--json"])] for jobs in ("1", "3"))
            if many == one:
                break
        assert many == one  # exit codes, stdout and stderr
        assert json.loads(one[1][1])["ok"] is (url != damaged_url)


def _intact_copy() -> str:
    url = _fresh_pg_url()
    build(url, attempts=4)
    return url


@pytest.mark.parametrize("value", ["0", "-1", "-8"])
def test_jobs_below_one_is_refused_with_its_code(intact_url: str, tmp_path: Path,
                                                 value: str) -> None:
    for db in (intact_url, tmp_path / "none.db"):
        exit_code, stdout, stderr = run("verify", "--jobs", value, "--json",
                                        db=db)  # type: ignore[arg-type]
        assert (exit_code, stdout) == (2, "")
        assert json.loads(stderr)["error"] == "invalid_option", stderr
    assert not (tmp_path / "none.db").exists()


def test_sqlite_ignores_jobs(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert run("ingest", str(PROJECTIONS[0]), "--attempt", "a", db=db)[0] == 0
    assert run("verify", "--jobs", "4", "--json", db=db) == run("verify", "--json", db=db)


def test_the_default_uses_workers_only_on_a_large_postgresql_store(intact_url: str,
                                                                   tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    with EventStore(intact_url) as store, store._reader.connect() as conn:
        assert vp.choose_jobs(conn, None) == 1  # a small store: one pass
        assert vp.choose_jobs(conn, 4) == 4
    engine = create_engine(f"sqlite:///{tmp_path / 's.db'}")
    with engine.connect() as conn:
        assert vp.choose_jobs(conn, 4) == 1
    engine.dispose()


def failing_part(task: Any) -> Any:
    raise RuntimeError("a worker failed")


def dying_part(task: Any) -> Any:
    os._exit(9)


@pytest.mark.parametrize("walk", [failing_part, dying_part])
def test_a_failing_worker_leaves_the_single_pass_to_report(intact_url: str,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          walk: Any) -> None:
    monkeypatch.setattr(vw, "_walk_part", walk)
    single, parallel, parts = both(intact_url)
    assert parallel == single and single.ok and parts is None
    assert multiprocessing.active_children() == []


_INTERRUPTED = r"""
import os, sys, time
from tracestore.store import verify_parallel as vp
from tracestore.store import verify_worker as vw
from tracestore.store.log import EventStore

def slow_part(task):
    import psycopg
    conn = psycopg.connect(**task.connect)
    os.write(1, f"{os.getpid()}\n".encode())  # one write: the two workers share the pipe
    time.sleep(120)

vw._walk_part = slow_part
if sys.argv[2] == "cli":  # the command, as the installed script runs it
    from tracestore.cli import main
    sys.argv = ["tracestore", "verify", "--jobs", "2", "--db", sys.argv[1]]
    main()
with EventStore(sys.argv[1]) as store:
    store.verify(jobs=2)
"""


def _backends(url: str) -> int:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_URL.replace("postgresql+psycopg", "postgresql"),  # type: ignore[union-attr]
                         autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                           (name,)).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("how, signum", [
    ("library", signal.SIGINT),
    pytest.param("cli", signal.SIGINT, marks=pytest.mark.slow),
    pytest.param("cli", signal.SIGTERM, marks=pytest.mark.slow)])
def test_ctrl_c_stops_the_workers_and_their_connections(intact_url: str, how: str,
                                                        signum: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", _INTERRUPTED, intact_url, how],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stdout is not None
    workers = [int(child.stdout.readline()) for _ in range(2)]  # both connected
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=60)
    if how == "cli":  # stopped as Ctrl-C stops a command: its status, no traceback
        assert (child.returncode, stderr) == (130, ""), stderr
    else:
        assert "KeyboardInterrupt" in stderr, stderr
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    deadline = time.monotonic() + 10  # the server notices closed sockets at once
    while _backends(intact_url) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _backends(intact_url) == 0


@pytest.mark.parametrize("jobs", [2, pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(4, marks=pytest.mark.slow)])
def test_a_store_with_a_global_chain_is_verified_alike(jobs: int) -> None:
    """Rows from before per-trace chains are on one global chain: each worker checks it in
    its range, and the ranges are joined on it too (positions 1..6 of 9 here)."""
    import importlib

    # By name: that module imports ``tests.conftest``, this one ``conftest`` (mypy would
    # see one file under two module names).
    old = importlib.import_module("test_store_chains_migration")
    urls = [_fresh_pg_url() for _ in range(4)]
    for url in urls:
        old._old_store(url)
        with EventStore(url) as store:
            store.append([old.frame("a", "4"), old.frame("c", "1")])
    single, parallel, parts = both(urls[0], jobs)
    assert single.ok and single.count == 9 and parallel == single
    assert parts is not None and vp._merge(parts, None, 6) == single  # by the workers
    for url, statements in zip(urls[1:], (
            ["UPDATE ts_events SET payload = payload || ' ' WHERE position = 2"],
            ["UPDATE ts_events SET payload = payload || ' ' WHERE position = 4"],
            ["DELETE FROM ts_events WHERE position = 6"])):
        damage(url, *statements)
        single, parallel, parts = both(url, jobs)
        assert not single.ok and parallel == single, statements
        assert parts is None or vp._merge(parts, None, 6) is None
