"""Issue 26 item 10: eight processes opening an empty PostgreSQL database at once all get a
migrated store (before: 0-4 of 8 failed with duplicate pg_type rows or "relation already
exists").  Needs the test server (``TRACESTORE_TEST_PG_URL``); skipped without it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import PG_URL, _fresh_pg_url

pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server "
                                                   "(set TRACESTORE_TEST_PG_URL)")

_OPEN = """
import sys, time
from tracestore.store.log import EventStore
deadline = float(sys.argv[2])
while time.time() < deadline:  # start together
    pass
with EventStore(sys.argv[1]) as store:
    print(store.head_position())
"""


def test_eight_processes_migrate_an_empty_database_at_once() -> None:
    import time

    url = _fresh_pg_url()
    start = str(time.time() + 1.5)
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN, url, start], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(8)]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [(code, out.strip()) for code, out, _ in results] == [(0, "0")] * 8, \
        [err[-400:] for _, _, err in results if err]
    from clihelp import runner
    from tracestore.cli import app

    done = runner.invoke(app, ["verify", "--json", "--db", url])
    assert done.exit_code == 0 and json.loads(done.stdout)["ok"] is True
