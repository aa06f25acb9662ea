"""Migration 0003's read-only views (ts_attempts, ts_decisions) on SQLite and PostgreSQL,
and ``verify`` naming missing append-only triggers and views (issue 23)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from clihelp import run

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"


@pytest.fixture
def url(store_url: str) -> str:
    if store_url == "sqlite://":
        pytest.skip("the CLI cannot share an in-memory database")
    for scenario in ("t8.json", "s1-error.json"):
        assert run("replay", str(SEED / scenario), db=store_url)[0] == 0  # type: ignore[arg-type]
    code, _, err = run("review", "t8-new", "--set", "evidence_gap=none", "--reviewer", "ana",
                       db=store_url)  # type: ignore[arg-type]
    assert code == 0, err
    return store_url


def query(url: str, sql: str) -> list[dict]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(text(sql)).mappings()]
    finally:
        engine.dispose()


def test_ts_attempts_facets_attempts_without_json_functions(url: str) -> None:
    rows = query(url, "SELECT attempt_id, trace_id, api, retry_of, frames, status, "
                      "first_reason, decided_at_position, eligible, review_state "
                      "FROM ts_attempts ORDER BY started_position")
    for row in rows:
        row["eligible"] = bool(row["eligible"])
    t8_stop = rows[0]["decided_at_position"]
    assert rows == [
        {"attempt_id": "t8-old", "trace_id": "t8", "api": "bedrock-converse-stream",
         "retry_of": None, "frames": 4, "status": "stopped",
         "first_reason": "local_stop_before_release", "decided_at_position": t8_stop,
         "eligible": False, "review_state": "none"},
        {"attempt_id": "t8-new", "trace_id": "t8", "api": "bedrock-converse-stream",
         "retry_of": "t8-old", "frames": 6, "status": "released",
         "first_reason": "normal_native_ending", "decided_at_position": t8_stop + 11,
         "eligible": True, "review_state": "in_review"},
        {"attempt_id": "s1-error", "trace_id": "s1-error", "api": "openai-responses",
         "retry_of": None, "frames": 3, "status": "failed", "first_reason": "native_failure",
         "decided_at_position": rows[2]["decided_at_position"], "eligible": False,
         "review_state": "none"},
    ]
    stopped = query(url, "SELECT attempt_id FROM ts_attempts WHERE status = 'stopped'")
    assert stopped == [{"attempt_id": "t8-old"}]
    decisions = query(url, "SELECT attempt_id, status, reasons FROM ts_decisions "
                           "ORDER BY position")
    assert [(d["attempt_id"], d["status"], json.loads(d["reasons"])) for d in decisions] == [
        ("t8-old", "stopped", ["local_stop_before_release"]),
        ("t8-new", "released", ["normal_native_ending", "clean_drain", "semantic_accepted"]),
        ("s1-error", "failed", ["native_failure"])]
    assert json.loads(run("verify", "--json", db=url)[1])["missing"] == []  # type: ignore[arg-type]


def test_views_are_read_only(url: str) -> None:
    engine = create_engine(url)
    try:
        with pytest.raises(Exception), engine.begin() as conn:
            conn.execute(text("DELETE FROM ts_attempts"))
    finally:
        engine.dispose()


def test_a_rebuilt_table_without_its_triggers_fails_verify(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    assert run("replay", str(SEED / "t8.json"), db=db)[0] == 0
    assert json.loads(run("verify", "--json", db=db)[1])["ok"] is True
    # What `sqlite-utils transform ts_events` does: a new table, the rows copied, the old
    # table dropped (its triggers with it), the new one renamed.
    conn = sqlite3.connect(db)
    conn.executescript("""
        PRAGMA legacy_alter_table = ON;
        BEGIN;
        CREATE TABLE ts_events_new AS SELECT * FROM ts_events;
        DROP TABLE ts_events;
        ALTER TABLE ts_events_new RENAME TO ts_events;
        COMMIT;
    """)
    conn.execute("DELETE FROM ts_events WHERE position = (SELECT max(position) FROM ts_events)")
    conn.commit()
    conn.close()
    code, stdout, _ = run("verify", "--json", db=db)
    result = json.loads(stdout)
    assert code == 3 and result["ok"] is False
    assert result["missing"] == ["trigger ts_events_no_update on ts_events",
                                 "trigger ts_events_no_delete on ts_events"]
    assert result["first_broken_position"] is None
    assert result["reason"].startswith("the store is missing trigger ts_events_no_update on "
                                       "ts_events, trigger ts_events_no_delete on ts_events")
    code, _, stderr = run("verify", db=db)
    assert code == 3 and "ts_events_no_delete" in stderr and "schema_incomplete" in stderr


def test_a_dropped_view_is_named(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    assert run("replay", str(SEED / "t7.json"), db=db)[0] == 0
    conn = sqlite3.connect(db)
    conn.execute("DROP VIEW ts_decisions")
    conn.commit()
    conn.close()
    result = json.loads(run("verify", "--json", db=db)[1])
    assert (result["ok"], result["missing"]) == (False, ["view ts_decisions"])


def test_a_dropped_trigger_is_named_on_every_backend(url: str) -> None:
    name = "ts_events_no_delete" if url.startswith("sqlite") else "ts_events_no_change"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"DROP TRIGGER {name}" + ("" if url.startswith("sqlite")
                                                     else " ON ts_events")))
    engine.dispose()
    code, stdout, _ = run("verify", "--json", db=url)  # type: ignore[arg-type]
    assert code == 3
    assert json.loads(stdout)["missing"] == [f"trigger {name} on ts_events"]
