"""The live recorder: same frames as ingest, small transactions, bounded memory, real-code T8."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.errors import InputError, NotFound, StoreError
from tracestore.events import TaskRule, CaptureSegment, FrameReceived, ReleaseDecided
from tracestore.ingest import plan_ingest
from tracestore.projections.release import decide_release
from tracestore.ingest.decisions import recorded_disagreements
from tracestore.store.log import EventStore

from conftest import FIXTURES
from long_stream import long_anthropic_stream

REAL = FIXTURES / "real"
PARIS = json.loads((FIXTURES / "tasks" / "paris.json").read_text())

CAPTURES = [
    ("anthropic/text-basic.sse", "anthropic-messages"),
    ("anthropic/web-search-citations.sse", "anthropic-messages"),
    ("openai-responses/text-gpt-4o.sse", "openai-responses"),
    ("openai-chat/groq-error-event-after-200.sse", "openai-chat"),
    ("bedrock/nova-micro-text.bin", "bedrock-converse-stream"),
    ("gemini/jsonarray-thinking-text.json", "gemini"),
    ("ollama/generate-granite-text.ndjson", "ollama"),
]


@pytest.fixture
def rec(tmp_path: Path) -> Recorder:
    with Recorder(f"sqlite:///{tmp_path / 'rec.db'}") as opened:
        yield opened


def record_file(rec: Recorder, name: str, *, api: str, chunk: int, trace: str = "t",
                attempt: str = "a", task: dict | None = None) -> bytes:
    data = (REAL / name).read_bytes()
    recording = rec.trace(trace, task=task).attempt(attempt, api=api)
    for start in range(0, len(data), chunk):
        recording.feed(data[start:start + chunk])
    recording.drain()
    return data


def frames_and_bytes(store: EventStore, attempt: str) -> tuple[list[tuple], bytes, str]:
    """Frames with absolute offsets, the stream re-assembled from segments, its hash.

    A frame follows the segment holding it (same transaction); equal segments share one
    blob, so the event order, not the hash, says which segment a frame sits in.
    """
    frames, segments = [], []
    for stored in store.read(attempt_id=attempt):
        event = stored.event
        if isinstance(event, CaptureSegment):
            segments.append(event)
        elif isinstance(event, FrameReceived):
            assert event.capture_sha256 == segments[-1].sha256
            frames.append((event.index, event.event_name, event.native, event.kinds,
                           segments[-1].offset + event.offset, event.length))
    raw = b"".join(store.get_blob(s.sha256) or b"" for s in segments)
    assert [s.offset for s in segments] == sorted(s.offset for s in segments)
    assert [s.final for s in segments].count(True) == 1 and segments[-1].final
    return frames, raw, segments[-1].stream_sha256 or ""


@pytest.mark.parametrize("name,api", CAPTURES)
@pytest.mark.parametrize("chunk", [5, 64 * 1024])
@pytest.mark.parametrize("auto", [False, True])
def test_live_recording_gives_the_frames_and_decision_of_ingest(
        rec: Recorder, name: str, api: str, chunk: int, auto: bool) -> None:
    data = record_file(rec, name, api="auto" if auto else api, chunk=chunk, task=PARIS)
    plan = plan_ingest(data, filename=name.rsplit("/", 1)[1], attempt_id="a", trace_id="t",
                       task=TaskRule.model_validate(PARIS))
    expected = [(e.event.index, e.event.event_name, e.event.native, e.event.kinds,
                 e.event.offset, e.event.length)
                for e in plan.events if isinstance(e.event, FrameReceived)]
    frames, raw, stream_sha = frames_and_bytes(rec.store, "a")
    assert frames == expected
    assert raw == data and stream_sha == plan.sha256
    # The same decision as an ingest of the file into a store of its own.
    with EventStore("sqlite://") as other:
        other.append(plan.events, blob_data=[plan.blob])
        ingested = decide_release(other.read(), "a")
    recorded = decide_release(rec.store.read(trace_id="t"), "a")
    assert (recorded.status, recorded.reasons, recorded.answer) == (
        ingested.status, ingested.reasons, ingested.answer)
    assert rec.store.verify().ok


def test_a_final_decision_is_recorded_once_and_agrees_with_the_projection(
        rec: Recorder) -> None:
    record_file(rec, "openai-responses/text-gpt-4o.sse", api="openai-responses", chunk=512,
                task=PARIS)
    events = rec.store.read(trace_id="t")
    decided = [e for e in events if isinstance(e.event, ReleaseDecided)]
    assert len(decided) == 1
    recomputed = decide_release(events, "a")
    d = decided[0].event
    assert (d.status, d.reasons, d.decided_at_position, d.answer_sha256, d.rule_version) == (
        "released", ("normal_native_ending", "clean_drain", "semantic_accepted"),
        recomputed.decided_at_position, recomputed.answer_sha256, 1)
    assert d.policy_version == "seed003-v1"
    assert recorded_disagreements(events, "a", recomputed) == []
    assert recomputed.answer is not None and "Paris" in recomputed.answer


def test_feeding_after_stop_records_late_frames_and_the_decision_stays_stopped(
        rec: Recorder) -> None:
    data = (REAL / "anthropic/text-basic.sse").read_bytes()
    attempt = rec.trace("t", task={"answer_patterns": ["."]}).attempt("a", api="anthropic-messages")
    attempt.feed(data[:700])
    attempt.stop()
    attempt.feed(data[700:])
    assert attempt.drain() == "clean"
    decision = attempt.decision()
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
    assert "frames_after_decision" in decision.notes
    statuses = [e.event.status for e in rec.store.read(attempt_id="a")
                if isinstance(e.event, ReleaseDecided)]
    assert statuses == ["stopped"]


# -- bad input: typed errors, nothing written ------------------------------------------------

def count(rec: Recorder) -> int:
    return rec.store.head_position()


def test_bad_input_is_refused_with_a_code_and_writes_nothing(rec: Recorder) -> None:
    trace = rec.trace("t")
    attempt = trace.attempt("a", api="openai-responses")
    before = count(rec)
    anthropic = (REAL / "anthropic/text-basic.sse").read_bytes()
    with pytest.raises(InputError) as caught:
        attempt.feed(anthropic)
    assert caught.value.code == "api_mismatch"
    assert count(rec) == before
    with pytest.raises(InputError) as caught:
        attempt.destination("clipboard", "x")
    assert caught.value.code == "unknown_destination"
    with pytest.raises(NotFound) as missing:
        trace.attempt("b", api="openai-responses", retry_of="nope")
    # issue 20: unknown_attempt merged into attempt_not_found (kept as an alias)
    assert (missing.value.code, missing.value.aliases) == (
        "attempt_not_found", ("unknown_attempt", "not_found"))
    with pytest.raises(InputError) as caught:
        trace.attempt("a", api="openai-responses")
    assert caught.value.code == "attempt_exists"
    with pytest.raises(InputError) as caught:
        rec.trace("t2", task={"answer_patterns": "not a list"})
    assert caught.value.code == "invalid_task"
    with pytest.raises(InputError) as caught:
        rec.trace("t2", task={"answer_patterns": ["(a+)+$"]})
    assert caught.value.code in ("unsafe_pattern", "invalid_task")
    assert count(rec) == before

    good = trace.attempt("c", api="openai-responses")
    good.feed((REAL / "openai-responses/text-gpt-4o.sse").read_bytes())
    good.drain()
    after = count(rec)
    with pytest.raises(InputError) as caught:
        good.feed(b"data: {}\n\n")
    assert caught.value.code == "attempt_closed"
    with pytest.raises(InputError) as caught:
        good.drain("maybe")
    assert caught.value.code == "unknown_drain"
    assert count(rec) == after
    assert rec.store.verify().ok


def test_an_unreachable_database_is_a_store_error_at_open(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        Recorder(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    assert caught.value.exit_code == 3


def test_a_database_failing_mid_stream_raises_typed_errors_and_keeps_a_clean_prefix(
        rec: Recorder, monkeypatch) -> None:
    """The documented choice for the API: the application is told (a ``StoreError`` from
    the call that failed, ``recording_failed`` from every later one) and decides; the bytes
    it fed are its own and untouched; the log keeps the prefix recorded before."""
    data = (REAL / "openai-responses/text-gpt-4o.sse").read_bytes()
    attempt = rec.trace("t").attempt("a", api="openai-responses")
    attempt.feed(data[:1000])
    recorded = count(rec)

    def unreachable(*args, **kwargs):
        raise StoreError("cannot reach the database", code="database_unavailable")

    monkeypatch.setattr(rec.store, "append", unreachable)
    monkeypatch.setattr(rec.store, "append_fresh_groups", unreachable)  # the frames' own
    piece = data[1000:2000]
    with pytest.raises(StoreError) as failed:
        attempt.feed(piece)
    assert (failed.value.code, failed.value.exit_code) == ("database_unavailable", 3)
    assert piece == data[1000:2000]
    monkeypatch.undo()  # the database is back; this attempt still refuses, in every call
    for call in (lambda: attempt.feed(data[2000:]), attempt.stop, attempt.drain,
                 lambda: attempt.destination("ui", "x")):
        with pytest.raises(StoreError) as refused:
            call()
        assert refused.value.code == "recording_failed"
    assert count(rec) == recorded
    decision = attempt.decision()
    assert (decision.status, decision.decided_at_position) == ("pending", None)
    assert rec.store.verify().ok


# -- crash safety ------------------------------------------------------------------------------

_KILLED_WRITER = """
import sys, time
from tracestore import Recorder
data = open(sys.argv[2], "rb").read()
a = Recorder(sys.argv[1]).trace("t").attempt("a", api="openai-responses")
for start in range(0, len(data), 97):
    a.feed(data[start:start + 97])
    print(start, flush=True)
