"""docs/how-to/postgresql.md runs as written against a real PostgreSQL server: the URL in
$TRACESTORE_DB, init, verify, and moving a SQLite store across with the same head hash."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PG_URL, _fresh_pg_url

REPO = Path(__file__).resolve().parents[1]
PAGE = (REPO / "docs" / "how-to" / "postgresql.md").read_text(encoding="utf-8")


def _blocks() -> list[list[str]]:
    return [[line.split("  #", 1)[0].strip() for line in block.strip().splitlines()]
            for block in re.findall(r"```bash\n(.*?)```", PAGE, re.S)]


def _run(line: str, cwd: Path, url: str, env: dict[str, str]) -> str:
    line = re.sub(r"postgresql\+psycopg://\S+", url, line)
    args = shlex.split(line)
    assert args[0] == "tracestore", line
    done = subprocess.run([sys.executable, "-m", "tracestore", *args[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (line, done.stderr)
    return done.stdout


@pytest.fixture
def server_url() -> str:
    if not PG_URL:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but TRACESTORE_TEST_PG_URL is not set (.ci/run starts one)")
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    return _fresh_pg_url()


def test_the_page_points_tracestore_at_the_server(tmp_path: Path, server_url: str) -> None:
    first = _blocks()[0]
    assert first[0] == "pip install 'tracestore[postgres]'"  # the driver: installed here
    export = first[1]
    assert export.startswith("export TRACESTORE_DB=postgresql+psycopg://")
    env = {**os.environ, "TRACESTORE_DB": server_url}
    for line in first[2:]:
        _run(line, tmp_path, server_url, env)
    assert _run("tracestore verify", tmp_path, server_url, env).startswith("ok 0 events")


def test_a_sqlite_store_moves_with_its_root(tmp_path: Path, server_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRACESTORE_DB"}
    subprocess.run([sys.executable, "-m", "tracestore", "replay",
                    str(REPO / "fixtures" / "seed003")], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=120)
    before = _run("tracestore verify", tmp_path, server_url, env).split("\n", 1)[0]
    move = _blocks()[1]
    outputs = [_run(line, tmp_path, server_url, env) for line in move]
    after = outputs[-1].split("\n", 1)[0]
    assert re.fullmatch(r"ok \d+ events in \d+ traces? \(root [0-9a-f]{16}\)", before)
    assert after == before  # the same events, positions, times and hashes
