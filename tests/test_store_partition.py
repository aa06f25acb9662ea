"""``tracestore store partition``: a PostgreSQL store's ts_events becomes hash-partitioned by
trace_key and ts_blobs by sha256, in one transaction; bad inputs are typed and change
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import PG_URL, _fresh_pg_url
from tests.test_store_trace_key_migration import frame
from tracestore.cli import app
from tracestore.store.log import EventStore

runner = CliRunner()


def partition(*args: str) -> tuple[int, Any, str]:
    """``tracestore store partition ARGS --json``: (exit code, parsed stdout or None,
    stderr)."""
    result = runner.invoke(app, ["store", "partition", *args, "--json"])
    out = json.loads(result.stdout) if result.stdout.strip() else None
    return result.exit_code, out, result.stderr


def error_code(stderr: str) -> str:
    return str(json.loads(stderr.strip().splitlines()[-1])["error"])


def layout(url: str) -> dict[str, Any]:
    """What a partitioning would change: each table's kind, its partitions' bounds, its
    unique constraints and triggers, the views, and the rows."""
    with EventStore(url, create=False) as store:
        def q(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in store.fetch_driver(sql, (), during="the test")]

        return {
            "kinds": q("SELECT relname, relkind FROM pg_class WHERE relname IN "
                       "('ts_events', 'ts_blobs') ORDER BY relname"),
            "partitions": q("SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM "
                            "pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                            "WHERE c.relkind = 'r' ORDER BY c.relname"),
            "constraints": q("SELECT conrelid::regclass::text, conname, "
                             "pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid IN "
                             "('ts_events'::regclass, 'ts_blobs'::regclass) ORDER BY 1, 2"),
            "triggers": q("SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE "
                          "tgrelid IN ('ts_events'::regclass, 'ts_blobs'::regclass) "
                          "AND NOT tgisinternal ORDER BY 1, 2"),
            "views": q("SELECT viewname, definition FROM pg_views "
                       "WHERE schemaname = 'public' ORDER BY 1"),
            "rows": q("SELECT position, trace_key, hash FROM ts_events ORDER BY position"),
            "blobs": q("SELECT sha256 FROM ts_blobs ORDER BY sha256"),
        }


@pytest.fixture
def pg_url() -> str:
    if not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    url = _fresh_pg_url()
    with EventStore(url) as store:
        store.append([frame("a", "1"), frame("b", "1")], blob_data=[b"capture"])
        store.append([frame(None, "s")])
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:  # a team's own view over the store (its text holds a %)
        conn.execute(text("CREATE VIEW team_frames AS SELECT position FROM ts_events "
                          "WHERE stream LIKE 'attempt:%'"))
    engine.dispose()
    return url


def test_a_store_is_partitioned_keeps_its_rows_and_takes_appends(pg_url: str) -> None:
    before = layout(pg_url)
    code, out, err = partition("--db", pg_url, "--partitions", "4")
    assert (code, err) == (0, "")
    assert out == {"db": out["db"], "partition_count": 4, "tables": [
        {"table": "ts_events", "key": "trace_key", "row_count": 3},
        {"table": "ts_blobs", "key": "sha256", "row_count": 1}]}
    after = layout(pg_url)
    assert after["kinds"] == [("ts_blobs", "p"), ("ts_events", "p")]
    assert after["partitions"] == [
        (f"{table}_p{n}", f"FOR VALUES WITH (modulus 4, remainder {n})")
        for table in ("ts_blobs", "ts_events") for n in range(4)]
    for same in ("constraints", "triggers", "views", "rows", "blobs"):
        assert after[same] == before[same], same
    with EventStore(pg_url) as store:
        store.append([frame("a", "2"), frame("c", "1")], blob_data=[b"capture", b"more"])
        store.append_with(lambda _view: ([frame(None, "t")], []))
        result = store.verify()
        assert (result.ok, result.count) == (True, 6)
        assert store.fetch_driver("SELECT count(*) FROM ts_blobs", (), during="the test")[0][0] \
            == 2
        with pytest.raises(Exception, match="append-only"):
            store.fetch_driver("UPDATE ts_events SET payload = payload", (), during="the test")
        with pytest.raises(Exception, match="append-only"):
            store.fetch_driver("DELETE FROM ts_blobs", (), during="the test")


def test_an_empty_database_gets_the_schema_partitioned() -> None:
    if not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    url = _fresh_pg_url()
    code, out, _ = partition("--db", url)
    assert code == 0 and out["partition_count"] == 8
    assert [(t["table"], t["row_count"]) for t in out["tables"]] == [("ts_events", 0),
                                                                     ("ts_blobs", 0)]
    assert layout(url)["kinds"] == [("ts_blobs", "p"), ("ts_events", "p")]


def test_a_partitioned_store_is_refused_and_left_as_it_is(pg_url: str) -> None:
    assert partition("--db", pg_url, "--partitions", "2")[0] == 0
    before = layout(pg_url)
    code, out, err = partition("--db", pg_url, "--partitions", "8")
    assert (code, out, error_code(err)) == (3, None, "store_already_partitioned")
    assert layout(pg_url) == before


@pytest.mark.parametrize("count", ["0", "1", "1025", "-3"])
def test_a_partition_count_out_of_range_is_refused_and_changes_nothing(
        pg_url: str, count: str) -> None:
    before = layout(pg_url)
    code, out, err = partition("--db", pg_url, f"--partitions={count}")
    assert (code, out, error_code(err)) == (2, None, "partition_count_invalid")
    assert layout(pg_url) == before
    assert before["kinds"] == [("ts_blobs", "r"), ("ts_events", "r")]


@pytest.mark.parametrize("db", ["file", "sqlite:///{tmp}/new.db", "sqlite://",
                                "mysql://someone@localhost/db"])
def test_a_store_that_is_not_postgresql_is_refused_and_no_file_is_made(tmp_path: Path, db: str) -> None:
    existing = tmp_path / "store.db"
    with EventStore(f"sqlite:///{existing}") as store:
        store.append([frame("a", "1")])
    before = existing.read_bytes()
    url = str(existing) if db == "file" else db.format(tmp=tmp_path)
    code, out, err = partition("--db", url)
    assert (code, out, error_code(err)) == (2, None, "partition_needs_postgresql")
    assert existing.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]


def test_a_rebuild_the_database_refuses_rolls_back_whole(pg_url: str) -> None:
    """A table of the team's own referencing ts_events stops its drop: the database
    refuses, and the tables, views and rows are as they were."""
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE notes (p integer, k varchar(255), FOREIGN KEY (p, k) "
                          "REFERENCES ts_events (position, trace_key))"))
    engine.dispose()
    before = layout(pg_url)
    code, out, err = partition("--db", pg_url)
    assert (code, out, error_code(err)) == (3, None, "partition_refused")
    assert "nothing was changed" in err
    assert layout(pg_url) == before


def test_an_export_imports_into_a_partitioned_store_with_its_hashes(tmp_path: Path) -> None:
    if not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    source = f"sqlite:///{tmp_path / 'source.db'}"
    with EventStore(source) as store:
        store.append([frame("a", "1"), frame("b", "1")], blob_data=[b"capture"])
        store.append([frame(None, "s"), frame("a", "2")])
        want = [(e.position, e.trace_id, e.hash) for e in store.read()]
    exported = runner.invoke(app, ["export", "--db", source, "--format", "jsonl"])
    assert exported.exit_code == 0, exported.output
    url = _fresh_pg_url()
    assert partition("--db", url)[0] == 0
    imported = runner.invoke(app, ["import", "-", "--db", url, "--json"],
                             input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["same_hashes"] is True
    with EventStore(url) as store:
        assert [(e.position, e.trace_id, e.hash) for e in store.read()] == want
        keys = store.fetch_driver("SELECT position, trace_key FROM ts_events ORDER BY position",
                                  (), during="the test")
        assert [tuple(row) for row in keys] == [(1, "a"), (2, "b"), (3, ""), (4, "a")]
        assert store.verify().ok
