"""One ingest is ONE transaction: its frames and the ``release.decided`` they imply are
appended together, the decision derived from the plan without reading the trace back
(issue 26 item 1, issue 25 item 2)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clihelp import count_events, run
from tracestore.ingest.pipeline import append_plan
from tracestore.ingest import plan_ingest
from tracestore.ingest.decisions import DecisionPlanner
from tracestore.store import reads
from tracestore.store.log import EventStore

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
CAPTURE = REAL / "anthropic" / "text-basic.sse"


class Killed(BaseException):
    """Stands for kill -9: nothing after it runs, no handler sees it."""


def _decisions(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT stream, type FROM ts_events WHERE type = "
                            "'release.decided' ORDER BY position").fetchall()
    finally:
        conn.close()


def _stop_at_the_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stop the process where the decision is planned: after the frames were handed to the
    store (in the old code, after their transaction had committed)."""
    def killed(self: Any) -> Any:
        raise Killed
    monkeypatch.setattr(DecisionPlanner, "missing", killed)


@pytest.mark.parametrize("command", [["ingest"], ["ingest-batch"]])
def test_a_stop_between_frames_and_decision_leaves_nothing_and_a_rerun_records_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    db = tmp_path / "s.db"
    with monkeypatch.context() as patch, pytest.raises(Killed):
        _stop_at_the_decision(patch)
        run(*command, str(CAPTURE), db=db)
    assert count_events(db) == 0  # nothing: not "frames committed, decision missing"
    code, _, _ = run(*command, str(CAPTURE), "--json", db=db)
    assert code == 0
    assert _decisions(db) == [("attempt:text-basic-" + _sha8(), "release.decided")]
    with EventStore(f"sqlite:///{db}") as store:
        assert store.verify().ok


def _sha8() -> str:
    import hashlib

    return hashlib.sha256(CAPTURE.read_bytes()).hexdigest()[:8]


def test_the_decision_is_appended_with_the_frames_at_the_positions_after_them(
        tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out, _ = run("ingest", str(CAPTURE), "--json", db=db)
    summary = json.loads(out)
    assert code == 0
    first, last = summary["positions"]
    assert summary["decisions_recorded"] == [last + 1]
    with EventStore(f"sqlite:///{db}") as store:
        stored = store.read()
        decided = stored[-1]
        assert (decided.position, decided.type, decided.event.status) == \
            (last + 1, "release.decided", "held")
        assert len({e.recorded_at for e in stored}) == 1  # one append, one transaction
        assert decided.event.decided_at_position == last  # the drain decided it


def test_a_store_left_without_the_decision_is_repaired_by_running_the_ingest_again(
        tmp_path: Path) -> None:
    """A store an older version left with "frames committed, release.decided missing"."""
    db = tmp_path / "s.db"
    with EventStore(f"sqlite:///{db}") as store:
        append_plan(store, plan_ingest(CAPTURE.read_bytes(), filename=CAPTURE.name),
                    decide=False)
    assert _decisions(db) == []
    code, out, _ = run("ingest", str(CAPTURE), "--json", db=db)
    summary = json.loads(out)
    assert (code, summary["appended"], len(summary["decisions_recorded"])) == (0, 0, 1)
    assert len(_decisions(db)) == 1
    code, out, _ = run("ingest", str(CAPTURE), "--json", db=db)  # now a true no-op
    assert json.loads(out)["decisions_recorded"] == [] and len(_decisions(db)) == 1


def test_ingest_reads_no_event_of_the_new_attempt_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    # A prior attempt in the same trace: the trace's prior state is read, never the new one.
    assert run("ingest", str(CAPTURE), "--attempt", "old", "--trace", "t", db=db)[0] == 0
    streams: list[str] = []
    load = reads._stored_from_row

    def spy(row: Any, *args: Any) -> Any:
        streams.append(row[2])
        return load(row, *args)

    monkeypatch.setattr(reads, "_stored_from_row", spy)
    code, out, _ = run("ingest", str(CAPTURE), "--attempt", "new", "--trace", "t", "--json",
                       db=db)
    assert code == 0 and len(json.loads(out)["decisions_recorded"]) == 1
    assert "attempt:new" not in streams
    assert all(s in ("trace:t", "attempt:old") for s in streams)
    monkeypatch.undo()
    with EventStore(f"sqlite:///{db}") as store:
        from tracestore.projections.release import decide_all

        recomputed = {d.attempt_id: d for d in decide_all(store.read(trace_id="t"))}
        recorded = {e.event.attempt_id: e.event for e in store.read(trace_id="t")
                    if e.type == "release.decided"}
        assert recorded["new"].status == recomputed["new"].status
        assert recorded["new"].decided_at_position == recomputed["new"].decided_at_position


def test_an_earlier_attempt_left_undecided_is_decided_with_the_new_one(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with EventStore(f"sqlite:///{db}") as store:
        append_plan(store, plan_ingest(CAPTURE.read_bytes(), filename=CAPTURE.name,
                                       attempt_id="old", trace_id="t"), decide=False)
    code, out, _ = run("ingest", str(CAPTURE), "--attempt", "new", "--trace", "t", "--json",
                       db=db)
    assert code == 0 and len(json.loads(out)["decisions_recorded"]) == 2
    from tracestore.projections.release import decide_all

    with EventStore(f"sqlite:///{db}") as store:
        stored = store.read(trace_id="t")
        recomputed = {d.attempt_id: (d.status, d.reasons, d.decided_at_position)
                      for d in decide_all(stored)}
        recorded = {e.event.attempt_id: (e.event.status, e.event.reasons,
                                         e.event.decided_at_position)
                    for e in stored if e.type == "release.decided"}
    assert recorded == recomputed


def test_a_task_revision_killed_before_its_decisions_gets_them_from_the_rerun(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    assert run("ingest", str(CAPTURE), "--attempt", "a", "--trace", "t", db=db)[0] == 0
    rule = tmp_path / "rule.json"
    rule.write_text(json.dumps({"answer_patterns": ["Paris"]}))
    with monkeypatch.context() as patch, pytest.raises(Killed):
        _stop_at_the_decision(patch)
        run("task", "t", "--task", str(rule), db=db)
    assert len(_decisions(db)) == 1  # the revision is in, its decision is not
    code, out, _ = run("task", "t", "--task", str(rule), "--json", db=db)
    assert code == 0 and json.loads(out)["position"] is None  # nothing new to append ...
    assert len(json.loads(out)["decisions"]) == 1 and len(_decisions(db)) == 2  # ... repaired
