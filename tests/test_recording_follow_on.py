"""A recorder decides from the rows it wrote, read back only when another writer's lie
between (``AppendResult.trace_spans``; ``DecisionPlanner.head``).

Each append tells, per trace, the trace version it followed on from (taken under the
trace's lock).  A planner that has seen its trace up to exactly that version folds the
rows as written; otherwise it reads the gap first.  These tests pin both halves with
exact outcomes: a lone recorder reads nothing back, and a recorder whose trace another
writer appended to in between still records the decisions the log's projection gives.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tracestore import Recorder
from tracestore.events import ReleaseDecided
from tracestore.projections.release import decide_all
from tracestore.store.log import EventStore

from conftest import FIXTURES

CAPTURE = FIXTURES / "real" / "anthropic" / "text-basic.sse"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the reads of the log made outside any write transaction."""
    counted: Counter[str] = Counter()
    for name in ("read", "iter_events"):
        original = getattr(EventStore, name)

        def counting(self: Any, *args: Any, _name: str = name, _original: Any = original,
                     **kwargs: Any) -> Any:
            counted[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(EventStore, name, counting)
    return counted


def _decisions(store: EventStore, trace_id: str) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for stored in store.read(trace_id=trace_id):
        if isinstance(stored.event, ReleaseDecided):
            out.setdefault(stored.event.attempt_id, []).append(
                (stored.event.status, tuple(stored.event.reasons)))
    return out


def test_a_lone_recorder_reads_nothing_back_to_decide(tmp_path: Path,
                                                       reads: Counter[str]) -> None:
    data = CAPTURE.read_bytes()
    half = len(data) // 2
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        trace = rec.trace("t")
        for name in ("a", "b"):  # b is a second attempt of the same trace
            attempt = trace.attempt(name, api="anthropic-messages")
            attempt.feed(data[:half])
            attempt.feed(data[half:])
            attempt.drain()
        assert reads == Counter()
        recorded = _decisions(rec.store, "t")
        recomputed = {d.attempt_id: [(d.status, tuple(d.reasons))]
                      for d in decide_all(rec.store.read(trace_id="t"), "t")}
    assert recorded == recomputed
    assert sorted(recorded) == ["a", "b"]


def test_a_trace_joined_by_another_writer_is_read_up_to_its_rows_and_decided_right(
        tmp_path: Path, reads: Counter[str]) -> None:
    data = CAPTURE.read_bytes()
    half = len(data) // 2
    url = f"sqlite:///{tmp_path / 'r.db'}"
    with Recorder(url) as first, Recorder(url) as second:
        old = first.trace("t").attempt("old", api="anthropic-messages")
        old.feed(data[:half])
        assert reads == Counter()
        # Another writer retries it meanwhile: its start supersedes "old" (T7/T8).
        new = second.trace("t").attempt("new", api="anthropic-messages", retry_of="old")
        new.feed(data)
        new.drain()
        before = Counter(reads)
        old.feed(data[half:])  # follows "new"'s rows: the gap is read first
        old.drain()
        assert reads["iter_events"] > before["iter_events"]
        recorded = _decisions(first.store, "t")
        recomputed = {d.attempt_id: [(d.status, tuple(d.reasons))]
                      for d in decide_all(first.store.read(trace_id="t"), "t")}
    assert recorded == recomputed
    assert recorded == {"old": [("superseded", ("superseded_by_newer_attempt",))],
                        "new": [("held", ("no_semantic_rule",))]}


def test_an_attempt_id_started_twice_is_refused_without_a_read_before(
        tmp_path: Path, reads: Counter[str]) -> None:
    from tracestore.errors import InputError

    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        trace = rec.trace("t")
        trace.attempt("a", api="anthropic-messages")
        with pytest.raises(InputError) as raised:
            trace.attempt("a", api="anthropic-messages")
        assert raised.value.code == "attempt_exists"
        starts = [e for e in rec.store.read(stream="attempt:a")]
    assert [e.type for e in starts] == ["attempt.started"]
    assert reads["read"] == 1  # the one just above


def test_a_drain_whose_first_try_is_refused_still_records_its_decision_once(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drain's decision is written in its transaction; when the database refuses that
    try after the planner folded it (the store then tries again without the decision), the
    planner -- fed rows at positions that were never committed -- is dropped and made again
    from the log: the decision is recorded once, at the positions the log holds."""
    import sqlite3

    data = CAPTURE.read_bytes()
    refused: list[bool] = []
    original = EventStore._append_fresh_in

    def refusing_once(self: EventStore, conn: Any, groups: Any, *args: Any,
                      **outbox: Any) -> Any:
        out = original(self, conn, groups, *args, **outbox)
        then = args[4] if len(args) > 4 else None
        draining = any(e.type == "transport.drained" for _, batch, _, _ in groups
                       for e in batch)
        if draining and then is not None and then.fed and not refused:
            refused.append(True)
            raise sqlite3.IntegrityError("refused after the fold (the test's)")
        return out

    monkeypatch.setattr(EventStore, "_append_fresh_in", refusing_once)
    with Recorder(store_url) as rec:
        attempt = rec.trace("t").attempt("a", api="anthropic-messages")
        attempt.feed(data)
        attempt.drain()
        recorded = _decisions(rec.store, "t")
        recomputed = {d.attempt_id: [(d.status, tuple(d.reasons))]
                      for d in decide_all(rec.store.read(trace_id="t"), "t")}
        decided = [e.event for e in rec.store.read(stream="attempt:a")
                   if isinstance(e.event, ReleaseDecided)]
        drained = [e.position for e in rec.store.read(stream="attempt:a")
                   if e.type == "transport.drained"]
        assert rec.store.verify().ok
    assert refused == [True]
    assert recorded == recomputed and len(decided) == 1
    assert decided[0].decided_at_position == drained[0]


def test_a_drain_alone_on_its_trace_commits_its_decision_with_it(tmp_path: Path) -> None:
    data = CAPTURE.read_bytes()
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        attempt = rec.trace("t").attempt("a", api="anthropic-messages")
        attempt.feed(data)
        before = rec.store.head_position()
        attempt.drain()
        written = rec.store.read(after=before)
    assert [e.type for e in written][-2:] == ["transport.drained", "release.decided"]
    assert len({e.recorded_at for e in written}) == 1  # one append, one transaction
