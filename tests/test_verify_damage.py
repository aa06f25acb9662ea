"""``verify`` names a damaged row instead of failing on it: a capture stored as text, as a
number or as NULL, or whose size column disagrees with its bytes, is ``blob_damaged``; an
event whose payload is NULL or not UTF-8, or whose stream version is not an integer, is
``chain_broken``.  Each at the position of the event it concerns, with exit code 3 (as any
failed verify), in both the text and the ``--json`` reports.

Damage is planted as a tamperer with write access would: the append-only triggers are
dropped, the row changed (a NOT NULL constraint removed through the schema text where the
damage needs it), and the triggers put back, so the schema check has nothing to say.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from clihelp import restore_triggers, run

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"
CAPTURE_POSITION = 3  # trace.opened, attempt.started, capture.stored

#: A NOT NULL constraint removed from the schema text, for the damage that needs a NULL.
_NULLABLE = "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, '{0} NOT NULL', '{0}') WHERE name = '{1}'"  # noqa: E501

DAMAGE: dict[str, tuple[list[str], int, str, str]] = {
    "capture stored as TEXT": (
        ["UPDATE ts_blobs SET data = 'plain text'"],
        CAPTURE_POSITION, "blob_damaged", "is stored as text, not bytes"),
    "capture stored as TEXT that is not UTF-8": (
        ["UPDATE ts_blobs SET data = CAST(X'ff00fe' AS TEXT)"],
        CAPTURE_POSITION, "blob_damaged", "is stored as text, not bytes"),
    "capture stored as an integer": (
        ["UPDATE ts_blobs SET data = 5"],
        CAPTURE_POSITION, "blob_damaged", "is stored as integer, not bytes"),
    "capture NULL": (
        [_NULLABLE.format("data BLOB", "ts_blobs"), "UPDATE ts_blobs SET data = NULL"],
        CAPTURE_POSITION, "blob_damaged", "is stored as null, not bytes"),
    "capture size as text": (
        ["UPDATE ts_blobs SET size = 'big'"],
        CAPTURE_POSITION, "blob_damaged", "has a size stored as text, not an integer"),
    "capture size off by one": (
        ["UPDATE ts_blobs SET size = size + 1"],
        CAPTURE_POSITION, "blob_damaged", "holds 6616 bytes, not the 6617 its size column "
                                          "records"),
    "payload NULL": (
        [_NULLABLE.format("payload TEXT", "ts_events"),
         "UPDATE ts_events SET payload = NULL WHERE position = 5"],
        5, "chain_broken", "payload is stored as null, not text"),
    "payload not UTF-8": (
        ["UPDATE ts_events SET payload = CAST(X'7b22ff227d' AS TEXT) WHERE position = 5"],
        5, "chain_broken", "payload is not valid UTF-8"),
    "id stored as a blob of the same bytes": (
        ["UPDATE ts_events SET id = CAST(id AS BLOB) WHERE position = 5"],
        5, "chain_broken", "id is stored as blob, not text"),
    "recorded_at stored as a blob of the same bytes": (
        ["UPDATE ts_events SET recorded_at = CAST(recorded_at AS BLOB) WHERE position = 5"],
        5, "chain_broken", "recorded_at is stored as blob, not text"),
    "stream version as text": (
        ["UPDATE ts_events SET version = 'abc' WHERE position = 6"],
        6, "chain_broken", "version is stored as text, not an integer"),
    "stream version as a real": (
        ["UPDATE ts_events SET version = 4.5 WHERE position = 6"],
        6, "chain_broken", "version is stored as real, not an integer"),
    "schema version as a blob": (
        ["UPDATE ts_events SET schema_version = X'01' WHERE position = 6"],
        6, "chain_broken", "schema_version is stored as blob, not an integer"),
}


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("intact") / "s.db"
    assert run("ingest", str(CAPTURE), "--attempt", "nova", db=db)[0] == 0
    return db


def _damage(db: Path, statements: list[str]) -> None:
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER ts_events_no_update")
    conn.execute("DROP TRIGGER ts_blobs_no_update")
    conn.commit()
    for statement in statements:
        conn.executescript(statement)
        if "writable_schema" in statement:  # the new schema text is read on the next open
            conn.close()
            conn = sqlite3.connect(db)
    conn.commit()
    restore_triggers(conn)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_row_is_named_at_its_position(intact: Path, tmp_path: Path,
                                                name: str) -> None:
    statements, position, code, reason = DAMAGE[name]
    db = tmp_path / "damaged.db"
    shutil.copy(intact, db)
    _damage(db, statements)

    exit_code, stdout, stderr = run("verify", "--json", db=db)
    report = json.loads(stdout)
    assert (exit_code, report["ok"], report["code"], report["first_broken_position"],
            report["count"]) == (3, False, code, position, position - 1)
    assert reason in report["reason"], report["reason"]

    exit_code, stdout, stderr = run("verify", db=db)
    what = "capture damaged" if code == "blob_damaged" else "chain broken"
    assert (exit_code, stdout) == (3, "")
    assert stderr.startswith(f"error[{code}]: {what} at position {position}: "), stderr
    assert "internal error" not in stderr and reason in stderr


def test_the_intact_store_verifies_with_no_code(intact: Path) -> None:
    exit_code, stdout, _ = run("verify", "--json", db=intact)
    report = json.loads(stdout)
    assert (exit_code, report["ok"], report["code"], report["captures_checked"]) == \
        (0, True, None, 1)


def test_checkpoint_refuses_a_damaged_capture_under_its_code(intact: Path,
                                                               tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    shutil.copy(intact, db)
    _damage(db, ["UPDATE ts_blobs SET data = 'plain text'"])
    key = tmp_path / "k.pem"
    assert run("checkpoint", "--generate-key", str(key), db=db)[0] == 0
    exit_code, _, stderr = run("checkpoint", "--key", str(key), "--json", db=db)
    assert exit_code == 3 and json.loads(stderr)["error"] == "blob_damaged", stderr


@pytest.mark.skipif(not os.environ.get("TRACESTORE_TEST_PG_URL"),
                    reason="no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
@pytest.mark.parametrize("damage, reason", [
    ("ALTER TABLE ts_blobs ALTER COLUMN data DROP NOT NULL; UPDATE ts_blobs SET data = NULL",
     "is stored as null, not bytes"),
    ("UPDATE ts_blobs SET size = size + 1",
     "holds 6616 bytes, not the 6617 its size column records"),
])
def test_postgresql_blob_damage_is_named_too(tmp_path: Path, damage: str, reason: str) -> None:
    from sqlalchemy import create_engine, text

    from conftest import _fresh_pg_url

    url = _fresh_pg_url()
    assert run("ingest", str(CAPTURE), "--attempt", "nova", db=url)[0] == 0  # type: ignore[arg-type]
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE ts_blobs DISABLE TRIGGER USER"))
        for statement in damage.split("; "):
            conn.execute(text(statement))
        conn.execute(text("ALTER TABLE ts_blobs ENABLE TRIGGER USER"))
    engine.dispose()
    exit_code, stdout, _ = run("verify", "--json", db=url)  # type: ignore[arg-type]
    report = json.loads(stdout)
    assert (exit_code, report["code"], report["first_broken_position"]) == \
        (3, "blob_damaged", CAPTURE_POSITION)
    assert reason in report["reason"]
