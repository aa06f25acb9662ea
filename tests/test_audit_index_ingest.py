"""Issue 25 item 4: ``ingest`` keeps the audit index current in its own transaction, so
``audit --json`` right after an ingest reads the index (no event back) and is byte for
byte the live audit; an index that was behind (or never built) is left as it was, never
made to look fresh.  On SQLite (file, memory) and PostgreSQL."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.test_review_amend import replay_into
from tracestore.cli.release_cmds import write_audit_json, write_audit_json_live
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.review import audit_index
from tracestore.review import queue_index as qi
from tracestore.store import reads
from tracestore.store.log import EventStore

T1 = (Path(__file__).resolve().parents[1] / "fixtures" / "projections" / "t1.json").read_bytes()


def _ingest(store: EventStore, attempt: str, trace: str) -> None:
    ingest_input(store, T1, IngestOptions(filename="t1.json", attempt_id=attempt,
                                          trace_id=trace))


def _states(store: EventStore) -> dict[str, int]:
    return dict(store.fetch_driver("SELECT name, position FROM ts_index_state", (),
                                   during="in the test"))


def _both(store: EventStore) -> tuple[str, str]:
    indexed, live = io.StringIO(), io.StringIO()
    write_audit_json(store, indexed.write)
    write_audit_json_live(store, live.write)
    return indexed.getvalue(), live.getvalue()


def test_ingest_keeps_a_current_index_current(store: EventStore,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("t7", "t1"):
        replay_into(store, name)
    assert qi.sync(store) == 2
    _ingest(store, "fresh-a", "fresh")  # a new trace
    _ingest(store, "fresh-b", "fresh")  # a second attempt of it
    head = store.head_position()
    assert _states(store) == {"review_queue": head, audit_index.state_name(): head}
    indexed_rows = store.fetch_driver("SELECT trace_id FROM ts_audit_index ORDER BY "
                                      "first_position", (), during="in the test")
    assert [t for (t,) in indexed_rows] == ["t7", "t1", "fresh"]
    loaded: list[object] = []
    real = reads._stored_from_row
    monkeypatch.setattr(reads, "_stored_from_row",
                        lambda *a, **k: loaded.append(a) or real(*a, **k))
    indexed = io.StringIO()
    write_audit_json(store, indexed.write)
    assert loaded == []  # read from the index: no event judged again
    monkeypatch.undo()
    live = io.StringIO()
    write_audit_json_live(store, live.write)
    assert indexed.getvalue() == live.getvalue()
    assert '"attempt_id": "fresh-b"' in live.getvalue()
    assert qi.sync(store) == 0  # nothing left to catch up
    # The queue rows the ingest wrote are the ones a full rebuild writes.
    kept = qi.query_attempts(store)
    assert [r["attempt_id"] for r in kept][-2:] == ["fresh-a", "fresh-b"]
    with store._writer.begin() as conn:
        conn.exec_driver_sql("DELETE FROM ts_index_state")
    assert qi.sync(store) == 3
    assert qi.query_attempts(store) == kept
    assert _both(store)[0] == live.getvalue()


def test_a_stale_or_missing_index_is_not_made_fresh(store: EventStore) -> None:
    _ingest(store, "first", "first")  # never built: no state row appears
    assert _states(store) == {}
    assert qi.sync(store) == 1
    built = store.head_position()
    replay_into(store, "t7")  # appended without the queue: the index is behind
    _ingest(store, "later", "later")
    assert _states(store) == {"review_queue": built, audit_index.state_name(): built}
    indexed, live = _both(store)
    assert indexed == live and '"attempt_id": "later"' in live
    assert qi.sync(store) == 2
    _ingest(store, "last", "last")  # current again: kept by the ingest
    head = store.head_position()
    assert _states(store) == {"review_queue": head, audit_index.state_name(): head}
    indexed, live = _both(store)
    assert indexed == live and '"attempt_id": "last"' in live


def test_an_agent_run_file_keeps_it_current_for_every_run(store: EventStore) -> None:
    report = (Path(__file__).resolve().parents[1] / "fixtures" / "agent"
              / "seed001-live-comparison.json").read_bytes()
    replay_into(store, "t7")
    assert qi.sync(store) == 1
    ingested = ingest_input(store, report, IngestOptions(filename="report.json"))
    head = store.head_position()
    assert _states(store) == {"review_queue": head, audit_index.state_name(): head}
    traces = store.fetch_driver("SELECT count(*) FROM ts_audit_index", (),
                                during="in the test")[0][0]
    assert traces == len(store.trace_ids()) == 17 and len(ingested.attempts) == 16
    indexed, live = _both(store)
    assert indexed == live
    assert qi.sync(store) == 0
