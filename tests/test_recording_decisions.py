"""Release decisions are planned outside the write transaction and appended once.

The defect these tests pin: the recorder re-read and re-judged the whole trace inside the
write transaction, so the database's write lock was held longer as a trace grew; with 125
attempts per trace and 8 writer processes, SQLite writers failed with "database is
locked".  The tests count what is read *inside* write transactions (deterministic, no
timing): it must not grow with the trace.  ``bench/concurrent_recorders.py
--attempts-per-trace 125`` is the full-size run (figures in docs/store.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.ingest.pipeline import append_plan
from tracestore.events import ReleaseDecided, SemanticJudged, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections.release import decide_all
from tracestore.ingest.decisions import (DecisionPlanner, catch_up, record_decisions,
                                            recorded_disagreements)
from tracestore.ingest.evidence import revise_task
from tracestore.store.log import EventStore

from conftest import FIXTURES, PG_URL, _fresh_pg_url

CAPTURE = FIXTURES / "real" / "anthropic" / "text-basic.sse"
PARIS = json.loads((FIXTURES / "tasks" / "paris.json").read_text())

# Counts the rows a builder reads inside each write transaction (``append_with``) and
# keeps the largest count; imported by the writer processes below and by this module.
COUNT_READS_IN_WRITES = r"""
from tracestore.store.log import EventStore

MOST_ROWS_READ_WHILE_WRITING = [0]
_append_with = EventStore.append_with

def _counting_append_with(self, build, **kwargs):
    rows = [0]

    def counted(view):
        read = view.read

        def counting_read(**filters):
            got = read(**filters)
            rows[0] += len(got)
            return got

        view.read = counting_read
        return build(view)

    try:
        return _append_with(self, counted, **kwargs)
    finally:
        MOST_ROWS_READ_WHILE_WRITING[0] = max(MOST_ROWS_READ_WHILE_WRITING[0], rows[0])

EventStore.append_with = _counting_append_with
"""

# One writer process: opens the shared trace and records ATTEMPTS live attempts of a real
# capture into it (fed in three pieces, then drained), then prints what it read while
# holding the write lock.
WRITER = COUNT_READS_IN_WRITES + r"""
import sys
from tracestore import Recorder

url, capture, name, attempts = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3], int(sys.argv[4])
third = len(capture) // 3
with Recorder(url) as recorder:
    trace = recorder.trace("shared")
    for index in range(attempts):
        attempt = trace.attempt(f"{name}-{index}", api="anthropic-messages")
        for piece in (capture[:third], capture[third:2 * third], capture[2 * third:]):
            attempt.feed(piece)
        attempt.drain()
