"""Issue 26 item 7: an archived store -- a file and folder nobody may write -- still verifies.

Root may write anything, so the read-only archive is simulated honestly: the commands run as
the unprivileged user ``nobody`` (``setpriv``) over a folder and database file owned by root
with modes 0555 / 0444.  Before the fix ``verify`` failed with ``database_unavailable``
("attempt to write a readonly database": it switched the journal to WAL and migrated).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clihelp import run

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"


SOURCE: list[Path] = []


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("unshare") is None:
        pytest.skip("needs root, setpriv and unshare to make a store nobody can write")
    db = tmp_path / "src.db"
    assert run("ingest", str(CAPTURE), "--attempt", "nova", db=db)[0] == 0
    SOURCE[:] = [db]
    folder = Path(tempfile.mkdtemp(prefix="ts-archive-", dir="/tmp"))
    shutil.copy(db, folder / "store.db")  # a checkpointed copy: no -wal beside it
    (folder / "store.db").chmod(0o444)
    folder.chmod(0o555)
    yield folder / "store.db"
    folder.chmod(0o755)
    shutil.rmtree(folder)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@functools.lru_cache(maxsize=1)
def _nobody_can_import() -> bool:
    """Whether ``nobody`` can read this checkout and its venv (a clone under a 0700 temp
    folder cannot: then the archive is a read-only bind mount instead, as root)."""
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import tracestore"],
                           capture_output=True, timeout=60, cwd="/", check=False)
    return probe.returncode == 0


def _as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a command where the archive cannot be written: as ``nobody`` over the 0555/0444
    folder, or -- when nobody cannot read the checkout -- as root in a private mount
    namespace where the archive's folder is a read-only bind mount (a read-only mount is
    the case issue 26 names; root cannot write there either)."""
    command = [sys.executable, "-m", "tracestore", *args]
    if _nobody_can_import():
        command = [*NOBODY, *command]
    else:
        folder = str(Path(args[args.index("--db") + 1]).parent)
        script = ('mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift '
                  '&& exec "$@"')
        command = ["unshare", "-m", "sh", "-c", script, "sh", folder, *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd="/",
                          env={**os.environ, "HOME": "/"})


def test_read_only_commands_work_on_an_archive_and_write_nothing(archive: Path) -> None:
    before = hashlib.sha256(archive.read_bytes()).hexdigest()
    done = _as_nobody("verify", "--json", "--db", str(archive))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    source = json.loads(run("verify", "--json", db=SOURCE[0])[1])
    assert result == source and result["ok"] is True and result["captures_checked"] == 1
    for command in (["events", "--json"], ["attempts", "--json"], ["release", "nova", "--json"],
                    ["audit", "--json"], ["export"], ["report", "nova", "--html", "-"]):
        done = _as_nobody(*command, "--db", str(archive))
        assert done.returncode == 0, (command, done.stderr)
    assert sorted(p.name for p in archive.parent.iterdir()) == ["store.db"]  # no -wal, -shm
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == before
    # A writing command is refused with a typed error, not a traceback.
    done = _as_nobody("ingest", str(CAPTURE), "--attempt", "x", "--db", str(archive))
    assert done.returncode == 3 and "database_unavailable" in done.stderr, done.stderr


def test_the_read_only_uri(tmp_path: Path) -> None:
    from tracestore.store.engine import read_only_uri

    assert read_only_uri(str(tmp_path / "a b.db")) == f"file:{tmp_path}/a%20b.db?mode=ro"


def test_a_missing_or_foreign_file_is_still_named(tmp_path: Path) -> None:
    code, _, err = run("verify", "--json", db=tmp_path / "nope.db")
    assert code == 4 and json.loads(err)["error"] == "no_store"
    foreign = tmp_path / "foreign.db"
    import sqlite3

    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    code, _, err = run("verify", "--json", db=foreign)
    assert code == 3 and json.loads(err)["error"] == "not_our_database"
    assert stat.S_ISREG(foreign.stat().st_mode)
