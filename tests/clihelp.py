"""Small helpers shared by the CLI tests: run a command against a SQLite file, count rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from tracestore.cli import app

runner = CliRunner()


def run(*args: str, db: Path) -> tuple[int, str, str]:
    """Run ``tracestore ARGS --db DB``; return (exit code, stdout, stderr)."""
    result = runner.invoke(app, [*args, "--db", str(db)])
    return result.exit_code, result.stdout, result.stderr


def count_events(db: Path) -> int:
    """Events stored in the SQLite file ``db`` (0 when it or its table does not exist)."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM ts_events").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def restore_triggers(conn: sqlite3.Connection) -> None:
    """Re-create the append-only triggers a tampering test dropped, as a careful tamperer
    would: ``verify`` names missing triggers (issue 23), and these tests are about what the
    hash chain alone can and cannot see."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "ts_migration_0001", Path(__file__).resolve().parents[1] / "migrations" / "versions"
        / "0001_event_log.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                          "'trigger'")}
    for statement in module.SQLITE_TRIGGERS:
        if statement.split()[2] not in present:
            conn.execute(statement)
