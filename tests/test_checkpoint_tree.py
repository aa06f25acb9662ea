"""Signed tree heads: one trace proved alone (``verify --trace T --checkpoint FILE``), the
tamper cases a tree head catches that the chains alone cannot, and old checkpoints."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from test_verify_reach import _keyed, _sql, _verify_json, run


def _trace_json(db: Path, trace: str, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run("verify", "--json", "--trace", trace, *extra, db=db)
    return code, json.loads(out)


def test_one_trace_is_proved_in_the_signed_tree_without_reading_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.store import merkle
    from tracestore.store.log import EventStore

    db, key, head = _keyed(tmp_path)
    statements: list[tuple[str, tuple[Any, ...]]] = []
    original = EventStore.fetch_driver

    def recording(self: EventStore, sql: str, params: Any = (), **kw: Any) -> Any:
        statements.append((sql, tuple(params)))
        return original(self, sql, params, **kw)

    monkeypatch.setattr(EventStore, "fetch_driver", recording)
    code, result = _trace_json(db, "t1", "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["count"], result["checkpoint_position"]) == \
        (0, True, 11, 21)
    proof = result["inclusion"]
    assert (proof["index"], proof["tree_size"], proof["leaf"]["version"]) == (1, 2, 11)
    # the proof is the other trace's leaf hash, and it reaches the signed root
    leaves = [json.loads(line) for line in (tmp_path / "head.json.leaves").read_text()
              .splitlines()]
    s1 = merkle.leaf_hash(merkle.trace_leaf("s1", leaves[0]["version"], leaves[0]["hash"]))
    assert proof["proof"] == [s1.hex()]
    assert proof["root"] == json.loads(head.read_text())["root"]
    event_reads = [(sql, params) for sql, params in statements if "ts_events" in sql]
    assert event_reads and all("trace_id = ?" in sql and params[0] == "t1"
                               for sql, params in event_reads)


def test_a_truncated_trace_fails_its_own_proof(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    _sql(db, "DELETE FROM ts_events WHERE position = 21")
    code, result = _trace_json(db, "t1")
    assert (code, result["ok"], result["count"]) == (0, True, 10)  # alone: a valid chain
    code, result = _trace_json(db, "t1", "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, 21)
    assert result["reason"] == ("trace 't1' was signed at version 11 and now holds version "
                                "10 by position 21 (truncated or rewritten)")
    code, result = _trace_json(db, "s1", "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"]) == (0, True)  # the other trace is untouched


def test_an_edited_leaves_file_proves_nothing(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    leaves_file = tmp_path / "head.json.leaves"
    leaves = [json.loads(line) for line in leaves_file.read_text().splitlines()]
    leaves[1]["version"] = 10  # claim t1 was signed shorter than it was
    leaves_file.write_text("".join(json.dumps(leaf) + "\n" for leaf in leaves))
    code, result = _trace_json(db, "t1", "--checkpoint", str(head), "--key", str(key))
    assert (code, result["ok"]) == (3, False)
    assert result["reason"] == ("the leaves file does not prove trace 't1' is in the signed "
                                "tree (it was edited, or belongs to another checkpoint)")
    leaves_file.unlink()
    code, out, err = run("verify", "--trace", "t1", "--checkpoint", str(head), "--key",
                         str(key), db=db)
    assert code == 2 and "file_not_found" in err and "head.json.leaves is missing" in err


def test_rows_moved_within_a_trace_break_its_chain(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER ts_events_no_update")
    conn.execute("UPDATE ts_events SET position = -position WHERE position IN (13, 14)")
    conn.execute("UPDATE ts_events SET position = 27 WHERE position = -13")
    conn.execute("UPDATE ts_events SET position = 13 WHERE position = -14")
    conn.execute("UPDATE ts_events SET position = 14 WHERE position = 27")
    conn.commit()
    conn.close()
    code, result = _verify_json(db)
    assert (code, result["ok"], result["first_broken_position"]) == (3, False, 13)
    assert result["reason"] == ("trace 't1' is missing version 3 (the next stored is version "
                                "4, at position 13)")


def test_a_checkpoint_of_the_first_format_still_verifies(tmp_path: Path) -> None:
    from tracestore.review.escape import json_text
    from tracestore.store import checkpoint as ck

    db, key, _ = _keyed(tmp_path)
    code, result = _verify_json(db)
    old = tmp_path / "old.json"
    signed = ck.sign(21, result["head_hash"], "2026-01-01T00:00:00.000000+00:00", key)
    old.write_text(json_text(signed.to_dict()) + "\n")
    assert json.loads(old.read_text())["format"] == "tracestore-checkpoint-1"
    code, result = _verify_json(db, "--checkpoint", str(old), "--key", str(key))
    assert (code, result["ok"], result["checkpoint_position"]) == (0, True, 21)
    code, out, err = run("verify", "--trace", "t1", "--checkpoint", str(old), "--key",
                         str(key), db=db)
    assert code == 2 and "invalid_checkpoint" in err


def test_bad_inputs_of_a_one_trace_proof_are_typed_and_write_nothing(tmp_path: Path) -> None:
    db, key, head = _keyed(tmp_path)
    before = db.read_bytes()
    code, out, err = run("verify", "--trace", "nope", db=db)
    assert (code, out) == (4, "")
    assert err.startswith("error[trace_not_found]: trace 'nope' has no events in this store")
    (tmp_path / "head.json.leaves").write_text("garbage\n")
    code, out, err = run("verify", "--trace", "t1", "--checkpoint", str(head), "--key",
                         str(key), db=db)
    assert (code, out) == (2, "")
    assert err.startswith("error[invalid_checkpoint]: ") and "line 1 is not a checkpoint leaf" in err
    signed = json.loads(head.read_text())
    signed["tree_size"] = -1
    head.write_text(json.dumps(signed))
    code, out, err = run("verify", "--checkpoint", str(head), "--key", str(key), db=db)
    assert (code, out) == (2, "")
    assert err.startswith("error[invalid_checkpoint]: ")
    assert db.read_bytes() == before


def test_checkpoint_says_what_it_signed_and_where_the_leaves_are(tmp_path: Path) -> None:
    import re

    db, key, _ = _keyed(tmp_path)
    out_file = tmp_path / "again.json"
    code, out, err = run("checkpoint", "--key", str(key), "--out", str(out_file), db=db)
    assert code == 0, err
    text = " ".join(out.split())  # however the terminal folded it
    assert re.fullmatch(r"signed tree head at position 21 \(2 traces, root [0-9a-f]{16}…\) "
                        r"with key [0-9a-f]{16}: \S*again\.json \(its leaves: "
                        r"\S*again\.json\.leaves\)", text), text