print(MOST_ROWS_READ_WHILE_WRITING[0])
"""


def _install_counter() -> list[int]:
    namespace: dict = {}
    exec(COUNT_READS_IN_WRITES, namespace)  # noqa: S102 - the counter above, in this process
    return namespace["MOST_ROWS_READ_WHILE_WRITING"]


def _restore(store_cls: type, original) -> None:
    store_cls.append_with = original


def test_a_long_trace_is_never_read_while_the_write_lock_is_held(tmp_path: Path) -> None:
    original = EventStore.append_with
    most = _install_counter()
    try:
        with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
            trace = rec.trace("long", task=PARIS)
            data = CAPTURE.read_bytes()
            for index in range(40):
                attempt = trace.attempt(f"a{index}", api="anthropic-messages")
                attempt.feed(data[:500])
                attempt.feed(data[500:])
                attempt.drain()
            events = rec.store.read(trace_id="long")
    finally:
        _restore(EventStore, original)
    # Opening the (new) trace looks for its opening event and finds none; nothing else is
    # read while the lock is held — before the fix each decision re-read the whole trace.
    assert most == [0]
    decided = Counter(e.event.attempt_id for e in events if isinstance(e.event, ReleaseDecided))
    assert decided == Counter({f"a{i}": 1 for i in range(40)})
    for decision in decide_all(events, "long"):  # the capture does not name Paris
        assert (decision.status, decision.reasons) == ("rejected", ("semantic_rejected",))
        assert recorded_disagreements(events, decision.attempt_id, decision) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_writer_processes_sharing_a_trace_of_many_attempts_record_each_decision_once(
        tmp_path: Path, backend: str) -> None:
    if backend == "postgresql" and not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    url = f"sqlite:///{tmp_path / 'w.db'}" if backend == "sqlite" else _fresh_pg_url()
    EventStore(url).close()
    writers, attempts = 3, 20
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(CAPTURE), f"w{n}",
                               str(attempts)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for n in range(writers)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * writers, [o[1][-800:] for o in outputs]
    # Each writer read at most the trace's opening event while holding the write lock
    # (0 rows for whichever opened the trace first), however long the trace grew.
    most = sorted(int(out) for out, _ in outputs)
    assert most[1:] == [1] * (writers - 1) and most[0] in (0, 1)
    with EventStore(url) as store:
        events = store.read(trace_id="shared")
        assert store.verify().ok
    # rising positions (PostgreSQL leaves a refused append's reserved ones unused)
    positions = [e.position for e in events]
    assert positions == sorted(set(positions))
    if backend == "sqlite":
        assert positions == list(range(1, len(events) + 1))
    names = {f"w{n}-{i}" for n in range(writers) for i in range(attempts)}
    decided = Counter(e.event.attempt_id for e in events if isinstance(e.event, ReleaseDecided))
    assert decided == Counter({name: 1 for name in names})  # none lost, none twice
    per_attempt = Counter(e.event.attempt_id for e in events if e.stream != "trace:shared")
    assert set(per_attempt.values()) == {per_attempt["w0-0"]}  # every attempt complete
    for decision in decide_all(events, "shared"):
        assert recorded_disagreements(events, decision.attempt_id, decision) == []


def _ingested_without_decisions(store: EventStore) -> None:
    plan = plan_ingest(CAPTURE.read_bytes(), filename="text-basic.sse", attempt_id="a",
                       trace_id="t", task=TaskRule.model_validate(PARIS))
    append_plan(store, plan, decide=False)


def test_two_writers_planning_the_same_decision_append_it_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    with EventStore(url) as one, EventStore(url) as two:
        _ingested_without_decisions(one)
        first, second = DecisionPlanner("t"), DecisionPlanner("t")
        catch_up(one, first)
        catch_up(two, second)
        planned = first.missing(), second.missing()
        assert [e.event.type for e in planned[0]] == ["semantic.judged", "release.decided"]
        assert [e.id for e in planned[0]] == [e.id for e in planned[1]]
        appended = one.append(planned[0]), two.append(planned[1])
        assert (len(appended[0].positions), len(appended[1].skipped_ids)) == (2, 2)
        assert appended[1].positions == ()
        assert record_decisions(two, "t") == []  # already recorded: nothing more
        kinds = Counter(e.type for e in one.read(trace_id="t"))
    assert (kinds["semantic.judged"], kinds["release.decided"]) == (1, 1)


class RevisedJustBeforeAppend:
    """A store whose first append is preceded by another writer's ``tracestore task``."""

    def __init__(self, store: EventStore, rule: TaskRule) -> None:
        self.store, self.rule, self.conflicts = store, rule, 0

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    def append(self, events, **kwargs):
        if self.conflicts == 0:
            self.conflicts += 1
            revise_task(self.store, "t", self.rule, by="someone else")
        return self.store.append(events, **kwargs)


def test_a_rule_revised_while_decisions_are_planned_makes_the_plan_again(
        tmp_path: Path) -> None:
    stricter = TaskRule(description="must name Lyon", answer_patterns=[r"\bLyon\b"])
    with EventStore(f"sqlite:///{tmp_path / 'r.db'}") as store:
        _ingested_without_decisions(store)
        racing = RevisedJustBeforeAppend(store, stricter)
        positions = record_decisions(racing, "t")
        events = store.read(trace_id="t")
    assert racing.conflicts == 1
    recorded = [e for e in events if e.position in positions]
    # Planned under version 1, refused (the trace stream moved), planned again under 2.
    assert [(e.type, e.event.rule_version if isinstance(e.event, ReleaseDecided) else
             e.event.verdict) for e in recorded] == [
        ("semantic.judged", "rejected"), ("release.decided", 2)]
    assert not any(isinstance(e.event, ReleaseDecided) and e.event.rule_version == 1
                   for e in events)
    assert isinstance(recorded[0].event, SemanticJudged)
    assert recorded[0].event.rule == stricter
