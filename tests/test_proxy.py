"""`tracestore proxy`: forwarding byte for byte, and every streamed response recorded."""

from __future__ import annotations

import hashlib
import json
import socket
import time
from pathlib import Path

import httpx
import pytest

from tracestore import Recorder
from tracestore.events import CaptureSegment, FrameReceived, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections.release import decide_release
from tracestore.proxy.app import proxy_app
from tracestore.proxy.server import RunningProxy
from tracestore.proxy.writer import ProxyRecording

from conftest import FIXTURES
from proxy_upstream import Upstream, route_for

REAL = FIXTURES / "real"
PARIS = json.loads((FIXTURES / "tasks" / "paris.json").read_text())
RESPONSES = REAL / "openai-responses" / "text-gpt-4o.sse"
CHAT = next(iter(sorted((REAL / "openai-chat").glob("*.sse"))))
ANTHROPIC = REAL / "anthropic" / "text-basic.sse"
GEMINI = REAL / "gemini" / "sse-text.sse"


class Setup:
    def __init__(self, db: Path, upstream: Upstream, recording: ProxyRecording,
                 proxy: RunningProxy, rec: Recorder) -> None:
        self.db, self.upstream, self.recording, self.proxy, self.rec = \
            db, upstream, recording, proxy, rec

    @property
    def url(self) -> str:
        return self.proxy.url

    def events(self, attempt_id: str) -> list:
        self.recording.flush()
        return self.rec.store.read(attempt_id=attempt_id)

    def decision(self, attempt_id: str):
        self.recording.flush()
        trace = self.rec.store.read(attempt_id=attempt_id)[0].trace_id
        return decide_release(self.rec.store.read(trace_id=trace), attempt_id)


@pytest.fixture
def setup(tmp_path: Path):
    db = tmp_path / "proxy.db"
    with Upstream() as upstream, Recorder(f"sqlite:///{db}") as rec:
        recording = ProxyRecording(rec, task=TaskRule.model_validate(PARIS))
        app = proxy_app([("", upstream.url)], recording, timeout=10)
        with RunningProxy(app) as proxy:
            yield Setup(db, upstream, recording, proxy, rec)
        recording.close()


def frames_of(events: list) -> list[tuple]:
    out, segment = [], None
    for stored in events:
        event = stored.event
        if isinstance(event, CaptureSegment):
            segment = event
        elif isinstance(event, FrameReceived):
            out.append((event.index, event.native, event.kinds, segment.offset + event.offset))
    return out


def ingested(path: Path) -> tuple[list[tuple], object]:
    from tracestore.store.log import EventStore

    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="x", trace_id="x",
                       task=TaskRule.model_validate(PARIS))
    frames = [(e.event.index, e.event.native, e.event.kinds, e.event.offset)
              for e in plan.events if isinstance(e.event, FrameReceived)]
    with EventStore("sqlite://") as store:
        store.append(list(plan.events), blob_data=[plan.blob])
        return frames, decide_release(store.read(), "x")


def kinds(events: list) -> list[str]:
    return [e.type for e in events]


def drains(events: list) -> list[tuple[str, str | None]]:
    return [(e.event.outcome, e.event.detail) for e in events if e.type == "transport.drained"]


