"""The store's "already stored?" look-ups stay one query per chunk (issue 25 item 2).

An append asks which of its ids the store holds before it writes them (an id already stored
is skipped and reported: re-ingesting a file is a no-op).  On SQLite that used to be one
``IN (…)`` query per 500 ids; a planned ingest's ids share a prefix and ascend, so one
bounded range query per 5,000-row chunk settles it.  These tests count the queries and
check the answer equals the per-id one wherever the range cannot settle it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import event

from tests.conftest import PG_URL, _fresh_pg_url
from tracestore.events import NewEvent
from tracestore.events.models import LocalStopped
from tracestore.ingest import plan_ingest
from tracestore.ingest.pipeline import append_plan
from tracestore.store import log as log_mod
from tracestore.store.log import EventStore


def _projection(frames: int) -> bytes:
    natives = [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": f"w{n} "}}}
               for n in range(frames)]
    return json.dumps([{"messageStart": {"role": "assistant"}}, *natives,
                       {"messageStop": {"stopReason": "end_turn"}},
                       {"local": "drain", "outcome": "clean"}]).encode()


def _id_queries(store: EventStore) -> list[str]:
    """The id look-up statements the store's writer runs from now on."""
    seen: list[str] = []

    def heard_text(statement: str) -> None:
        text = " ".join(statement.split()).lower()
        if "from ts_events where" in text and any(
                mark in text for mark in ("where id in", "where id >=", "where id = any")):
            seen.append(text)

    if store._sqlite_path is not None:  # a SQLite file's appends: plain sqlite3 connections
        take = store._write_take

        def traced_take():  # noqa: ANN202
            conn = take()
            conn.connection.set_trace_callback(heard_text)
            return conn
        store._write_take = traced_take  # type: ignore[method-assign]
        return seen

    def heard(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        heard_text(statement)

    event.listen(store._writer, "before_cursor_execute", heard)
    return seen


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_ingest_asks_once_per_chunk_whether_its_ids_are_stored(
        tmp_path: Path, backend: str) -> None:
    if backend == "postgresql":
        if not PG_URL:
            pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
        url = _fresh_pg_url()
    else:
        url = f"sqlite:///{tmp_path / 's.db'}"
    data = _projection(12_000)  # 12,003 body events: three 5,000-row chunks
    with EventStore(url) as store:
        queries = _id_queries(store)
        first = append_plan(store, plan_ingest(data, filename="big.json"))
        fresh = list(queries)
        queries.clear()
        again = append_plan(store, plan_ingest(data, filename="big.json"))
        assert (again.appended, len(again.skipped_ids)) == (0, first.appended)
        assert store.verify().ok
        ranged_expected = backend == "sqlite" or bool(store._pg_bytewise)
    chunks = -(-first.appended // log_mod._APPEND_CHUNK)  # 12,006 events: 3 chunks
    for run in (fresh, queries):  # a fresh attempt, then the same file again
        ranged = [q for q in run if "where id >=" in q]
        assert len(ranged) == (chunks if ranged_expected else 0)
        # the rest: the decision's own single-id checks (and, without a bytewise order on
        # PostgreSQL, one look-up by id per chunk)
        assert len(run) - len(ranged) <= 2 + (0 if ranged_expected else chunks)


def _stored_ids(store: EventStore) -> set[str]:
    return {e.id for e in store.read()}


@pytest.mark.parametrize("layout", ["scattered", "ascending", "non-ascii"])
def test_the_look_up_answers_as_asking_by_id_does(store_url: str, layout: str) -> None:
    """Stored ids inside the asked range beyond its bound (random ids), ascending ids with
    some stored, and ids a database may order otherwise than Python: each skipped exactly,
    on every backend."""
    with EventStore(store_url) as store:
        def ids(n: int, tag: str) -> list[str]:
            if layout == "scattered":
                return [uuid.uuid4().hex for _ in range(n)]
            if layout == "ascending":  # new ids between the stored ones
                return [f"a{i:08d}{tag}" for i in range(100, 100 + n)]
            return [f"{tag}-\uff01{i}" if i % 2 else f"{tag}-\U0001f600{i}" for i in range(n)]

        def events(batch: list[str]) -> list[NewEvent]:
            return [NewEvent("s", LocalStopped(attempt_id="a", reader="ingest"), id=i)
                    for i in batch]

        stored = ids(400, "")
        store.append(events(stored))
        asked = ids(150, "b") + stored[100:250:3]
        if layout == "ascending":
            asked.sort()
        result = store.append(events(asked))
        assert set(result.skipped_ids) == set(stored[100:250:3])
        assert result.appended == 150
        assert _stored_ids(store) == set(stored) | set(asked)
