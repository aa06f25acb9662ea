"""Issue 14, item 6, sized for CI: several processes record live attempts into one store
at once (SQLite file; PostgreSQL when TRACESTORE_TEST_PG_URL names a server), and
processes killed mid-stream leave their attempts pending with the log verifying.

The full-size run (8 processes x 1000 attempts, p99 latency) is bench/concurrent_recorders.py;
the 100-kill run is bench/kill_recorder.py.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import concurrent_recorders as conc  # noqa: E402
import kill_recorder as kill  # noqa: E402
from clihelp import restore_triggers  # noqa: E402
from conftest import PG_URL, _fresh_pg_url, _partitioned_pg_url  # noqa: E402


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", pytest.param(
    "postgresql-partitioned", marks=pytest.mark.slow)])
def test_four_processes_recording_live_attempts_lose_and_duplicate_nothing(
        tmp_path: Path, backend: str, capsys) -> None:
    if backend != "sqlite" and not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    url = (f"sqlite:///{tmp_path / 'c.db'}" if backend == "sqlite" else
           _partitioned_pg_url() if backend == "postgresql-partitioned" else _fresh_pg_url())
    assert conc.run(url, processes=4, attempts=12)
    out = capsys.readouterr().out
    assert "48 attempts, 192 appends" in out and "invariants: all hold" in out
    assert conc.check(url, 4, 12) == []
    assert conc.check(url, 4, 13) == ["4 attempts missing, 0 unexpected"]


def test_the_check_sees_a_lost_event(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert conc.run(url, processes=2, attempts=3)
    conn = sqlite3.connect(tmp_path / "c.db")
    conn.execute("DROP TRIGGER ts_events_no_delete")
    conn.execute("DELETE FROM ts_events WHERE position = (SELECT max(position) FROM ts_events)")
    restore_triggers(conn)
    conn.commit()
    conn.close()
    assert conc.check(url, 2, 3) == ["1 attempts without exactly "
                                     f"{conc.expected_events_per_attempt(url)} events"]


# A writer that records one whole attempt, then stops in the middle of the next one and
# says so: the test kills it exactly there, so what is in flight does not depend on timing.
MID_STREAM_WRITER = r"""
import sys, time
from tracestore import Recorder
url, capture, prefix = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
trace = Recorder(url).trace(prefix)
done = trace.attempt(f"{prefix}-0", api="openai-responses")
for start in range(0, len(capture), 200):
    done.feed(capture[start:start + 200])
done.drain()
live = trace.attempt(f"{prefix}-1", api="openai-responses")
for start in range(0, len(capture) // 2, 200):
    live.feed(capture[start:start + 200])
print("mid-stream", flush=True)
time.sleep(60)
"""


def test_writers_killed_mid_stream_leave_pending_attempts_and_a_verifying_log(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    from tracestore.store.log import EventStore

    EventStore(url).close()
    writers = [subprocess.Popen([sys.executable, "-c", MID_STREAM_WRITER, url,
                                 str(kill.CAPTURE), f"k{n}"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
               for n in range(3)]
    try:
        for proc in writers:
            assert proc.stdout is not None and proc.stdout.readline() == b"mid-stream\n"
        for proc in writers:
            os.kill(proc.pid, signal.SIGKILL)
    finally:
        for proc in writers:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    for n in range(3):
        problems, state = kill.check_round(url, f"k{n}")
        assert problems == []
        assert state.startswith("in-flight attempt pending after "), state
    with EventStore(url) as store:
        assert store.verify().ok