def test_a_full_read_is_forwarded_byte_for_byte_and_recorded_like_ingest(setup) -> None:
    setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=37)
    with httpx.Client() as client, client.stream(
            "POST", f"{setup.url}/v1/responses?trace=1",
            json={"model": "gpt-4o", "input": "secret prompt", "stream": True,
                  "temperature": 0.2},
            headers={"Authorization": "Bearer sk-test", "X-Custom": "kept",
                     "X-Tracestore-Trace": "q1"}) as response:
        body = b"".join(response.iter_raw())
        headers = response.headers
    assert body == RESPONSES.read_bytes()
    assert headers["content-type"] == "text/event-stream"
    assert headers["x-request-id"] == "req-upstream-1"  # the upstream's headers, forwarded
    assert "transfer-encoding" in headers  # re-chunked by the proxy (hop-by-hop)
    attempt = headers["x-tracestore-attempt"]
    method, path, sent, _ = setup.upstream.requests[-1]
    assert (method, path) == ("POST", "/v1/responses?trace=1")
    sent_names = {k.lower(): v for k, v in sent}
    assert sent_names["authorization"] == "Bearer sk-test"  # forwarded, never stored
    assert sent_names["x-custom"] == "kept"
    assert not any(k.startswith("x-tracestore") for k in sent_names)
    assert sent_names["host"] == setup.upstream.url.split("//", 1)[1]

    events = setup.events(attempt)
    frames, expected = ingested(RESPONSES)
    assert frames_of(events) == frames
    decision = setup.decision(attempt)
    assert (decision.status, decision.reasons, decision.answer) == (
        expected.status, expected.reasons, expected.answer) == (
        "released", expected.reasons, "The capital of France is Paris.")
    started = events[0].event
    assert (started.trace_id, started.api) == ("q1", "openai-responses")
    assert started.request == {"endpoint": "/v1/responses", "model": "gpt-4o",
                               "stream": True, "temperature": 0.2,
                               "client": started.request["client"]}
    assert drains(events) == [("clean", None)]
    final = [e.event for e in events if e.type == "capture.segment" and e.event.final]
    assert [f.stream_sha256 for f in final] == [hashlib.sha256(body).hexdigest()]


def test_without_headers_each_request_is_its_own_trace(setup) -> None:
    setup.upstream.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=50)
    ids = []
    for _ in range(2):
        response = httpx.post(f"{setup.url}/v1/messages", json={"model": "m", "stream": True})
        assert response.content == ANTHROPIC.read_bytes()
        ids.append(response.headers["x-tracestore-attempt"])
    traces = {setup.events(a)[0].event.trace_id for a in ids}
    assert len(traces) == 2 and all(e.event.retry_of is None
                                    for a in ids for e in setup.events(a)[:1])


def _read_until(sock: socket.socket, marker: bytes, timeout: float = 10) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while marker not in data:
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    return data


def test_a_client_leaving_mid_stream_is_a_stop_at_the_bytes_forwarded(setup) -> None:
    route = setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64,
                                                                hold_at=2400)
    with httpx.Client() as client, client.stream(
            "POST", f"{setup.url}/v1/responses", json={"model": "gpt-4o", "stream": True}
    ) as response:
        received = 0
        for chunk in response.iter_raw():
            received += len(chunk)
            if received >= 2400:
                break  # the user's Stop: the app aborts its request
        attempt = response.headers["x-tracestore-attempt"]
    assert received == 2400
    assert route.closed.wait(10)  # the proxy closed its upstream request
    route.release.set()
    for _ in range(200):
        if drains(setup.events(attempt)):
            break
        time.sleep(0.02)
    events = setup.events(attempt)
    decision = setup.decision(attempt)
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
    stop = next(e.event for e in events if e.type == "local.stopped")
    assert stop.by == "client"
    segments = [e.event for e in events if e.type == "capture.segment"]
    assert segments[-1].offset + segments[-1].size == 2400
    assert drains(events) == [("eof", "client disconnected after 2400 bytes, before the "
                               "native terminal; the proxy closed the upstream request")]


def test_a_client_leaving_after_the_native_terminal_is_a_clean_end(setup) -> None:
    data = RESPONSES.read_bytes()
    route = setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64,
                                                                hold_at=len(data))
    # Every byte is sent, the body's end (the last chunk) held back: the client has the
    # terminal frame and leaves before the upstream ends.
    sock = socket.create_connection(setup.proxy.sock.getsockname()[:2])
    request = json.dumps({"model": "gpt-4o", "stream": True}).encode()
    sock.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
                 b"\r\ncontent-length: %d\r\n\r\n%s" % (len(request), request))
    assert route.reached.wait(10)
    head = _read_until(sock, b"response.completed")
    sock.close()
    assert b"x-tracestore-attempt: " in head
    attempt = head.split(b"x-tracestore-attempt: ", 1)[1].split(b"\r\n", 1)[0].decode()
    assert route.closed.wait(10)
    for _ in range(200):
        if drains(setup.events(attempt)):
            break
        time.sleep(0.02)
    events = setup.events(attempt)
    assert "local.stopped" not in kinds(events)
    assert drains(events) == [("clean", "client closed the connection after the native "
                               "terminal; the proxy closed the upstream request")]
    assert setup.decision(attempt).status == "released"
