"""PostgreSQL bulk appends through ``COPY ... FROM STDIN`` (issue 25 item 3).

A chunk of at least ``EventStore.COPY_MIN_ROWS`` events is copied, not inserted row by row;
these tests force one path or the other on the same input and check that the stored log is
the same in every column, and that a copy keeps the append's guarantees (all or nothing, a
refused row is a typed error, a refused group rolls back alone).  Need the test server
(``TRACESTORE_TEST_PG_URL``); skipped without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PG_URL, _fresh_pg_url, _partitioned_pg_url
from tracestore.errors import StoreError
from tracestore.events import FrameReceived, NewEvent, attempt_stream
from tracestore.ingest import plan_ingest
from tracestore.ingest.pipeline import append_plan
from tracestore.store import log as store_log
from tracestore.store import pg_bulk
from tracestore.store.log import EventStore

pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server "
                                                   "(set TRACESTORE_TEST_PG_URL)")

ALWAYS, NEVER = 1, 10**9
COLUMNS = ("position, id, stream, version, type, schema_version, recorded_at, trace_id, "
           "payload, hash")


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the COPY statements the store opens."""
    seen: list[str] = []
    real = pg_bulk.pg_copying

    def spy(conn, sql):  # noqa: ANN001, ANN202
        seen.append(sql)
        return real(conn, sql)

    monkeypatch.setattr(store_log, "pg_copying", spy)
    return seen


def projection(frames: int) -> bytes:
    """A Bedrock projection of ``frames`` text deltas (more than one 5,000-row chunk)."""
    delta = json.dumps({"contentBlockDelta": {"contentBlockIndex": 0,
                                              "delta": {"text": "Grüße, \\ \t\"tab\" "}}},
                       separators=(",", ":"))
    parts = ['{"messageStart":{"role":"assistant"}}', *[delta] * frames,
             '{"contentBlockStop":{"contentBlockIndex":0}}',
             '{"messageStop":{"stopReason":"end_turn"}}', '{"local":"drain","outcome":"clean"}']
    return ("[\n" + ",\n".join(parts) + "\n]\n").encode()


def ingest_all(url: str, threshold: int) -> tuple[list[tuple], list[tuple]]:
    inputs = [("big.json", projection(6000), "a-big", "t-big")]
    for n, capture in enumerate(sorted((FIXTURES / "real" / "openai-chat").glob("*.sse"))[:3]):
        inputs.append((capture.name, capture.read_bytes(), f"a-{n}", f"t-{n}"))
    with EventStore(url) as store:
        store.COPY_MIN_ROWS = threshold
        for name, data, attempt, trace in inputs:
            append_plan(store, plan_ingest(data, filename=name, attempt_id=attempt,
                                           trace_id=trace))
        assert store.verify().ok
        rows = store.fetch_driver(f"SELECT {COLUMNS} FROM ts_events ORDER BY position", (),
                                  during="in the test")
        blobs = store.fetch_driver("SELECT sha256, size, data FROM ts_blobs ORDER BY sha256",
                                   (), during="in the test")
    return [tuple(r) for r in rows], [(s, n, bytes(d)) for s, n, d in blobs]


def test_copy_and_insert_store_the_same_log_in_every_column(
        monkeypatch: pytest.MonkeyPatch, copies: list[str]) -> None:
    monkeypatch.setattr(store_log, "utc_now", lambda: "2026-12-02T00:00:00.000000+00:00")
    plain = ingest_all(_fresh_pg_url(), NEVER)
    assert copies == []
    copied = ingest_all(_fresh_pg_url(), ALWAYS)
    assert len(copies) >= 2  # the 6,000-frame capture spans two chunks, each one COPY
    assert len(copied[0]) == len(plain[0]) > 6000
    assert copied == plain


@pytest.mark.slow
def test_copy_into_hash_partitioned_tables_stores_the_same_log(
        monkeypatch: pytest.MonkeyPatch, copies: list[str]) -> None:
    monkeypatch.setattr(store_log, "utc_now", lambda: "2026-12-02T00:00:00.000000+00:00")
    plain = ingest_all(_fresh_pg_url(), NEVER)
    partitioned = ingest_all(_partitioned_pg_url(), ALWAYS)
    assert len(copies) >= 2
    assert partitioned == plain


