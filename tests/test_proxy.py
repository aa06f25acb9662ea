"""`tracestore proxy`: forwarding byte for byte, and every streamed response recorded."""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path

import httpx
import pytest

from proxy_upstream import route_for
from proxyhelp import (
    ANTHROPIC, GEMINI, RESPONSES, decide_release, drains, frames_of, ingested, kinds, running,
    wait_for_drain,
)


@pytest.fixture
def setup(tmp_path: Path):
    with running(tmp_path) as started:
        yield started


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


def _body_so_far(raw: bytes) -> bytes:
    """The body bytes in ``raw`` (a response's head and chunked body, maybe cut short)."""
    _, _, rest = raw.partition(b"\r\n\r\n")
    body = b""
    while b"\r\n" in rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        body += rest[:size]
        if size == 0 or len(rest) < size + 2:
            break
        rest = rest[size + 2:]
    return body


def _read_body(sock: socket.socket, whole: bytes, timeout: float = 10) -> bytes:
    """Read until the chunked body holds ``whole`` (every byte of it); the head and what
    came of the body.  (Waiting for a marker word could leave before the frame holding it
    had arrived: the client then left before the terminal, a Stop.)"""
    sock.settimeout(timeout)
    data = b""
    while whole not in _body_so_far(data):
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
    events = wait_for_drain(setup, attempt)
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
    head = _read_body(sock, data)
    assert data in _body_so_far(head)  # the terminal frame arrived whole
    sock.close()
    assert b"x-tracestore-attempt: " in head
    attempt = head.split(b"x-tracestore-attempt: ", 1)[1].split(b"\r\n", 1)[0].decode()
    assert route.closed.wait(10)
    events = wait_for_drain(setup, attempt)
    assert "local.stopped" not in kinds(events)
    assert drains(events) == [("clean", "client closed the connection after the native "
                               "terminal; the proxy closed the upstream request")]
    assert setup.decision(attempt).status == "released"