print("all fed", flush=True)
time.sleep(60)
"""


def test_a_process_killed_mid_stream_leaves_a_pending_prefix_that_verifies(
        tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    capture = REAL / "openai-responses/text-gpt-4o.sse"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, db, str(capture)],
                            stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(20):  # about a third of the capture
            assert proc.stdout is not None and proc.stdout.readline()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    with EventStore(db) as store:
        assert store.verify().ok
        events = store.read(trace_id="t")
        decision = decide_release(events, "a")
        assert decision.status == "pending" and decision.decided_at_position is None
        frames = [e for e in events if isinstance(e.event, FrameReceived)]
        assert 0 < len(frames) < 30  # a prefix: the stream has 32 frames
        assert [f.event.index for f in frames] == list(range(len(frames)))


# -- concurrency: T8 produced by real code --------------------------------------------------

def _t8_parts() -> tuple[list[bytes], list[bytes]]:
    old = (REAL / "anthropic/text-basic.sse").read_bytes()
    new = (REAL / "openai-responses/text-gpt-4o.sse").read_bytes()
    return [old[:700], old[700:]], [new[:2000], new[2000:]]


def _assert_t8(rec: Recorder, order: list[str]) -> None:
    events = rec.store.read(trace_id="t")
    fed = [e.event.attempt_id for e in events if isinstance(e.event, CaptureSegment)]
    assert fed == order
    old = decide_release(events, "old")
    new = decide_release(events, "new")
    assert (old.status, old.reasons) == ("stopped", ("local_stop_before_release",))
    assert new.status == "released" and new.answer is not None
    old_text = "".join(b.text for b in
                       __import__("tracestore.projections.attempt", fromlist=["x"])
                       .project_attempt(events, "old").blocks)
    assert old_text and old_text not in new.answer
    released = [e.event.attempt_id for e in events
                if isinstance(e.event, ReleaseDecided) and e.event.eligible]
    assert released == ["new"]


def test_t8_two_threads_interleave_in_global_order_as_fed(rec: Recorder) -> None:
    trace = rec.trace("t", task={"answer_patterns": ["paris"]})
    old_parts, new_parts = _t8_parts()
    turn = [threading.Event() for _ in range(5)]
    old = trace.attempt("old", api="anthropic-messages")

    def old_reader() -> None:
        old.feed(old_parts[0])        # 1: old delivers
        old.stop()
        turn[0].set()
        turn[1].wait(10)
        old.feed(old_parts[1])        # 3: old's late text after the retry started
        old.drain()
        turn[2].set()

    def new_reader() -> None:
        turn[0].wait(10)
        new = trace.attempt("new", api="openai-responses", retry_of="old")
        new.feed(new_parts[0])        # 2: the retry delivers
        turn[1].set()
        turn[2].wait(10)
        new.feed(new_parts[1])        # 4
        new.drain()

    threads = [threading.Thread(target=old_reader), threading.Thread(target=new_reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    _assert_t8(rec, ["old", "new", "old", "old", "new", "new"])


def test_t8_asyncio_tasks_interleave_in_global_order_as_fed(rec: Recorder) -> None:
    trace = rec.trace("t", task={"answer_patterns": ["paris"]})
    old_parts, new_parts = _t8_parts()

    async def main() -> None:
        old = trace.attempt("old", api="anthropic-messages")
        started = asyncio.Event()
        late = asyncio.Event()

        async def old_task() -> None:
            old.feed(old_parts[0])
            old.stop()
            started.set()
            await late.wait()
            old.feed(old_parts[1])
            old.drain()

        async def new_task() -> None:
            await started.wait()
            new = trace.attempt("new", api="openai-responses", retry_of="old")
            new.feed(new_parts[0])
            late.set()
            await asyncio.sleep(0.01)
            new.feed(new_parts[1])
            new.drain()

        await asyncio.wait_for(asyncio.gather(old_task(), new_task()), 30)

    asyncio.run(main())
    _assert_t8(rec, ["old", "new", "old", "old", "new", "new"])


# -- bounded memory ------------------------------------------------------------------------------

def test_memory_stays_bounded_while_a_long_stream_is_recorded(rec: Recorder) -> None:
    import tracemalloc

    total, chunk = 16 * 1024 * 1024, 256 * 1024
    attempt = rec.trace("big").attempt("a", api="anthropic-messages")
    pieces = long_anthropic_stream(total, chunk)
    tracemalloc.start()
    try:
        fed = 0
        for piece in pieces:
            if len(piece) != chunk:
                last = piece  # holds the terminal: judging then needs the answer text once
                break
            attempt.feed(piece)
            fed += len(piece)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fed >= total - chunk
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes while feeding {fed}"
    attempt.feed(last)
    attempt.drain()
    decision = attempt.decision()
    assert (decision.status, decision.reasons) == ("held", ("no_semantic_rule",))
    assert rec.store.verify().ok


def test_importing_tracestore_does_not_load_the_store() -> None:
    code = ("import sys, tracestore; assert 'sqlalchemy' not in sys.modules; "
            "from tracestore import Recorder; assert Recorder.__name__ == 'Recorder'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_trace_naming_an_unknown_profile_is_refused_and_nothing_is_written(
        rec: Recorder) -> None:
    with pytest.raises(InputError) as caught:
        rec.trace("t", profile="openai-chat-txt", task={"answer_patterns": ["."]})
    assert caught.value.code == "unknown_profile"
    assert rec.store.read() == []
    trace = rec.trace("t", profile="openai-chat-text-every-destination")
    assert trace.trace_id == "t" and len(rec.store.read()) == 1
