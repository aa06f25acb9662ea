"""Issue 25 item 4: ``audit --json`` from the audit index (migration 0004) is byte for byte
the live audit -- index current, traces changed or new since it was built, violations
included -- reads no event back when the index is current, and is never used by code
that did not write it (its state row is named after the code's fingerprint)."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from tests.clihelp import run
from tests.test_review_amend import replay_into
from tracestore.review import queue_index as qi
from tracestore.cli.release_cmds import write_audit_json, write_audit_json_live
from tracestore.store import reads
from tracestore.store.log import EventStore

LEAKY = Path(__file__).resolve().parents[1] / "fixtures" / "review" / "t7-leaky-app.json"


def _both(path: Path) -> tuple[str, str]:
    indexed, live = io.StringIO(), io.StringIO()
    with EventStore(f"sqlite:///{path}", create=False, read_only=True) as store:
        write_audit_json(store, indexed.write)
        write_audit_json_live(store, live.write)
    return indexed.getvalue(), live.getvalue()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.db"
    with EventStore(f"sqlite:///{path}") as store:
        for name in ("t7", "t1", "t8"):
            replay_into(store, name)
    assert run("replay", str(LEAKY), db=path)[0] == 0  # one violation
    with EventStore(f"sqlite:///{path}") as store:
        qi.sync(store)
    return path


def test_the_indexed_audit_is_the_live_audit_and_reads_no_event(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    indexed, live = _both(db)
    assert indexed == live
    report = json.loads(indexed)
    assert len(report["attempts"]) == 5 and len(report["violations"]) == 1
    loaded: list[object] = []
    real = reads._stored_from_row
    monkeypatch.setattr(reads, "_stored_from_row",
                        lambda *a, **k: loaded.append(a) or real(*a, **k))
    out = io.StringIO()
    with EventStore(f"sqlite:///{db}", create=False, read_only=True) as store:
        assert write_audit_json(store, out.write) == 1
    assert out.getvalue() == live and loaded == []
    code, text, _ = run("audit", "--json", db=db)
    assert code == 0 and text == live


def test_traces_changed_or_new_since_the_index_are_judged_live(db: Path) -> None:
    from tracestore.cli.review_cmds import amend
    from tracestore.review import load_template

    with EventStore(f"sqlite:///{db}") as store:
        # t1 changes after the index was built (a review record), t2 is new.
        amend(store, load_template(), "t1", "t1", sets=[("evidence_gap", "readback")],
              approve=False, reviewer="alice", evidence=[])
        replay_into(store, "t2")
    conn = sqlite3.connect(db)
    head = conn.execute("SELECT max(position) FROM ts_events").fetchone()[0]
    upto = conn.execute("SELECT position FROM ts_index_state WHERE name LIKE 'audit:%'"
                        ).fetchone()[0]
    conn.close()
    assert head > upto
    indexed, live = _both(db)
    assert indexed == live
    with EventStore(f"sqlite:///{db}") as store:  # caught up: still the same text
        assert qi.sync(store) >= 1
    assert _both(db) == (live, live)


def test_rows_another_code_wrote_are_never_read(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE ts_audit_index SET attempts = '\"forged\"'")
    conn.commit()
    indexed, live = _both(db)
    assert "forged" in indexed  # this code's rows are read as they are ...
    conn.execute("UPDATE ts_index_state SET name = 'audit:0000000000000000' "
                 "WHERE name LIKE 'audit:%'")
    conn.commit()
    conn.close()
    indexed, live = _both(db)
    assert indexed == live and "forged" not in indexed  # ... another code's never
    with EventStore(f"sqlite:///{db}") as store:
        assert qi.sync(store) == 0  # the log did not grow: nothing is rebuilt yet ...
        replay_into(store, "t2")
        assert qi.sync(store) == 5  # ... the next sync rebuilds every trace for this code
    indexed, live = _both(db)
    assert indexed == live and "forged" not in indexed
    conn = sqlite3.connect(db)
    names = [n for (n,) in conn.execute("SELECT name FROM ts_index_state ORDER BY name")]
    conn.close()
    assert len(names) == 2 and names[1] == "review_queue"
    assert names[0].startswith("audit:") and names[0] != "audit:0000000000000000"


def test_sync_and_the_indexed_audit_on_every_backend(store: EventStore) -> None:
    """The same on SQLite (file, memory) and PostgreSQL: the bulk index build, the queue's
    filters, and the indexed audit equal to the live one before and after an append."""
    for name in ("t7", "t1", "t8"):
        replay_into(store, name)
    assert qi.sync(store) == 3
    assert [r["attempt_id"] for r in qi.query_attempts(store, status="stopped")] == [
        "t7", "t8-old"]

    def both() -> tuple[str, str]:
        indexed, live = io.StringIO(), io.StringIO()
        write_audit_json(store, indexed.write)
        write_audit_json_live(store, live.write)
        return indexed.getvalue(), live.getvalue()

    indexed, live = both()
    assert indexed == live and len(json.loads(live)["attempts"]) == 4
    replay_into(store, "t2")  # a new trace, not in the index yet: judged live
    indexed, live = both()
    assert indexed == live
    assert qi.sync(store) == 1
    assert both() == (live, live)
