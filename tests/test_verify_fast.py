"""Issue 13: ``verify``'s fast pass (plain tuples, inlined chain recipe) reports exactly what
the exact pass (every text column read as raw bytes, ``_check_row``) reports, for every kind
of damage, wherever it falls relative to the batches."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tracestore.store.log import EventStore
from tracestore.store.verify import Expected, VerifyResult, _rows, _Walk, verify_log

T1 = Path(__file__).resolve().parents[1] / "fixtures" / "projections" / "t1.json"


def _store(tmp_path: Path) -> Path:
    from tracestore.ingest import plan_ingest

    db = tmp_path / "v.db"
    data = T1.read_bytes()
    with EventStore(f"sqlite:///{db}") as store:
        for n in range(3):  # 30 events, 3 capture.stored events naming one blob
            store.append(plan_ingest(data, filename="t1.json", attempt_id=f"a{n}",
                                     trace_id=f"t{n}").events, blob_data=[data])
    return db


def _damage(db: Path, statement: str) -> None:
    conn = sqlite3.connect(db)
    for name in ("ts_events_no_update", "ts_events_no_delete", "ts_blobs_no_update",
                 "ts_blobs_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute(statement)
    conn.commit()
    conn.close()


def _exact_only(store: EventStore, expected: Expected | None) -> VerifyResult:
    """The reference: every row judged from its raw bytes, no fast pass."""
    with store._reader.connect() as conn:
        walk = _Walk(conn, expected)
        return walk.walk_exact(_rows(conn, 7)) or walk.finish()


def _fast(store: EventStore, batch_size: int, expected: Expected | None) -> VerifyResult:
    with store._reader.connect() as conn:
        return verify_log(conn, batch_size=batch_size, expected=expected)


DAMAGE = {
    "intact": None,
    "one changed byte": "UPDATE ts_events SET payload = replace(payload, 'a', 'b') "
                        "WHERE position = 12",
    "payload stored as blob": "UPDATE ts_events SET payload = CAST(payload AS BLOB) "
                              "WHERE position = 14",
    "payload stored as integer": "UPDATE ts_events SET payload = 7 WHERE position = 9",
    "payload not UTF-8": "UPDATE ts_events SET payload = CAST(X'7b22ff227d' AS TEXT) "
                         "WHERE position = 16",
    "stream not UTF-8": "UPDATE ts_events SET stream = CAST(X'61ff' AS TEXT) "
                        "WHERE position = 3",
    "id stored as blob, same bytes": "UPDATE ts_events SET id = CAST(id AS BLOB) "
                                     "WHERE position = 11",
    "deleted position": "DELETE FROM ts_events WHERE position = 15",
    "deleted last event of a trace": "DELETE FROM ts_events WHERE position = 20",
    "deleted tail": "DELETE FROM ts_events WHERE position > 25",
    "changed hash": "UPDATE ts_events SET hash = replace(hash, substr(hash, 1, 1), 'x') "
                    "WHERE position = 30",
    "changed capture": "UPDATE ts_blobs SET data = X'5b5d'",
}

HASH = "hash does not match the event's content and its predecessor"
#: What the exact pass finds, unanchored: (ok, events verified, first broken, reason).
FOUND = {
    "intact": (True, 30, None, None),
    "one changed byte": (False, 11, 12, HASH),
    "payload stored as blob": (False, 13, 14, "payload is stored as blob, not text"),
    "payload stored as integer": (False, 8, 9, HASH),  # text affinity: stored as '7'
    "payload not UTF-8": (False, 15, 16, "payload is not valid UTF-8"),
    "stream not UTF-8": (False, 2, 3, "stream is not valid UTF-8"),
    "id stored as blob, same bytes": (False, 10, 11, "id is stored as blob, not text"),
    "deleted position": (False, 14, 16, "trace 't1' is missing version 5 (the next stored "
                                        "is version 6, at position 16)"),
    # Each trace is its own chain: its last event removed leaves a shorter, valid chain.
    # Only a signed tree head catches it (tests/test_checkpoint_tree.py).
    "deleted last event of a trace": (True, 29, None, None),
    "deleted tail": (True, 25, None, None),
    "changed hash": (False, 29, 30, HASH),
    "changed capture": (False, 2, 3, "stored capture 5bd3ef0c7aba4383… was changed (its "
                                     "bytes no longer hash to it)"),
}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("batch_size", [1, 4, 10, 5000])
@pytest.mark.parametrize("anchored", [False, True])
def test_the_fast_pass_reports_what_the_exact_pass_reports(
        tmp_path: Path, damage: str, batch_size: int, anchored: bool) -> None:
    db = _store(tmp_path)
    with EventStore(f"sqlite:///{db}") as store:
        head = store.verify()
        signed = Expected(27, store.read(after=26, limit=1)[0].hash) if anchored else None
    assert (head.ok, head.count, head.captures_checked) == (True, 30, 1)
    if DAMAGE[damage] is not None:
        _damage(db, DAMAGE[damage])
    with EventStore(f"sqlite:///{db}", migrate_schema=False) as store:
        reference = _exact_only(store, signed)
        assert _fast(store, batch_size, signed) == reference
    found = (reference.ok, reference.count, reference.first_broken_position,
             reference.reason)
    if anchored and damage == "deleted tail":
        assert found == (False, 25, 27, "the event at the signed head's position 27 is gone "
                                        "(events were deleted)")
    else:
        assert found == FOUND[damage]
