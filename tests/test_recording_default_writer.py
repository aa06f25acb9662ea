"""The recording transports' default writer (``writer="auto"``): the process writer where
it can run — recording in the background into a store another process can open (a SQLite
file, PostgreSQL) on a platform that can start it — else the writer thread;
``$TRACESTORE_WRITER`` chooses instead.  A recording through the default gives the events
and decisions the writer thread gives for the same streams, and an attempt's
``decision()`` / ``destination()`` need no ``flush()`` under it, as under the thread.

The suite pins ``TRACESTORE_WRITER=thread`` (conftest); each test here sets the variable
it means, so ``auto`` is the default it checks."""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tracestore import Recorder
from tracestore.errors import InputError
from tracestore.events import CaptureSegment, FrameReceived
from tracestore.recording import process
from tracestore.recording.httpx_capture import (
    AsyncRecordingTransport, RecordingTransport, resolve_writer,
)
from tracestore.recording.process import ProcessWriter, RemoteAttempt
from tracestore.recording.turn import attempt_of

from capture_server import CaptureServer, route_for
from conftest import FIXTURES

RESPONSES = FIXTURES / "real" / "openai-responses" / "text-gpt-4o.sse"
PARIS = json.loads((FIXTURES / "tasks" / "paris.json").read_text())
HELD_AT = 1200  # the first attempt's body pauses here and the application stops reading


@pytest.fixture
def auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``$TRACESTORE_WRITER``: the default is the package's own."""
    monkeypatch.delenv("TRACESTORE_WRITER", raising=False)


def _writer_of(transport: Any) -> str:
    if transport.unsettled:
        return "unsettled"
    return "process" if isinstance(transport.process, ProcessWriter) else "thread"


# -- how auto resolves -----------------------------------------------------------------

def test_the_default_is_the_process_writer_for_a_sqlite_file(tmp_path: Path, auto: None) -> None:
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        for transport in (RecordingTransport(rec.trace("q")),
                          AsyncRecordingTransport(rec.trace("q"))):
            assert _writer_of(transport) == "process"
            assert transport.process.proc is None  # started on first use, not here
        assert resolve_writer(RecordingTransport(rec.trace("q"), writer="thread"),
                              "auto") == "process"


def test_the_default_is_the_thread_in_memory_and_in_the_foreground(tmp_path: Path,
                                                                    auto: None) -> None:
    with Recorder("sqlite://") as rec:
        assert _writer_of(RecordingTransport(rec.trace("q"))) == "thread"
        assert _writer_of(AsyncRecordingTransport(rec.trace("q"))) == "thread"
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        assert _writer_of(RecordingTransport(rec.trace("q"), background=False)) == "thread"


def test_the_default_is_the_thread_where_no_writer_process_can_start(
        tmp_path: Path, auto: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "can_start", lambda: False)
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        assert _writer_of(RecordingTransport(rec.trace("q"))) == "thread"
        assert _writer_of(RecordingTransport()) == "thread"


def test_the_default_is_the_process_writer_for_postgresql(auto: None) -> None:
    """Settled from the trace's store URL alone (no server is reached to build it)."""
    from types import SimpleNamespace

    store = SimpleNamespace(url="postgresql+psycopg://app:pw@db.internal:5432/traces")
    trace = SimpleNamespace(recorder=SimpleNamespace(store=store), trace_id="q")
    assert _writer_of(RecordingTransport(trace)) == "process"


