"""A database locked past the driver's busy timeout loses nothing a recorder writes: the
append that failed wrote nothing and is tried again until the lock goes (within the
recorder's ``outage_s``); commands still fail at once."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.errors import StoreError
from tracestore.store import engine
from tracestore.store.log import EventStore
from tracestore.store.outage import retrying

# openai-responses/text-gpt-4o.sse: see fixtures/real/PROVENANCE.md
CAPTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "openai-responses"
           / "text-gpt-4o.sse").read_bytes()


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver gives up after 0.2 s instead of 30 s, so a 1.5 s lock outlasts it."""
    monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_MS", 200)


def _hold_lock(path: Path, seconds: float, held: threading.Event) -> threading.Thread:
    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def test_a_recorder_outlasts_a_lock_longer_than_the_busy_timeout(
        tmp_path: Path, short_busy_timeout: None) -> None:
    path = tmp_path / "app.db"
    with Recorder(f"sqlite:///{path}") as rec:
        trace = rec.trace("t", task={"answer_patterns": ["Paris"]})
        attempt = trace.attempt("a1", api="openai-responses")
        attempt.feed(CAPTURE[:1000])
        held = threading.Event()
        locker = _hold_lock(path, 1.5, held)
        assert held.wait(10)
        started = time.monotonic()
        attempt.feed(CAPTURE[1000:])  # waits the lock out instead of failing
        waited = time.monotonic() - started
        attempt.drain()
        locker.join()
        assert attempt.decision().status == "released"
    assert waited > 0.2  # it did meet the lock (structure, not speed: the lock was held)
    with EventStore(f"sqlite:///{path}") as store:
        assert store.verify().ok
        kinds = [e.type for e in store.read(attempt_id="a1")]
    assert kinds.count("transport.drained") == 1 and "release.decided" in kinds


def test_a_command_store_fails_at_once_and_writes_nothing(
        tmp_path: Path, short_busy_timeout: None) -> None:
    path = tmp_path / "cmd.db"
    with EventStore(f"sqlite:///{path}") as store:
        assert store.outage_s == 0
        head = store.head_position()
        held = threading.Event()
        locker = _hold_lock(path, 1.0, held)
        assert held.wait(10)
        from tracestore.events import NewEvent, TraceOpened

        with pytest.raises(StoreError) as refused:
            store.append([NewEvent("trace:x", TraceOpened(trace_id="x"), trace_id="x")])
        locker.join()
        assert refused.value.code == "database_unavailable"
        assert store.head_position() == head


def test_the_retry_gives_up_after_its_budget_and_only_for_outages() -> None:
    calls: list[float] = []
    waits: list[float] = []

    def busy() -> None:
        calls.append(time.monotonic())
        raise StoreError("database error during append: database is locked",
                         code="database_unavailable")

    with pytest.raises(StoreError):
        retrying(busy, budget=0.0, sleep=waits.append)
    assert len(calls) == 1 and waits == []

    def damaged() -> None:
        raise StoreError("damaged", code="store_damaged")

    with pytest.raises(StoreError) as other:
        retrying(damaged, budget=60.0, sleep=waits.append)
    assert other.value.code == "store_damaged" and waits == []
    answers = iter([StoreError("x", code="database_unavailable")] * 3 + [None])

    def flaky() -> str:
        answer = next(answers)
        if answer is not None:
            raise answer
        return "done"

    assert retrying(flaky, budget=60.0, sleep=waits.append) == "done"
    assert waits == [0.25, 0.5, 1.0]  # doubling from the first wait
