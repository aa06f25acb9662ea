"""Whole-store reads: one set-based query for ``attempts``, streamed ``audit --json``.

The fast forms must say exactly what the per-row forms said; these tests compare them on
stores with many traces, retries and violations.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from clihelp import run

from tracestore.cli.release_cmds import audit_all, write_audit_json
from tracestore.review.escape import json_text
from tracestore.store.log import EventStore

ROOT = Path(__file__).resolve().parents[1]
SEED003 = ROOT / "fixtures" / "seed003"
PROJECTIONS = ROOT / "fixtures" / "projections"


def _fill(db: Path) -> None:
    for name in ("t7.json", "t7-leaky-app.json", "t8.json", "t8-buggy-app.json", "s1.json"):
        assert run("replay", str(SEED003 / name), "--json", db=db)[0] == 0
    for name in ("s1.json", "t1.json"):
        assert run("ingest", str(PROJECTIONS / name), "--json", db=db)[0] == 0


def test_streamed_audit_json_is_the_whole_report_byte_for_byte(db_file: Path) -> None:
    _fill(db_file)
    with EventStore(f"sqlite:///{db_file}") as store:
        expected = json_text(audit_all(store).to_dict(), indent=None, default=str) + "\n"
        out = io.StringIO()
        violations = write_audit_json(store, out.write)
    assert out.getvalue() == expected
    report = json.loads(expected)
    assert violations == len(report["violations"]) > 0
    assert len(report["attempts"]) >= 8


def test_audit_json_strict_exits_1_on_violations(db_file: Path) -> None:
    _fill(db_file)
    code, out, _ = run("audit", "--json", "--strict", db=db_file)
    assert code == 1 and json.loads(out)["violations"]


def test_attempts_listing_from_one_query_matches_the_events(db_file: Path) -> None:
    _fill(db_file)
    code, out, _ = run("attempts", "--json", db=db_file)
    listing = json.loads(out)["attempts"]
    with EventStore(f"sqlite:///{db_file}") as store:
        expected = []
        for stream, count in store.streams("attempt:"):
            first = store.read(stream=stream, limit=1)[0]
            expected.append({"attempt_id": stream.split(":", 1)[1], "events": count,
                             "trace_id": getattr(first.event, "trace_id", None),
                             "api": getattr(first.event, "api", None),
                             "first_position": first.position})
    old = ("attempt_id", "events", "trace_id", "api", "first_position")  # issue 21 adds more
    assert code == 0 and [{k: a[k] for k in old} for a in listing] == expected
    assert len(listing) >= 8


def test_iter_traces_yields_each_trace_as_read_gives_it(store: EventStore) -> None:
    """The driver-level loader (tuples, one prepared query per trace) on every backend."""
    from tracestore.ingest import plan_ingest

    data = (PROJECTIONS / "t1.json").read_bytes()
    for attempt, trace in (("a1", "t-one"), ("a2", "t-two"), ("a3", "t-one")):
        store.append(plan_ingest(data, filename="t1.json", attempt_id=attempt,
                                 trace_id=trace).events, blob_data=[data])
    traces = list(store.iter_traces(batch_size=1))
    assert [trace for trace, _ in traces] == ["t-one", "t-two"]
    for trace, loaded in traces:
        assert loaded == store.read(trace_id=trace)
    assert [len(loaded) for _, loaded in traces] == [19, 10]  # one trace.opened per trace


def test_iter_traces_reports_a_damaged_row_by_position(db_file: Path) -> None:
    import sqlite3

    import pytest

    from tracestore.errors import StoreError

    assert run("ingest", str(PROJECTIONS / "t1.json"), "--json", db=db_file)[0] == 0
    conn = sqlite3.connect(db_file)
    conn.execute("DROP TRIGGER ts_events_no_update")
    conn.execute("UPDATE ts_events SET payload = '{\"type\": \"frame.received\"}' "
                 "WHERE position = 4")
    conn.commit()
    conn.close()
    with EventStore(f"sqlite:///{db_file}", migrate_schema=False) as store:
        with pytest.raises(StoreError) as caught:
            list(store.iter_traces())
    assert caught.value.code == "store_damaged"
    assert str(caught.value) == (
        "store_damaged: the event at position 4 cannot be read (invalid_event: event of type "
        "'frame.received' is not valid: frame.received.attempt_id: Field required); run "
        "tracestore verify")
