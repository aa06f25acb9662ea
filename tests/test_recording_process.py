"""The process writer (``RecordingTransport(writer="process")``, issue 25 item 1): the
application's process journals each attempt's facts and a child process records them.

What is checked is structure, never time: the child records what the writer thread
records; the application's process runs no decoder and no store code while recording;
``flush()`` returns only once the child committed what was journaled before it; the
application killed mid-stream leaves its in-flight attempt ``pending`` and the log
verifying; the child killed leaves the application's streams going and says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from tracestore import Recorder
from tracestore.errors import InputError, TracestoreError
from tracestore.recording.body import BodyAttempt, BodyRecording
from tracestore.recording.process import ProcessWriter, RemoteAttempt
from tracestore.store.log import EventStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import kill_recorder as kill  # noqa: E402
from capture_server import CaptureServer, route_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT / "fixtures" / "real" / "anthropic" / "text-basic.sse"
RESPONSES = ROOT / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
ATTEMPTS, PIECES = 6, 30


def _pieces(data: bytes, n: int) -> list[bytes]:
    size = -(-len(data) // n)
    return [data[i:i + size] for i in range(0, len(data), size)]


def _record(owner: BodyRecording, data: bytes) -> list[BodyAttempt]:
    """ATTEMPTS attempts of ``data`` interleaved chunk by chunk through ``owner``; the
    last one is stopped by the application half-way."""
    attempts = [owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
                for _ in range(ATTEMPTS)]
    pieces = _pieces(data, PIECES)
    for index, piece in enumerate(pieces):
        for attempt in attempts:
            if attempt is attempts[-1] and index >= len(pieces) // 2:
                continue
            attempt.received(piece)
    for attempt in attempts[:-1]:
        attempt.ended()
    attempts[-1].closed_early()
    owner.flush()
    return attempts


def _shape(url: str) -> list[list[tuple[str, Any]]]:
    """Per trace, its events as types and frame indices (ids and times differ)."""
    with EventStore(url) as store:
        events = store.read()
    traces: dict[str, list[tuple[str, Any]]] = {}
    for e in events:
        traces.setdefault(e.trace_id or "", []).append(
            (e.event.type, getattr(e.event, "index", getattr(e.event, "outcome", None))))
    return [traces[t] for t in sorted(traces)]


def _process_owner(trace: Any) -> BodyRecording:
    owner = BodyRecording(trace, ())
    owner.process = ProcessWriter(owner)
    return owner


def test_the_process_writer_records_what_the_writer_thread_records(tmp_path: Path) -> None:
    data = CAPTURE.read_bytes()
    shapes, statuses = [], []
    for mode in ("thread", "process"):
        url = f"sqlite:///{tmp_path / f'{mode}.db'}"
        with Recorder(url) as rec:
            count = iter(range(ATTEMPTS))

            def factory(rec: Recorder = rec, count: Any = count) -> Any:
                return rec.trace(f"q{next(count)}", task={"answer_patterns": ["."]})
            owner = BodyRecording(factory, ()) if mode == "thread" else _process_owner(factory)
            attempts = _record(owner, data)
            assert owner.failures == []
            assert [a.recorder.attempt_id for a in attempts] == \
                [a.handle.attempt_id for a in attempts]
            assert [a.attempt_id for a in owner.attempts] == \
                [a.handle.attempt_id for a in attempts]
            statuses.append([a.handle.decision().status for a in attempts])
            owner.stop_writer()
            with EventStore(url) as store:
                assert store.verify().ok
        shapes.append(_shape(url))
    assert shapes[0] == shapes[1]
    assert statuses[0] == statuses[1]
    assert statuses[1][-1] == "stopped"  # the application's Stop half-way, as recorded


def test_with_the_process_writer_the_application_runs_no_decoder_and_no_store_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.ingest import decisions
    from tracestore.recording.stream import LiveCapture
    from tracestore.store import log

    url = f"sqlite:///{tmp_path / 'r.db'}"
    with Recorder(url) as rec:
        count = iter(range(ATTEMPTS))
        owner = _process_owner(lambda: rec.trace(f"q{next(count)}"))
        calls: list[str] = []

        def spy(cls: Any, name: str) -> None:
            original = getattr(cls, name)

            def counted(*args: Any, **kwargs: Any) -> Any:
                calls.append(f"{cls.__name__}.{name}")
                return original(*args, **kwargs)
            monkeypatch.setattr(cls, name, counted)
        for cls, name in ((LiveCapture, "feed"), (LiveCapture, "close"),
                          (log.EventStore, "append_with"), (log.EventStore, "append_groups"),
                          (log.EventStore, "append_fresh_groups"),
                          (log.EventStore, "append"), (log.EventStore, "read"),
                          (decisions.DecisionPlanner, "missing")):
            spy(cls, name)
        _record(owner, CAPTURE.read_bytes())
        assert calls == []  # the app's process decoded nothing, wrote and read nothing
        assert owner.writer.batches == 0  # and its writer thread never ran
        monkeypatch.undo()
        with EventStore(url) as store:  # ... yet everything is in the store after flush
            frames = [e for e in store.read() if e.event.type == "frame.received"]
        assert len({e.attempt_id for e in frames}) == ATTEMPTS
        owner.stop_writer()


def test_the_application_threads_make_no_journal_write_only_the_journal_thread_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk's record is taken in memory; only the journal thread (and ``flush``, for its
    mark) calls ``os.write``: a write in the application's thread gives up the interpreter
    and, with many streams, waits behind every other thread to take it back."""
    import threading

    from tracestore.recording import process

    writes: list[str] = []
    real_write = os.write

    def spied(fd: int, data: Any) -> int:
        writes.append(threading.current_thread().name)
        return real_write(fd, data)

    url = f"sqlite:///{tmp_path / 'r.db'}"
    with Recorder(url) as rec:
        count = iter(range(ATTEMPTS))
        owner = _process_owner(lambda: rec.trace(f"q{next(count)}"))
        monkeypatch.setattr(process.os, "write", spied)
        attempts = [owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
                    for _ in range(ATTEMPTS)]
        in_app_thread = []
        for piece in _pieces(CAPTURE.read_bytes(), PIECES):
            for attempt in attempts:
                before = len(writes)
                attempt.received(piece)
                in_app_thread += [n for n in writes[before:] if n == "MainThread"]
        for attempt in attempts:
            attempt.ended()
        assert in_app_thread == []  # (the journal thread may write meanwhile: never here)
        owner.flush()
        monkeypatch.undo()
        assert writes and set(writes) <= {"tracestore-recorder-journal", "MainThread"}
        # every record reached the child: each attempt drained, judged (no task rule: held)
        assert [a.handle.decision().status for a in attempts] == ["held"] * ATTEMPTS
        owner.stop_writer()