def test_the_process_writer_starts_on_posix_not_from_a_frozen_app(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert process.can_start()  # the suite runs on Linux
    monkeypatch.setattr("sys.frozen", True, raising=False)
    assert not process.can_start()
    monkeypatch.undo()
    import os
    from types import SimpleNamespace

    monkeypatch.setattr(process, "os", SimpleNamespace(name="nt", access=os.access))
    assert not process.can_start()  # Windows


def test_the_pytest_plugin_keeps_the_thread_for_a_test_run_unless_told(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from tracestore.mock import pytest_plugin

    monkeypatch.delenv("TRACESTORE_WRITER", raising=False)
    pytest_plugin.pytest_configure(None)  # type: ignore[arg-type]
    assert os.environ["TRACESTORE_WRITER"] == "thread"
    pytest_plugin.pytest_unconfigure(None)  # type: ignore[arg-type]
    assert "TRACESTORE_WRITER" not in os.environ
    monkeypatch.setenv("TRACESTORE_WRITER", "auto")
    pytest_plugin.pytest_configure(None)  # type: ignore[arg-type]
    pytest_plugin.pytest_unconfigure(None)  # type: ignore[arg-type]
    assert os.environ["TRACESTORE_WRITER"] == "auto"


def test_a_sqlite_file_or_a_server_database_is_shareable_memory_is_not() -> None:
    assert process.shareable("sqlite:////tmp/app.db")
    assert process.shareable("sqlite:///app.db")
    assert process.shareable("postgresql+psycopg://user:pw@db.internal:5432/traces")
    assert not process.shareable("sqlite://")
    assert not process.shareable("sqlite:///:memory:")
    assert not process.shareable("sqlite:///file:shared?mode=memory&cache=shared&uri=true")


def _stream_one(client: Any, server: CaptureServer) -> Any:
    with client.stream("POST", f"{server.url}/v1/responses",
                       json={"model": "gpt-4o", "stream": True}) as response:
        assert b"".join(response.iter_raw()) == RESPONSES.read_bytes()
        return attempt_of(response)


@pytest.mark.parametrize("store", ["file", "memory"])
def test_turn_scopes_settle_the_default_by_the_first_responses_store(
        tmp_path: Path, auto: None, store: str) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}" if store == "file" else "sqlite://"
    with CaptureServer() as server, Recorder(url) as rec:
        server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        transport = RecordingTransport()
        assert _writer_of(transport) == "unsettled"  # no store known before a response
        client = httpx2.Client(transport=transport, timeout=30)
        with rec.turn("t", task=PARIS):
            handle = _stream_one(client, server)
        assert _writer_of(transport) == ("process" if store == "file" else "thread")
        assert handle.decision().status == "released"
        assert transport.failures == []
        transport.close()


@pytest.mark.parametrize("store", ["file", "memory"])
def test_a_trace_factory_settles_the_default_and_its_trace_is_opened_once(
        tmp_path: Path, auto: None, store: str) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}" if store == "file" else "sqlite://"
    with CaptureServer() as server, Recorder(url) as rec:
        server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        calls: list[int] = []

        def factory() -> Any:
            calls.append(1)
            return rec.trace(f"q{len(calls)}", task=PARIS)

        transport = RecordingTransport(factory)
        assert _writer_of(transport) == "unsettled"
        client = httpx2.Client(transport=transport, timeout=30)
        handles = [_stream_one(client, server) for _ in range(2)]
        assert _writer_of(transport) == ("process" if store == "file" else "thread")
        assert [h.decision().status for h in handles] == ["released", "released"]
        assert [h.trace_id for h in handles] == ["q1", "q2"] and len(calls) == 2
        assert [e.trace_id for e in rec.store.read() if e.type == "trace.opened"] == \
            ["q1", "q2"]
        assert transport.failures == []
        transport.close()


def test_a_trace_factory_that_raises_is_a_failure_never_the_applications(
        tmp_path: Path, auto: None) -> None:
    with CaptureServer() as server, Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        answers = iter([ValueError("no trace today"), "q"])

        def factory() -> Any:
            answer = next(answers)
            if isinstance(answer, Exception):
                raise answer
            return rec.trace(answer, task=PARIS)

        transport = RecordingTransport(factory)
        client = httpx2.Client(transport=transport, timeout=30)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with client.stream("POST", f"{server.url}/v1/responses",
                               json={"stream": True}) as response:
                assert b"".join(response.iter_raw()) == RESPONSES.read_bytes()
        assert [f.code for f in transport.failures] == ["recording_failed"]
        assert _writer_of(transport) == "unsettled"  # the next response settles it
        handle = _stream_one(client, server)
        assert _writer_of(transport) == "process"
        assert handle.decision().status == "released"
        transport.close()


# -- $TRACESTORE_WRITER ----------------------------------------------------------------

@pytest.mark.parametrize(("variable", "memory", "file"), [
    ("thread", "thread", "thread"),
    ("auto", "thread", "process"),
    (" Process ", "refused", "process"),  # the writer the variable names, as if passed
])
def test_the_variable_chooses_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          variable: str, memory: str, file: str) -> None:
    monkeypatch.setenv("TRACESTORE_WRITER", variable)
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        assert _writer_of(RecordingTransport(rec.trace("q"))) == file
        assert _writer_of(RecordingTransport(rec.trace("q"), writer="auto")) == file
    with Recorder("sqlite://") as rec:
        if memory == "refused":
            with pytest.raises(InputError) as caught:
                RecordingTransport(rec.trace("q"))
            assert caught.value.code == "process_writer_unavailable"
        else:
            assert _writer_of(RecordingTransport(rec.trace("q"))) == memory


