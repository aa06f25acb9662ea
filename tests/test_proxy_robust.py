"""`tracestore proxy` when things fail: the upstream, the store, a slow writer."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest

from tracestore.errors import StoreError
from tracestore.events import CaptureSegment

from proxy_upstream import route_for
from proxyhelp import ANTHROPIC, RESPONSES, drains, running, wait_for_drain


@pytest.fixture
def setup(tmp_path: Path):
    with running(tmp_path, timeout=1.0) as started:
        yield started


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return port


def test_an_unreachable_upstream_is_a_502_naming_the_cause_and_an_error_drain(
        tmp_path) -> None:
    port = _closed_port()
    with running(tmp_path, routes=[("/down", f"http://127.0.0.1:{port}")]) as setup:
        response = httpx.post(f"{setup.url}/down/v1/chat/completions",
                              json={"model": "gpt-4o-mini", "stream": True},
                              headers={"X-Tracestore-Attempt": "unreached"})
        assert response.status_code == 502
        error = response.json()["error"]
        assert error["code"] == "upstream_unreachable"
        assert error["message"].startswith("the upstream 127.0.0.1 could not be reached: "
                                           "ConnectError")
        events = wait_for_drain(setup, "unreached")
        assert events[0].event.api == "openai-chat"
        assert [o for o, _ in drains(events)] == ["error"]
        assert drains(events)[0][1].startswith("ConnectError")
        assert setup.decision("unreached").status == "interrupted"


def test_a_reset_mid_body_reaches_the_client_as_it_would_directly(setup) -> None:
    setup.upstream.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=40, drop_after=700)

    def read(base: str) -> tuple[type, int, str | None]:
        received = 0
        with httpx.Client() as client, pytest.raises(httpx.HTTPError) as raised:
            with client.stream("POST", f"{base}/v1/messages",
                               json={"model": "m", "stream": True}) as response:
                for chunk in response.iter_raw():
                    received += len(chunk)
        return type(raised.value), received, response.headers.get("x-tracestore-attempt")

    direct = read(setup.upstream.url)
    proxied = read(setup.url)
    assert direct[:2] == proxied[:2] == (httpx.RemoteProtocolError, 700)
    events = wait_for_drain(setup, proxied[2])
    (outcome, detail), = drains(events)
    assert outcome == "reset" and detail.startswith("RemoteProtocolError")
    segments = [e.event for e in events if isinstance(e.event, CaptureSegment)]
    assert segments[-1].offset + segments[-1].size == 700
    assert setup.decision(proxied[2]).status == "interrupted"


def test_a_slow_upstream_is_forwarded_as_it_comes_and_a_silent_one_is_a_504(setup) -> None:
    route = setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=100,
                                                                hold_at=500)
    with httpx.Client() as client, client.stream(
            "POST", f"{setup.url}/v1/responses", json={"stream": True}) as response:
        chunks = response.iter_raw()
        received = b""
        while len(received) < 500:  # the first 500 bytes arrive while the rest is held:
            received += next(chunks)  # nothing is buffered in the proxy
        # (the upstream's thread marks the hold just after writing byte 500; the proxy can
        # hand that byte on before it does)
        assert route.reached.wait(5) and not route.release.is_set()
        route.release.set()
        received += b"".join(chunks)
    assert received == RESPONSES.read_bytes()
    assert setup.decision(response.headers["x-tracestore-attempt"]).status == "released"

    setup.upstream.routes["/v1/messages"] = route_for(ANTHROPIC, headers_delay=3)
    silent = httpx.post(f"{setup.url}/v1/messages", json={"stream": True},
                        headers={"X-Tracestore-Attempt": "silent"})
    assert (silent.status_code, silent.json()["error"]["code"]) == (504, "upstream_timeout")
    assert [o for o, _ in drains(wait_for_drain(setup, "silent"))] == ["error"]


def test_a_database_failure_never_breaks_the_clients_stream(setup, monkeypatch) -> None:
    setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
    original, recorded = setup.rec.store.append, {"segments": 0}

    def failing_append(events, **kwargs):
        if recorded["segments"]:
            raise StoreError("database is gone", code="database_unavailable")
        events = list(events)
        recorded["segments"] += sum(isinstance(e.event, CaptureSegment) for e in events)
        return original(events, **kwargs)

    original_fresh = setup.rec.store.append_fresh_groups

    def failing_fresh(groups, versions=None, **kwargs):  # the recorder's frames (rows)
        if recorded["segments"]:
            raise StoreError("database is gone", code="database_unavailable")
        recorded["segments"] += sum(e.type == "capture.segment" for _, events, _, _ in groups
                                    for e in events)
        return original_fresh(groups, versions, **kwargs)

    monkeypatch.setattr(setup.rec.store, "append", failing_append)
    monkeypatch.setattr(setup.rec.store, "append_fresh_groups", failing_fresh)
    gate = threading.Event()
    setup.recording.call(gate.wait)  # the writer waits: the whole body queues up behind it
    response = httpx.post(f"{setup.url}/v1/responses", json={"stream": True})
    gate.set()
    assert response.status_code == 200 and response.content == RESPONSES.read_bytes()
    setup.recording.flush()
    assert [f.code for f in setup.recording.failures] == ["database_unavailable"]
    monkeypatch.undo()
    attempt = response.headers["x-tracestore-attempt"]
    assert setup.decision(attempt).status == "pending"  # a clean prefix, no made-up end
    assert setup.rec.store.verify().ok


def test_a_burst_past_the_memory_bound_is_spilled_and_recorded_whole(tmp_path) -> None:
    """Past ``max_backlog`` in memory the chunks go to a spill file: the forwarding never
    waits for the writer (here blocked for the whole body), memory stays at the bound, and
    the attempt is recorded byte for byte afterwards, judged as without the spill."""
    with running(tmp_path) as plain:
        plain.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=200)
        first = httpx.post(f"{plain.url}/v1/responses", json={"stream": True})
        wait_for_drain(plain, first.headers["x-tracestore-attempt"])
        expected = plain.decision(first.headers["x-tracestore-attempt"])
    (tmp_path / "spill").mkdir()
    with running(tmp_path / "spill", max_backlog=1000, backlog_wait=0.2) as setup:
        setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=200)
        gate = threading.Event()
        setup.recording.call(lambda: gate.wait(20))  # a store that does not answer
        response = httpx.post(f"{setup.url}/v1/responses", json={"stream": True})
        assert response.content == RESPONSES.read_bytes()
        record = setup.recording.attempts[response.headers["x-tracestore-attempt"]]
        assert record.backlog <= 1000 and record.spilled >= len(RESPONSES.read_bytes()) - 1200
        gate.set()
        events = wait_for_drain(setup, record.attempt_id)
        assert setup.recording.failures == [] and not record.dead
        assert record.spill_backlog == 0 and record._spill is None  # file closed at the end
        raw = b"".join(setup.rec.store.get_blob(e.event.sha256) for e in events
                       if isinstance(e.event, CaptureSegment))
        assert raw == RESPONSES.read_bytes()
        got = setup.decision(record.attempt_id)
        assert (got.status, got.reasons) == (expected.status, expected.reasons)


@pytest.mark.parametrize("route", ["spill thread held", "written on the event loop"])
def test_a_spilled_chunk_is_recorded_whoever_writes_it_and_whenever(tmp_path, monkeypatch,
                                                                    route: str) -> None:
    """The spill file is written by a spill thread, so the event loop never waits for the
    disk: a chunk it has not written yet is recorded from memory; with more than
    ``max_spill_pending`` bytes waiting (here 0) the event loop writes it itself."""
    from tracestore.proxy import writer

    held = threading.Event()
    written_by: list[str] = []
    original = writer.StreamRecord.write_spilled

    def write_spilled(self, piece):  # noqa: ANN001, ANN202
        written_by.append(threading.current_thread().name)
        if route == "spill thread held":
            held.wait(20)
        return original(self, piece)

    monkeypatch.setattr(writer.StreamRecord, "write_spilled", write_spilled)
    pending = 0 if route == "written on the event loop" else 8 << 20
    with running(tmp_path, max_backlog=1000, backlog_wait=0.2,
                 max_spill_pending=pending) as setup:
        setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=200)
        response = httpx.post(f"{setup.url}/v1/responses", json={"stream": True})
        assert response.content == RESPONSES.read_bytes()
        record = setup.recording.attempts[response.headers["x-tracestore-attempt"]]
        events = wait_for_drain(setup, record.attempt_id)  # recorded while the spill waits
        held.set()
        raw = b"".join(setup.rec.store.get_blob(e.event.sha256) for e in events
                       if isinstance(e.event, CaptureSegment))
        assert raw == RESPONSES.read_bytes() and setup.recording.failures == []
        assert record.spilled > 0 and record.spill_closed
        assert setup.decision(record.attempt_id).status == "released"
    threads = set(written_by)
    if route == "spill thread held":
        assert threads == {"tracestore-proxy-spill"}
    else:  # the event loop's own thread (the test's proxy runs it in a thread of its own)
        assert len(threads) == 1 and "tracestore-proxy-spill" not in threads


def test_a_writer_that_falls_behind_gives_up_the_recording_not_the_stream(tmp_path) -> None:
    """Bounded memory: at most ``max_backlog`` unrecorded bytes per stream; past that the
    forwarding waits ``backlog_wait`` for the store, then gives the recording up (here with
    no spill file: ``max_spill=0``)."""
    with running(tmp_path, max_backlog=1000, backlog_wait=0.2, max_spill=0) as setup:
        setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=200)
        gate = threading.Event()
        setup.recording.call(lambda: gate.wait(20))  # a store that does not answer
        response = httpx.post(f"{setup.url}/v1/responses", json={"stream": True})
        assert response.content == RESPONSES.read_bytes()
        gate.set()
        setup.recording.flush()
        assert [f.code for f in setup.recording.failures] == ["recording_lagged"]
        record = setup.recording.attempts[response.headers["x-tracestore-attempt"]]
        assert record.dead and record.backlog <= 1000 + 200