def test_an_in_memory_store_is_refused_when_the_client_is_built(tmp_path: Path) -> None:
    from tracestore.recording.httpx_capture import RecordingTransport

    with Recorder("sqlite://") as rec:
        with pytest.raises(InputError) as caught:
            RecordingTransport(rec.trace("q"), writer="process")
        assert caught.value.code == "process_writer_unavailable"
        with pytest.raises(InputError):
            RecordingTransport(rec.trace("q"), writer="processes")
        # A factory's trace is known only per response: refused there, the stream unharmed.
        owner = _process_owner(lambda: rec.trace("q2"))
        attempt = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            attempt.received(b"data: {}\n\n")
            attempt.ended()
        assert [f.code for f in owner.failures] == ["process_writer_unavailable"]
        assert owner.process.proc is None  # no child was started for it


def test_turns_destinations_and_decisions_through_a_real_client(tmp_path: Path) -> None:
    import httpx2

    from tracestore.recording.httpx_capture import RecordingTransport
    from tracestore.recording.turn import attempt_of

    url = f"sqlite:///{tmp_path / 'r.db'}"
    with CaptureServer() as server, Recorder(url) as rec:
        server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        transport = RecordingTransport(writer="process")
        client = httpx2.Client(transport=transport, timeout=30)
        with rec.turn("turn-1", task={"answer_patterns": ["."]}) as turn:
            with client.stream("POST", f"{server.url}/v1/responses",
                               json={"model": "gpt-4o", "stream": True,
                                     "messages": ["secret prompt"]}) as response:
                body = b"".join(response.iter_raw())
                handle = attempt_of(response)
            handle.destination("history", "the answer")
        assert body == RESPONSES.read_bytes()
        transport.flush()
        assert transport.failures == []
        assert [h.attempt_id for h in turn.attempts] == [handle.attempt_id]
        assert isinstance(transport.attempts[0], RemoteAttempt)
        assert handle.decision().status == transport.attempts[0].decision().status
        events = rec.store.read(trace_id="turn-1")
        started = [e.event for e in events if e.event.type == "attempt.started"]
        assert started[0].request["model"] == "gpt-4o"  # settings read by the child ...
        assert "messages" not in started[0].request  # ... and never the prompt
        assert [e.event.destination for e in events
                if e.event.type.startswith("destination")] == ["history"]
        transport.close()
        assert transport.process.proc.returncode == 0


