"""Issue 14, item 2: ``verify`` covers what it claims -- captures, stored types, missing
stores, and (with a signed checkpoint) tail deletion, rewriting and forks."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from clihelp import restore_triggers, runner
from tracestore.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
S1 = FIXTURES / "projections" / "s1.json"
T1 = FIXTURES / "projections" / "t1.json"


def run(*args: str, db: Path | str | None = None, env: dict | None = None,
        ) -> tuple[int, str, str]:
    extra = ["--db", str(db)] if db is not None else []
    result = runner.invoke(app, [*args, *extra], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _filled(tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    assert run("ingest", str(S1), "--attempt", "s1", db=db)[0] == 0
    assert run("ingest", str(T1), "--attempt", "t1", db=db)[0] == 0
    return db


def _sql(db: Path, *statements: str, params: tuple = ()) -> None:
    conn = sqlite3.connect(db)
    for name in ("ts_events_no_update", "ts_events_no_delete", "ts_blobs_no_update",
                 "ts_blobs_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in statements:
        conn.execute(statement, params if "?" in statement else ())
    restore_triggers(conn)
    conn.commit()
    conn.close()


def _verify_json(db: Path, *extra: str) -> tuple[int, dict]:
    code, out, _ = run("verify", "--json", *extra, db=db)
    return code, json.loads(out)


def _capture_position(db: Path, attempt: str) -> tuple[int, str]:
    conn = sqlite3.connect(db)
    position, payload = conn.execute(
        "SELECT position, payload FROM ts_events WHERE type = 'capture.stored' AND stream = ?",
        (f"attempt:{attempt}",)).fetchone()
    conn.close()
    return position, json.loads(payload)["sha256"]


def test_a_deleted_capture_is_reported_at_the_event_that_references_it(tmp_path: Path) -> None:
    db = _filled(tmp_path)
    position, sha = _capture_position(db, "t1")
    _sql(db, f"DELETE FROM ts_blobs WHERE sha256 = '{sha}'")
    code, result = _verify_json(db)
    assert code == 3
    assert (result["ok"], result["first_broken_position"]) == (False, position)
    assert result["reason"] == f"stored capture {sha[:16]}… is missing from ts_blobs"


def test_a_changed_capture_is_reported_at_the_event_that_references_it(tmp_path: Path) -> None:
    db = _filled(tmp_path)
    position, sha = _capture_position(db, "s1")
    _sql(db, "UPDATE ts_blobs SET data = ? WHERE sha256 = ?", params=(b"[]", sha))
    code, result = _verify_json(db)
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, position)
    assert result["reason"] == (f"stored capture {sha[:16]}… was changed "
                                "(its bytes no longer hash to it)")


def test_an_intact_store_reports_the_captures_it_rehashed(tmp_path: Path) -> None:
    db = _filled(tmp_path)
    code, result = _verify_json(db)
    assert (code, result["ok"], result["count"], result["captures_checked"]) == (0, True, 21, 2)


@pytest.mark.parametrize("value, reason", [
    ("CAST('{\"a\":1}' AS BLOB)", "payload is stored as blob, not text"),
    ("CAST(X'7b22ff227d' AS TEXT)", "payload is not valid UTF-8"),
])
def test_a_payload_of_another_type_or_bad_utf8_breaks_the_chain_at_its_position(
        tmp_path: Path, value: str, reason: str) -> None:
    db = _filled(tmp_path)
    _sql(db, f"UPDATE ts_events SET payload = {value} WHERE position = 5")
    code, result = _verify_json(db)
    assert (code, result["ok"], result["first_broken_position"], result["count"]) == \
        (3, False, 5, 4)
    assert result["reason"] == reason
    code, out, err = run("verify", db=db)
    assert code == 3 and "chain broken at position 5" in err


@pytest.mark.parametrize("command", [
    ["verify"], ["events"], ["events", "--json"], ["attempts"], ["release", "a"], ["audit"],
    ["review", "a"]])
def test_read_only_commands_never_create_a_database(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo.db"
    code, out, err = run(*command, db=missing)
    assert code == 4
    assert "no_store" in err and "no tracestore store exists at" in err
    assert not missing.exists()
    assert sorted(os.listdir(tmp_path)) == []


def test_a_read_only_command_on_an_empty_file_creates_no_tables(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    code, out, err = run("events", db=empty)
    assert code == 4 and "no_store" in err
    assert empty.stat().st_size == 0


# -- checkpoints ------------------------------------------------------------------------

def _keyed(tmp_path: Path) -> tuple[Path, Path, Path]:
    db = _filled(tmp_path)
    key = tmp_path / "ck.pem"
    code, out, err = run("checkpoint", "--generate-key", str(key))
    assert code == 0, err
    assert key.stat().st_mode & 0o077 == 0  # the private key is readable by its owner only
    head = tmp_path / "head.json"
    code, out, err = run("checkpoint", "--key", str(key), "--out", str(head), db=db)
    assert code == 0, err
    return db, key, head


def test_checkpoint_signs_the_tree_head_and_time(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    signed = json.loads(head.read_text())
    assert sorted(signed) == ["format", "key_id", "position", "root", "signature", "time",
                              "tree_size"]
    assert (signed["format"], signed["position"], signed["tree_size"]) == \
        ("tracestore-checkpoint-2", 21, 2)
    code, result = _verify_json(db)
    assert (signed["root"], signed["tree_size"]) == (result["tree_root"], result["tree_size"])
    leaves = [json.loads(line) for line in (tmp_path / "head.json.leaves").read_text()
              .splitlines()]
    assert [(leaf["trace_id"], leaf["version"]) for leaf in leaves] == [("s1", 10), ("t1", 11)]
    code, result = _verify_json(db, "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["checkpoint_position"]) == (0, True, 21)
    # The public half alone verifies too.
    code, result = _verify_json(db, "--checkpoint", str(head), "--key", f"{key}.pub")
    assert (code, result["ok"]) == (0, True)


def test_checkpoint_key_from_the_environment(tmp_path: Path) -> None:
    db, key, _ = _keyed(tmp_path)
    env = {"TRACESTORE_CHECKPOINT_KEY": key.read_text()}
    code, out, err = run("checkpoint", db=db, env=env)
    assert code == 0, err
    head = tmp_path / "env-head.json"
    head.write_text(out)
    code, out, _ = run("verify", "--json", "--checkpoint", str(head), db=db, env=env)
    assert (code, json.loads(out)["ok"]) == (0, True)


TREE_BROKEN = ("the traces' heads as of position 21 do not hash to the signed tree head "
               "(2 traces signed, {found} found): a trace lost events, was removed or was "
               "rewritten")


def test_checkpoint_detects_tail_deletion(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    _sql(db, "DELETE FROM ts_events WHERE position > 15")
    assert _verify_json(db)[1]["ok"] is True  # without the checkpoint: undetectable
    code, result = _verify_json(db, "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, 21)
    assert result["reason"] == TREE_BROKEN.format(found=2)


def _rehash_from(db: Path, position: int) -> None:
    """Rewrite the payload at ``position`` and recompute every later hash of its trace (no
    key needed)."""
    from tracestore.store.chain import trace_chain_hash

    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER ts_events_no_update")
    (trace,) = conn.execute("SELECT trace_id FROM ts_events WHERE position = ?",
                            (position,)).fetchone()
    rows = conn.execute("SELECT position, id, stream, version, type, schema_version, "
                        "recorded_at, trace_id, payload, hash, trace_version FROM ts_events "
                        "WHERE trace_id = ? ORDER BY position", (trace,)).fetchall()
    prev = "0" * 64
    for row in rows:
        pos, eid, stream, version, typ, sv, rec, trace, payload, digest, tv = row
        if pos == position:
            payload = payload.replace("Wednesday", "Thursday")
        if pos >= position:
            digest = trace_chain_hash(prev, pos, tv, eid, stream, version, typ, sv, rec,
                                      trace, payload.encode())
            conn.execute("UPDATE ts_events SET payload = ?, hash = ? WHERE position = ?",
                         (payload, digest, pos))
        prev = digest
    restore_triggers(conn)
    conn.commit()
    conn.close()


def test_checkpoint_detects_a_rewrite_that_was_rehashed(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    _rehash_from(db, 5)
    assert _verify_json(db)[1]["ok"] is True  # without the checkpoint: undetectable
    code, result = _verify_json(db, "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, 21)
    assert result["reason"] == TREE_BROKEN.format(found=2)


def test_checkpoint_detects_a_dropped_trace(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    _sql(db, "DELETE FROM ts_events WHERE trace_id = 's1'")
    assert _verify_json(db)[1]["ok"] is True  # without the checkpoint: undetectable
    code, result = _verify_json(db, "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, 21)
    assert result["reason"] == TREE_BROKEN.format(found=1)


def test_checkpoint_detects_a_fork(tmp_path: Path) -> None:
    # Two stores share a prefix, then diverge: a checkpoint of one fails on the other.
    db, key, head = _keyed(tmp_path)
    other = tmp_path / "fork.db"
    assert run("ingest", str(S1), "--attempt", "s1", db=other)[0] == 0
    assert run("ingest", str(S1), "--attempt", "other", db=other)[0] == 0
    code, result = _verify_json(other, "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, 21)


def test_a_checkpoint_signed_by_another_key_or_edited_is_refused(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    other = tmp_path / "other.pem"
    run("checkpoint", "--generate-key", str(other))
    code, out, err = run("verify", "--checkpoint", str(head), "--key", str(other), db=db)
    assert code == 3 and "checkpoint_signature_invalid" in err
    signed = json.loads(head.read_text())
    signed["position"] = 10
    head.write_text(json.dumps(signed))
    code, out, err = run("verify", "--checkpoint", str(head), "--key", str(key), db=db)
    assert code == 3 and "checkpoint_signature_invalid" in err


def test_verify_with_a_checkpoint_needs_a_key(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    code, out, err = run("verify", "--checkpoint", str(head), db=db,
                         env={"TRACESTORE_CHECKPOINT_KEY": ""})
    assert code == 2 and "checkpoint_key_required" in err


def test_a_deleted_live_segment_is_reported_at_its_capture_segment_event(tmp_path: Path) -> None:
    from tracestore import Recorder

    db = tmp_path / "live.db"
    capture = (FIXTURES / "real" / "openai-responses" / "text-gpt-4o.sse").read_bytes()
    recorder = Recorder(f"sqlite:///{db}")
    attempt = recorder.trace("live").attempt("live-a", api="openai-responses")
    attempt.feed(capture[:1500])
    attempt.feed(capture[1500:])
    attempt.drain()
    recorder.close()
    code, result = _verify_json(db)
    assert (code, result["ok"], result["captures_checked"]) == (0, True, 3)
    conn = sqlite3.connect(db)
    position, payload = conn.execute(
        "SELECT position, payload FROM ts_events WHERE type = 'capture.segment' "
        "ORDER BY position LIMIT 1 OFFSET 1").fetchone()
    conn.close()
    sha = json.loads(payload)["sha256"]
    _sql(db, f"DELETE FROM ts_blobs WHERE sha256 = '{sha}'")
    code, result = _verify_json(db)
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, position)
