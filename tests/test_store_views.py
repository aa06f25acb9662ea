"""The read-only views (ts_attempts, ts_decisions: migration 0003; ts_destinations and the
queue's review states: 0005) on SQLite and PostgreSQL, and ``verify`` naming missing
append-only triggers and views (issue 23)."""

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
         "eligible": False, "review_state": "unreviewed"},
        {"attempt_id": "t8-new", "trace_id": "t8", "api": "bedrock-converse-stream",
         "retry_of": "t8-old", "frames": 6, "status": "released",
         "first_reason": "normal_native_ending", "decided_at_position": t8_stop + 11,
         "eligible": True, "review_state": "in-review"},
        {"attempt_id": "s1-error", "trace_id": "s1-error", "api": "openai-responses",
         "retry_of": None, "frames": 3, "status": "failed", "first_reason": "native_failure",
         "decided_at_position": rows[2]["decided_at_position"], "eligible": False,
         "review_state": "unreviewed"},
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


T8_ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
PROGRESS = "Generating answer…"


def sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_ts_destinations_lists_every_write(store_url: str) -> None:
    if store_url == "sqlite://":
        pytest.skip("the CLI cannot share an in-memory database")
    code, _, err = run("replay", str(SEED / "t8-buggy-app.json"), db=store_url)  # type: ignore[arg-type]
    assert code == 0, err
    rows = query(store_url, "SELECT attempt_id, trace_id, destination, position, source, "
                            "sha256, text FROM ts_destinations ORDER BY position")
    leaked = T8_ANSWER + "It is closed Thursday."
    trace = "t8-buggy-app"
    assert rows == [
        {"attempt_id": "t8b-old", "trace_id": trace, "destination": "progress", "position": 3,
         "source": "application", "sha256": sha(PROGRESS), "text": PROGRESS},
        {"attempt_id": "t8b-new", "trace_id": trace, "destination": "progress", "position": 9,
         "source": "application", "sha256": sha(PROGRESS), "text": PROGRESS},
        {"attempt_id": "t8b-new", "trace_id": trace, "destination": "ui", "position": 20,
         "source": "application", "sha256": sha(leaked), "text": leaked},
    ] + [{"attempt_id": "t8b-new", "trace_id": trace, "destination": d, "position": p,
          "source": "application", "sha256": sha(T8_ANSWER), "text": T8_ANSWER}
         for d, p in (("history", 21), ("history", 22), ("export", 23), ("copy", 24))]
    assert json.loads(run("verify", "--json", db=store_url)[1])["missing"] == []  # type: ignore[arg-type]


def test_a_redacted_write_has_no_text_in_ts_destinations(tmp_path: Path) -> None:
    source, copy = tmp_path / "source.db", tmp_path / "copy.db"
    assert run("replay", str(SEED / "t8-buggy-app.json"), db=source)[0] == 0
    out = tmp_path / "redacted.jsonl"
    code, _, err = run("export", "--redact", "text", "--out", str(out), db=source)
    assert code == 0, err
    code, _, err = run("import", str(out), db=copy)
    assert code == 0, err
    rows = query(f"sqlite:///{copy}", "SELECT destination, sha256, text FROM ts_destinations "
                                      "ORDER BY position")
    assert [(r["destination"], r["text"]) for r in rows] == [
        ("progress", PROGRESS), ("progress", PROGRESS), ("ui", None), ("history", None),
        ("history", None), ("export", None), ("copy", None)]
    assert rows[3]["sha256"] == sha(T8_ANSWER)


def test_ts_attempts_review_state_is_the_queues(store_url: str) -> None:
    """The view and ``tracestore attempts`` name an attempt's review state alike."""
    if store_url == "sqlite://":
        pytest.skip("the CLI cannot share an in-memory database")
    db = store_url
    run("replay", str(SEED), db=db)  # type: ignore[arg-type]
    for args in (("s1-error", "--set", "evidence_gap=first look", "--reviewer", "ana"),
                 ("t7", "--approve", "--reviewer", "bo")):
        code, _, err = run("review", *args, db=db)  # type: ignore[arg-type]
        assert code == 0, err
    code, stdout, err = run("attempts", "--json", db=db)  # type: ignore[arg-type]
    assert code == 0, err
    queue = {a["attempt_id"]: a["review_state"] for a in json.loads(stdout)["attempts"]}
    view = {r["attempt_id"]: r["review_state"]
            for r in query(db, "SELECT attempt_id, review_state FROM ts_attempts")}
    assert len(view) > 20
    assert view == queue
    assert {view["s1-error"], view["t7"], view["t8-old"]} == {
        "in-review", "approved", "unreviewed"}


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