def test_a_large_append_on_postgresql_is_copied_and_a_small_one_inserted(
        copies: list[str]) -> None:
    with EventStore(_fresh_pg_url()) as store:
        small = EventStore.COPY_MIN_ROWS - 1
        store.append([frame("a", n) for n in range(small)])
        assert copies == []
        store.append([frame("b", n) for n in range(EventStore.COPY_MIN_ROWS)])
        assert len(copies) == 1
        assert store.head_position() == small + EventStore.COPY_MIN_ROWS
        assert store.stream_version("attempt:b") == EventStore.COPY_MIN_ROWS
        assert store.verify().ok


def frame(attempt: str, n: int) -> NewEvent:
    return NewEvent(attempt_stream(attempt),
                    FrameReceived(attempt_id=attempt, api="bedrock-converse-stream",
                                  native={"contentBlockDelta": {"n": n, "t": "ü\\\n"}},
                                  index=n),
                    trace_id="t")


@pytest.fixture
def copying_store(copies: list[str]) -> EventStore:
    store = EventStore(_fresh_pg_url())
    store.COPY_MIN_ROWS = ALWAYS
    return store


def test_a_row_the_database_refuses_in_a_copy_is_typed_and_leaves_nothing(
        copying_store: EventStore, monkeypatch: pytest.MonkeyPatch, copies: list[str]) -> None:
    store = copying_store
    first = frame("a", 0)
    store.append([first, frame("a", 1)])
    # The store no longer sees the stored id, so the COPY itself meets the unique id.
    monkeypatch.setattr(EventStore, "_existing_ids", lambda self, conn, ids: set())
    from tracestore.store import log, pg_bulk

    monkeypatch.setattr(log, "pg_lookups_sql", lambda streams, _ids: (
        pg_bulk.pg_versions_sql(streams) + "; SELECT NULL::text WHERE false"))
    with pytest.raises(StoreError) as caught:
        store.append([frame("b", 0), first, frame("b", 1)])
    assert caught.value.code == "append_refused"
    assert len(copies) == 2
    monkeypatch.undo()
    assert store.head_position() == 2
    assert store.stream_version("attempt:b") == 0
    # the refused append's reserved positions (3 to 5) stay unused
    assert store.append([frame("b", 0)]).positions == (6,)
    assert store.verify().ok
    store.close()


def test_a_failure_in_the_middle_of_a_copy_leaves_no_event(copying_store: EventStore) -> None:
    store = copying_store
    store.append([frame("a", 0)])

    class Exploding:
        def written(self, position: int, version: int, new: object, digest: str) -> None:
            if position == 3:
                raise RuntimeError("injected failure mid-copy")

        def then(self, view: object, result: object) -> list:
            return []

    batch = [frame("a", n) for n in range(1, 4)]
    with pytest.raises(RuntimeError, match="mid-copy"):
        store.append_with(lambda _view: (batch, []), tap=Exploding())
    assert store.head_position() == 1
    assert store.append([frame("a", 1)]).positions == (2,)
    assert store.verify().count == 2
    store.close()


def test_a_group_refused_in_its_copy_rolls_back_alone(
        copying_store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copying_store
    first = frame("a", 0)
    store.append([first])
    monkeypatch.setattr(EventStore, "_existing_ids", lambda self, conn, ids: set())
    from tracestore.store import log, pg_bulk

    monkeypatch.setattr(log, "pg_lookups_sql", lambda streams, _ids: (
        pg_bulk.pg_versions_sql(streams) + "; SELECT NULL::text WHERE false"))
    outcomes = store.append_groups([
        ("b", [frame("b", 0)], None, ()),
        ("a", [frame("a", 1), first], None, ()),
        ("a", [frame("a", 2)], None, ()),
        ("c", [frame("c", 0)], None, ()),
    ])
    monkeypatch.undo()
    assert [getattr(o, "code", None) or o.positions for o in outcomes] == [
        (2,), "append_refused", "append_refused", (3,)]
    assert [(e.stream, e.version) for e in store.read()] == [
        ("attempt:a", 1), ("attempt:b", 1), ("attempt:c", 1)]
    assert store.verify().ok
    store.close()


def test_import_of_an_export_through_copy_keeps_every_hash(copying_store: EventStore,
                                                           tmp_path: Path) -> None:
    with EventStore(f"sqlite:///{tmp_path / 'source.db'}") as source:
        source.append([frame("a", n) for n in range(1500)])
        rows = list(source.iter_rows())
    store = copying_store
    count, head = store.import_rows(rows, same_hashes=True)
    assert (count, head) == (1500, rows[-1]["hash"])
    assert list(store.iter_rows()) == rows
    store.close()