def test_a_retry_named_by_headers_is_judged_like_t8_and_destinations_are_recorded(
        setup) -> None:
    """The old stream is held mid-body while the retry (same trace, Retry-Of the old id)
    runs to the end; then the old body finishes.  The retry supersedes it, is released
    once, and the destination writes posted to the proxy land on the retry."""
    import threading

    old_route = setup.upstream.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=30,
                                                                   hold_at=700)
    setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
    old_body: list[bytes] = []

    def old_reader() -> None:
        response = httpx.post(f"{setup.url}/v1/messages", json={"model": "m", "stream": True},
                              headers={"X-Tracestore-Trace": "t8",
                                       "X-Tracestore-Attempt": "old"}, timeout=30)
        old_body.append(response.content)

    old = threading.Thread(target=old_reader)
    old.start()
    assert old_route.reached.wait(10)
    retry = httpx.post(f"{setup.url}/v1/responses", json={"model": "gpt-4o", "stream": True},
                       headers={"X-Tracestore-Trace": "t8", "X-Tracestore-Retry-Of": "old"})
    new_id = retry.headers["x-tracestore-attempt"]
    assert retry.headers["x-tracestore-trace"] == "t8"
    old_route.release.set()
    old.join(30)
    assert old_body == [ANTHROPIC.read_bytes()]  # the old body still reached its reader
    answer = "The capital of France is Paris."
    for destination in ("ui", "history"):
        posted = httpx.post(f"{setup.url}/.tracestore/destinations",
                            json={"attempt": new_id, "destination": destination,
                                  "text": answer})
        assert posted.status_code == 200 and posted.json()["recorded"] is True
    refused = httpx.post(f"{setup.url}/.tracestore/destinations",
                         json={"attempt": "nope", "destination": "ui", "text": "x"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (404, "attempt_not_found")
    for bad in ({"destination": "history", "cut_off": True}, {"destination": "ui",
                                                             "cut_off": "yes"}):
        refused = httpx.post(f"{setup.url}/.tracestore/destinations",
                             json={"attempt": new_id, "text": answer, **bad})
        assert refused.status_code == 400, bad  # only the UI shows a partial cut off
    setup.recording.flush()
    from tracestore.events import ReleaseDecided
    from tracestore.projections.destinations import audit

    events = setup.rec.store.read(trace_id="t8")
    assert setup.events(new_id)[0].event.retry_of == "old"
    old_d, new_d = decide_release(events, "old"), decide_release(events, new_id)
    assert (old_d.status, old_d.reasons) == ("superseded", ("superseded_by_newer_attempt",))
    assert (new_d.status, new_d.answer) == ("released", answer)
    released = [e.event.attempt_id for e in events
                if isinstance(e.event, ReleaseDecided) and e.event.eligible]
    assert released == [new_id]
    assert audit(events, trace_id="t8").violations == ()
    writes = [(e.event.destination, e.event.source) for e in events
              if e.type == "destination.written"]
    assert writes == [("ui", "application"), ("history", "application")]


SECRETS = {"authorization": "Bearer sk-proj-SECRET-authorization-1",
           "x-api-key": "sk-ant-SECRET-x-api-key-2", "api-key": "SECRET-azure-api-key-3",
           "x-goog-api-key": "AIzaSECRET-goog-4", "cookie": "session=SECRET-cookie-5",
           "proxy-authorization": "Basic SECRET-proxy-6"}


def test_credentials_reach_the_upstream_and_are_never_stored(setup, tmp_path) -> None:
    setup.upstream.routes["/v1beta/models/gemini-2.0-flash:streamGenerateContent"] = \
        route_for(GEMINI, chunk=50)
    response = httpx.post(
        f"{setup.url}/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse&key="
        "AIzaSECRET-query-7", json={"contents": [{"parts": [{"text": "secret prompt"}]}],
                                   "generationConfig": {"temperature": 0}},
        headers=SECRETS)
    assert response.content == GEMINI.read_bytes()
    attempt = response.headers["x-tracestore-attempt"]
    sent = {k.lower(): v for k, v in setup.upstream.requests[-1][2]}
    for name, value in SECRETS.items():  # all forwarded except the hop-by-hop one
        assert (sent.get(name) == value) is (name != "proxy-authorization"), name
    assert "key=AIzaSECRET-query-7" in setup.upstream.requests[-1][1]
    decision = setup.decision(attempt)
    assert decision.status == "released"
    started = setup.events(attempt)[0].event
    assert started.request["model"] == "gemini-2.0-flash"
    assert started.request["generationConfig"] == {"temperature": 0}
    setup.recording.flush()
    events = setup.rec.store.read()
    log = "\n".join(e.event.model_dump_json() for e in events).encode()
    raw = b"".join(setup.rec.store.get_blob(e.event.sha256) or b"" for e in events
                   if e.type == "capture.segment")
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"gemini-2.0-flash" in log and raw == GEMINI.read_bytes()  # the check reads them
    for stored in (log, raw, files):
        assert b"SECRET" not in stored and b"secret prompt" not in stored


def test_routes_by_prefix_send_each_path_to_its_upstream(tmp_path) -> None:
    from proxy_upstream import Upstream

    with Upstream() as other:
        other.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=100)
        with running(tmp_path, routes=[("/anthropic", other.url)]) as setup:
            setup.upstream.routes["/v1/responses"] = route_for(RESPONSES, chunk=100)
            a = httpx.post(f"{setup.url}/anthropic/v1/messages", json={"stream": True})
            b = httpx.post(f"{setup.url}/v1/responses", json={"stream": True})
            assert (a.content, b.content) == (ANTHROPIC.read_bytes(), RESPONSES.read_bytes())
            assert [r[1] for r in other.requests] == ["/v1/messages"]
            assert [r[1] for r in setup.upstream.requests] == ["/v1/responses"]
            apis = [setup.events(r.headers["x-tracestore-attempt"])[0].event.api
                    for r in (a, b)]
            assert apis == ["anthropic-messages", "openai-responses"]


def test_a_non_streamed_response_is_forwarded_and_not_recorded(setup) -> None:
    from proxy_upstream import Route

    setup.upstream.routes["/v1/models"] = Route(b'{"data": []}', "application/json")
    response = httpx.post(f"{setup.url}/v1/models", content=b"{}")
    assert response.content == b'{"data": []}'
    assert "x-tracestore-attempt" not in response.headers
    setup.recording.flush()
    assert [e.type for e in setup.rec.store.read()] == []


@pytest.mark.parametrize(("args", "code"), [
    (["--route", "openai=https://x"], "invalid_route"),
    (["--upstream", "ftp://x"], "invalid_route"),
    ([], "invalid_route"),
    (["--upstream", "https://x", "--listen", "8787"], "invalid_listen"),
])
def test_bad_proxy_arguments_are_typed_errors(args, code, tmp_path) -> None:
    from typer.testing import CliRunner

    from tracestore.cli import app

    result = CliRunner().invoke(app, ["proxy", *args, "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2, result.output
    assert f"error[{code}]" in result.stderr
