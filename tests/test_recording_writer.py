"""The recorder's writer under concurrency: many attempts through ONE shared transport
(issue 25 item 1).  One batch of the writer carries every attempt's queued chunks in one
transaction, instead of one committed transaction per chunk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tracestore import Recorder
from tracestore.projections.release import decide_release
from tracestore.recording import writer
from tracestore.recording.body import BodyAttempt, BodyRecording
from tracestore.recording.writer import Chunk, group_chunks
from tracestore.store import reads

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "anthropic" / \
    "text-basic.sse"
ATTEMPTS, PIECES = 10, 40


def _pieces(data: bytes, n: int) -> list[bytes]:
    size = -(-len(data) // n)
    return [data[i:i + size] for i in range(0, len(data), size)]


def _transactions(monkeypatch: pytest.MonkeyPatch, store: Any) -> list[str]:
    """Every write transaction the store opens, by method (append calls append_with)."""
    seen: list[str] = []
    for name in ("append_with", "append_each", "append_groups", "append_fresh_groups"):
        original = getattr(store, name, None)
        if original is None:
            continue

        def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            seen.append(_name)
            return _original(*args, **kw)
        monkeypatch.setattr(store, name, spy)
    return seen


@pytest.fixture
def held_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer holds back until flush: everything queued is one batch, deterministically."""
    monkeypatch.setattr(writer, "QUIET_SECONDS", 60.0)
    monkeypatch.setattr(writer, "MAX_LAG_SECONDS", 60.0)


def test_ten_interleaved_attempts_share_the_writers_transactions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        held_writer: None) -> None:
    data = CAPTURE.read_bytes()
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        count = iter(range(ATTEMPTS))
        owner = BodyRecording(lambda: rec.trace(f"q{next(count)}"), ())
        attempts = [owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
                    for _ in range(ATTEMPTS)]
        seen = _transactions(monkeypatch, rec.store)
        read_back: list[str] = []
        load = reads._stored_from_row

        def spy(row: Any, *args: Any) -> Any:
            read_back.append(row[2])
            return load(row, *args)
        monkeypatch.setattr(reads, "_stored_from_row", spy)
        pieces = _pieces(data, PIECES)
        for piece in pieces:  # the streams interleave chunk by chunk in the one queue
            for attempt in attempts:
                attempt.received(piece)
        for attempt in attempts:
            attempt.ended()
        owner.flush()
        chunks = len(pieces) * ATTEMPTS
        assert owner.writer.batches == 1
        # Per attempt only its trace's opening (``rec.trace``, before the batch); the
        # batch's frames share one or two transactions and the decisions that became final
        # in it one more (each decision used to commit the batch so far, then itself: 4
        # transactions per attempt) -- never one per chunk.
        assert len(seen) <= ATTEMPTS + 4 < chunks
        assert seen.count("append_fresh_groups") <= 3
        assert "append_groups" not in seen  # the rows went in at once, never one by one
        # Deciding folds what the batch appended: none of an attempt's events is read back.
        assert not [s for s in read_back if s.startswith("attempt:")]
        monkeypatch.setattr(reads, "_stored_from_row", load)
        owner.stop_writer()
        assert owner.failures == []
        events = rec.store.read()
        assert rec.store.verify().ok
        for recorder in owner.attempts:
            mine = [e for e in events if e.event.__class__.__name__ != "TraceOpened"
                    and getattr(e.event, "attempt_id", None) == recorder.attempt_id]
            frames = [e for e in mine if e.type == "frame.received"]
            assert [f.event.index for f in frames] == list(range(len(frames))) and frames
            decided = [e.event for e in mine if e.type == "release.decided"]
            assert [d.status for d in decided] == [
                decide_release(events, recorder.attempt_id).status]
            assert mine[-1].type == "release.decided"


def test_grouping_keeps_each_attempts_order_and_every_barrier_in_place() -> None:
    class Att:
        def __init__(self, opened: bool) -> None:
            self.recorder = object() if opened else None

    a, b, retry = Att(True), Att(True), Att(False)
    ending = lambda: None  # noqa: E731 - an attempt's ending, as BodyAttempt queues it
    works = [Chunk(a, b"a1"), Chunk(b, b"b1"), Chunk(a, b"a2"), ending, Chunk(b, b"b2"),
             Chunk(retry, b"r1"), Chunk(a, b"a3"), Chunk(retry, b"r2")]
    out = group_chunks(works)
    shown = [(w.attempt, w.data) if isinstance(w, Chunk) else "end" for w in out]
    assert shown == [(a, b"a1a2"), (b, b"b1"), "end", (b, b"b2"),
                     (retry, b"r1r2"), (a, b"a3")]


def test_more_concurrent_traces_than_the_old_planner_bound_read_nothing_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        held_writer: None) -> None:
    # 80 traces streaming at once (a web server's load; the planners were kept for 64, so
    # each batch rebuilt the evicted ones by reading their traces back).
    n = 80
    assert n <= Recorder.PLANNERS_KEPT
    data = CAPTURE.read_bytes()
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        count = iter(range(n))
        owner = BodyRecording(lambda: rec.trace(f"q{next(count)}"), ())
        attempts = [owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
                    for _ in range(n)]
        read_back: list[str] = []
        load = reads._stored_from_row

        def spy(row: Any, *args: Any) -> Any:
            read_back.append(row[2])
            return load(row, *args)
        monkeypatch.setattr(reads, "_stored_from_row", spy)
        for piece in _pieces(data, 5):
            for attempt in attempts:
                attempt.received(piece)
        for attempt in attempts:
            attempt.ended()
        owner.flush()
        assert not [s for s in read_back if s.startswith("attempt:")]
        monkeypatch.setattr(reads, "_stored_from_row", load)
        owner.stop_writer()
        assert owner.failures == []
        events = rec.store.read()
        for recorder in owner.attempts:
            decided = [e.event.status for e in events if e.type == "release.decided"
                       and e.event.attempt_id == recorder.attempt_id]
            assert decided == [decide_release(events, recorder.attempt_id).status]


def test_a_conflict_on_the_shared_decision_append_records_each_trace_on_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        held_writer: None) -> None:
    from tracestore.errors import ExpectedVersionConflict

    data = CAPTURE.read_bytes()
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        count = iter(range(3))
        owner = BodyRecording(lambda: rec.trace(f"q{next(count)}"), ())
        attempts = [owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
                    for _ in range(3)]
        original, shared = rec.store.append, []

        def append(events: Any, **kw: Any) -> Any:  # the shared one (3 traces) conflicts once
            streams = set(kw.get("expected_versions") or ())
            if len(streams) > 1 and not shared:
                shared.append(streams)
                raise ExpectedVersionConflict("moved meanwhile")
            return original(events, **kw)
        monkeypatch.setattr(rec.store, "append", append)
        for piece in _pieces(data, 4):
            for attempt in attempts:
                attempt.received(piece)
        for attempt in attempts:
            attempt.ended()
        owner.flush()
        owner.stop_writer()
        assert len(shared) == 1 and len(shared[0]) == 3 and owner.failures == []
        events = rec.store.read()
        assert rec.store.verify().ok
        for recorder in owner.attempts:
            decided = [e.event.status for e in events if e.type == "release.decided"
                       and e.event.attempt_id == recorder.attempt_id]
            assert decided == [decide_release(events, recorder.attempt_id).status]