def test_the_application_killed_mid_stream_leaves_a_pending_prefix(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    EventStore(url).close()
    proc = subprocess.Popen([sys.executable, "-c", kill.PROCESS_WRITER, url,
                             str(kill.CAPTURE), "k0", "stop-mid"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        writer = int(proc.stdout.readline().split()[1])
        assert proc.stdout.readline() == b"mid-stream\n"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # The writer process records what was journaled, then exits on its own.
    assert kill.wait_for_exit(writer)
    problems, state = kill.check_round(url, "k0")
    assert problems == []
    assert state.startswith("in-flight attempt pending after "), state
    frames = int(state.split(" after ")[1].split()[0])
    assert frames > 0  # the journaled half of the stream is in the log
    with EventStore(url) as store:
        assert store.verify().ok


def test_the_writer_process_killed_leaves_the_stream_going_and_says_so(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    data = CAPTURE.read_bytes()
    with Recorder(url) as rec:
        owner = _process_owner(rec.trace("q"))
        first = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        for piece in _pieces(data, 10):
            first.received(piece)
        first.ended()
        owner.flush()
        second = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        second.received(data[:100])
        owner.flush()
        assert owner.process.proc is not None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            os.kill(owner.process.pid, signal.SIGKILL)
            owner.process.proc.wait(30)
            for piece in _pieces(data[100:], 10):  # the application's stream goes on
                second.received(piece)
            second.ended()
            owner.flush()  # returns: there is no child to wait for
            for _ in range(200):
                if owner.failures:
                    break
                time.sleep(0.01)
        codes = [f.code for f in owner.failures]
        assert codes == ["recorder_process_died"]
        assert all(isinstance(f, TracestoreError) for f in owner.failures)
        assert any("recorder_process_died" in str(w.message) or "exited" in str(w.message)
                   for w in caught)
        owner.stop_writer()
        with EventStore(url) as store:
            assert store.verify().ok  # nothing half-written
        assert first.handle.decision().status != "pending"
        assert second.handle.decision().status == "pending"  # its prefix, no made-up end


def test_the_async_twin_with_the_openai_client_records_what_ingest_records(
        tmp_path: Path) -> None:
    from test_recording_sdk import PARIS, assert_async_openai_recorded_as_ingested

    from tracestore.recording.httpx_capture import AsyncRecordingTransport

    with CaptureServer() as server, Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        transport = AsyncRecordingTransport(rec.trace("q", task=PARIS), writer="process")
        assert_async_openai_recorded_as_ingested(rec, server, transport)
        transport.process.stop()


def test_a_child_too_far_behind_refuses_new_attempts_never_a_running_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.recording import process

    monkeypatch.setattr(process, "MAX_BACKLOG_BYTES", 1)  # any unacknowledged byte is "behind"
    data = CAPTURE.read_bytes()
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        owner = _process_owner(rec.trace("q"))
        first = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        first.received(data[:100])  # opened with nothing behind
        second = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            second.received(data[:100])  # the child has not answered for the first: refused
            second.received(data[100:])
            second.ended()
        first.received(data[100:])  # the running attempt goes on to its end
        first.ended()
        owner.flush()  # the child's answer says how far it has recorded
        third = owner.track(BodyAttempt(owner, "anthropic-messages", "sse", {}))
        third.received(data)
        third.ended()
        owner.flush()
        assert [f.code for f in owner.failures] == ["recording_lagged"]
        assert [a.attempt_id for a in owner.attempts] == \
            [first.handle.attempt_id, third.handle.attempt_id]
        assert first.handle.decision().status == third.handle.decision().status != "pending"
        owner.stop_writer()
