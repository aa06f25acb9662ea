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