def test_an_explicit_writer_is_never_overridden(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        monkeypatch.setenv("TRACESTORE_WRITER", "process")
        assert _writer_of(RecordingTransport(rec.trace("q"), writer="thread")) == "thread"
        monkeypatch.setenv("TRACESTORE_WRITER", "thread")
        assert _writer_of(RecordingTransport(rec.trace("q"), writer="process")) == "process"
        monkeypatch.setenv("TRACESTORE_WRITER", "bogus")  # not read: the argument decides
        assert _writer_of(RecordingTransport(rec.trace("q"), writer="thread")) == "thread"


def test_a_process_default_with_background_false_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACESTORE_WRITER", "process")
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        with pytest.raises(InputError) as caught:
            RecordingTransport(rec.trace("q"), background=False)
        assert caught.value.code == "invalid_input"
        assert "$TRACESTORE_WRITER=process" in caught.value.message


def test_an_unknown_writer_is_a_typed_error_naming_the_writers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        with pytest.raises(InputError) as caught:
            RecordingTransport(rec.trace("q"), writer="processes")
        assert caught.value.code == "invalid_input"
        assert caught.value.message == ("unknown writer 'processes'; expected auto, thread "
                                        "or process")
        monkeypatch.setenv("TRACESTORE_WRITER", "fork")
        for make in (RecordingTransport, AsyncRecordingTransport):
            with pytest.raises(InputError) as caught:
                make(rec.trace("q"))
            assert caught.value.code == "invalid_input"
            assert caught.value.message == ("$TRACESTORE_WRITER='fork' is not a writer; "
                                            "expected auto, thread or process")
            assert caught.value.context == {"variable": "TRACESTORE_WRITER"}


# -- the default records what the thread records ---------------------------------------

def _record_a_stop_and_a_retry(url: str, **writer: str) -> dict[str, Any]:
    """One turn through a shared client: the first response stopped by the application at
    byte HELD_AT, then a retry read to its end and written to the UI.  Every read goes
    through ``transport.attempts`` without ``flush()`` except the thread's, which needs it."""
    with CaptureServer() as server, Recorder(url) as rec:
        transport = RecordingTransport(**writer)
        client = httpx2.Client(transport=transport, timeout=30)
        held = route_for(RESPONSES, chunk=64, hold_at=HELD_AT)
        server.routes["/v1/responses"] = held
        with rec.turn("turn", task=PARIS) as turn:
            with client.stream("POST", f"{server.url}/v1/responses",
                               json={"model": "gpt-4o", "stream": True}) as response:
                got = b""
                for piece in response.iter_raw():
                    got += piece
                    if len(got) >= HELD_AT:
                        break  # the user's Stop
            held.release.set()
            assert got == RESPONSES.read_bytes()[:HELD_AT]
            server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
            with turn.retry():
                retry = _stream_one(client, server)
        if writer.get("writer") == "thread":
            transport.flush()  # the thread's attempts are listed once it has opened them
        attempts = list(transport.attempts)
        attempts[-1].destination("ui", "The capital of France is Paris.")
        decisions = [a.decision() for a in attempts]
        handles = [h.decision() for h in turn.attempts]
        kinds = [type(a) for a in attempts]
        writer_used = _writer_of(transport)
        retry_of = [a.retry_of for a in attempts]
        ids = [a.attempt_id for a in attempts]
        events = rec.store.read(trace_id="turn")  # no flush: destination() committed it
        transport.close()
        from tracestore.api import Store

        violations = [v.code for v in Store(rec.store).audit("turn").violations]
    assert [h.attempt_id for h in turn.attempts] == ids and retry.attempt_id == ids[-1]
    return {"writer": writer_used, "kinds": kinds,
            "retry_of": [None if r is None else ids.index(r) for r in retry_of],
            "decisions": [_decided(d) for d in decisions],
            "handles": [_decided(d) for d in handles],
            "events": _projection(events, ids), "violations": violations}


def _decided(decision: Any) -> tuple[Any, ...]:
    return (decision.eligible, decision.status, decision.reasons, decision.answer,
            decision.answer_sha256, decision.notes, decision.decided_text,
            decision.rule_version)


def _projection(events: list[Any], ids: list[str]) -> list[dict[str, Any]]:
    """Per attempt: its frames (index, native type, kinds, byte offset), its events by
    type but the capture segments (their number follows the writer's batching), its
    drain, Stop and destinations."""
    out = []
    for attempt_id in ids:
        mine = [e for e in events if getattr(e.event, "attempt_id", None) == attempt_id]
        frames, segment = [], None
        for stored in mine:
            if isinstance(stored.event, CaptureSegment):
                segment = stored.event
            elif isinstance(stored.event, FrameReceived):
                assert segment is not None
                frames.append((stored.event.index, stored.event.native, stored.event.kinds,
                               segment.offset + stored.event.offset))
        started = [e.event for e in mine if e.type == "attempt.started"]
        out.append({
            "frames": frames,
            "types": Counter(e.type for e in mine if e.type != "capture.segment"),
            "api": [s.api for s in started],
            "request": [{k: v for k, v in s.request.items() if k != "client"}
                        for s in started],
            "drained": [(e.event.outcome, e.event.detail) for e in mine
                        if e.type == "transport.drained"],
            "stops": [e.event.by for e in mine if e.type == "local.stopped"],
            "destinations": [(e.event.destination, e.event.text) for e in mine
                             if e.type.startswith("destination")],
        })
    return out


def test_the_default_records_what_the_thread_records_and_reads_need_no_flush(
        tmp_path: Path, auto: None) -> None:
    thread = _record_a_stop_and_a_retry(f"sqlite:///{tmp_path / 'thread.db'}",
                                        writer="thread")
    default = _record_a_stop_and_a_retry(f"sqlite:///{tmp_path / 'default.db'}")
    assert (thread["writer"], default["writer"]) == ("thread", "process")
    assert default["kinds"] == [RemoteAttempt, RemoteAttempt]
    for key in ("retry_of", "decisions", "handles", "events", "violations"):
        assert default[key] == thread[key], key
    # ... and the outcome is the one the streams call for.
    assert [d[1] for d in thread["decisions"]] == ["stopped", "released"]
    assert thread["retry_of"] == [None, 0]
    assert thread["events"][0]["stops"] == ["application"]
    assert thread["events"][1]["destinations"] == [("ui", "The capital of France is Paris.")]
    assert thread["violations"] == []


def test_an_attempts_decision_under_the_default_needs_no_flush(tmp_path: Path,
                                                                auto: None) -> None:
    """Read at once after the stream, with nothing flushed: the whole attempt, judged."""
    with CaptureServer() as server, Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        transport = RecordingTransport(rec.trace("q", task=PARIS))
        client = httpx2.Client(transport=transport, timeout=30)
        _stream_one(client, server)
        (attempt,) = transport.attempts
        decision = attempt.decision()
        assert (decision.status, decision.answer) == ("released",
                                                      "The capital of France is Paris.")
        attempt.readback("history", "The capital of France is Paris.")
        kinds = [e.type for e in rec.store.read(attempt_id=attempt.attempt_id)]
        assert kinds[-1] == "destination.read_back"
        transport.close()
        assert transport.process.proc.returncode == 0


# -- after the transport is closed -----------------------------------------------------

def _in_time(work: Any, seconds: float = 30) -> Any:
    """``work()`` in a thread, its result, failing (never hanging) past ``seconds``."""
    import threading

    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"{work} did not return within {seconds} s"
    return done[0]


def test_after_close_reads_return_and_destinations_are_still_recorded(
        tmp_path: Path, auto: None) -> None:
    """The client closed (its writer process with it): the handle's decision, a flush and
    a destination write still work, as with the thread; a response through the closed
    transport is not recorded and says so."""
    from tracestore.recording.body import BodyAttempt

    with CaptureServer() as server, Recorder(f"sqlite:///{tmp_path / 'r.db'}") as rec:
        server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
        transport = RecordingTransport()
        client = httpx2.Client(transport=transport, timeout=30)
        with rec.turn("t", task=PARIS):
            handle = _stream_one(client, server)
        client.close()
        assert transport.process.stopped and transport.process.proc.returncode == 0
        assert _in_time(handle.decision).status == "released"
        _in_time(transport.flush)
        handle.destination("ui", "The capital of France is Paris.")
        transport.attempts[0].readback("ui", "The capital of France is Paris.")
        written = [(e.type, e.event.destination) for e in rec.store.read(trace_id="t")
                   if e.type.startswith("destination")]
        assert written == [("destination.written", "ui"), ("destination.read_back", "ui")]
        assert transport.failures == []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with rec.turn("t2", task=PARIS):
                late = transport.track(BodyAttempt(transport, "openai-responses", "sse", {}))
                late.received(RESPONSES.read_bytes())
                late.ended()
        assert [f.code for f in transport.failures] == ["recording_failed"]
        assert rec.store.read(trace_id="t2", limit=5)[0].type == "trace.opened"
        assert [e.type for e in rec.store.read(trace_id="t2")] == ["trace.opened"]
