"""The proxy's upstream leg (``tracestore/proxy/network.py``): every way an HTTP/1.1 body
can be framed reaches the client whole, chunked bodies are forwarded raw and recorded with
the framing removed, and upstream connections are reused when the response allows it."""

from __future__ import annotations

import random
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from tracestore.proxy.chunked import ChunkScanner

from proxyhelp import RESPONSES, frames_of, ingested, running, wait_for_drain


def _chunked(body: bytes, sizes: list[int], *, extension: bytes = b"",
             trailers: bytes = b"") -> bytes:
    out, pos = [], 0
    for size in sizes:
        piece = body[pos:pos + size]
        if not piece:
            break
        out.append(b"%x%s\r\n%s\r\n" % (len(piece), extension, piece))
        pos += len(piece)
    if pos < len(body):
        out.append(b"%x\r\n%s\r\n" % (len(body) - pos, body[pos:]))
    return b"".join(out) + b"0\r\n" + trailers + b"\r\n"


def test_the_scanner_finds_the_body_however_the_framing_is_split() -> None:
    body = bytes(range(256)) * 40
    rng = random.Random(7)
    for extension, trailers in ((b"", b""), (b";name=value", b"X-Trailer: 1\r\n")):
        framed = _chunked(body, [rng.randint(1, 900) for _ in range(40)],
                          extension=extension, trailers=trailers)
        for _ in range(30):
            cuts = sorted(rng.sample(range(1, len(framed)), 25))
            pieces = [framed[a:b] for a, b in zip([0, *cuts], [*cuts, len(framed)],
                                                  strict=True)]
            scanner = ChunkScanner()
            assert b"".join(scanner.decode(p) for p in pieces) == body
            assert scanner.done


def test_the_scanner_refuses_what_is_not_chunked_framing() -> None:
    for bad in (b"zz\r\nxx\r\n", b"+5\r\nhello\r\n", b"1_0\r\n", b"5\r\nhelloXX"):
        with pytest.raises(httpx.RemoteProtocolError):
            ChunkScanner().decode(bad)


class ScriptedUpstream:
    """A raw-socket upstream: each request is answered by ``script`` (byte pieces written
    with a pause between, so the proxy reads them separately); counts connections."""

    def __init__(self, script: list[bytes], *, close: bool = False) -> None:
        self.script, self.close = script, close
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                for piece in self.script:
                    conn.sendall(piece)
                    time.sleep(0.005)
                if self.close:
                    return

    def stop(self) -> None:
        self.sock.close()


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


def _split(data: bytes, at: list[int]) -> list[bytes]:
    return [data[a:b] for a, b in zip([0, *at], [*at, len(data)], strict=True)]


@pytest.mark.parametrize("case", ["chunked-split-size-lines", "chunked-trailers",
                                  "content-length", "close-delimited"])
def test_every_framing_reaches_the_client_whole_and_is_recorded_like_ingest(
        tmp_path: Path, case: str) -> None:
    body = RESPONSES.read_bytes()
    if case.startswith("chunked"):
        trailers = b"X-Checksum: abc\r\n" if case == "chunked-trailers" else b""
        framed = _chunked(body, [100, 7, 1000, 3, 2000], extension=b";x=1",
                          trailers=trailers)
        # cut inside size lines, inside a CRLF, and inside the terminal chunk
        cuts = [1, 3, 6, 108, 109, 118, len(framed) - 4, len(framed) - 2]
        script = _split(HEAD + b"transfer-encoding: chunked\r\n\r\n" + framed,
                        [len(HEAD) + 30 + c for c in cuts])
    elif case == "content-length":
        script = _split(HEAD + b"content-length: %d\r\n\r\n" % len(body) + body,
                        [len(HEAD) + 10, len(HEAD) + 400])
    else:
        script = _split(HEAD + b"connection: close\r\n\r\n" + body, [len(HEAD) + 30])
    upstream = ScriptedUpstream(script, close=case == "close-delimited")
    try:
        with running(tmp_path, routes=[("/s", upstream.url)]) as setup:
            for _ in range(2):
                response = httpx.post(f"{setup.url}/s/v1/responses", json={"stream": True})
                assert response.status_code == 200 and response.content == body
                events = wait_for_drain(setup, response.headers["x-tracestore-attempt"])
                assert frames_of(events) == ingested(RESPONSES)[0]
            # a framed response leaves its connection for the next request
            assert upstream.connections == (2 if case == "close-delimited" else 1)
    finally:
        upstream.stop()


def test_a_bad_chunk_size_cuts_the_client_as_the_upstream_did(tmp_path: Path) -> None:
    script = [HEAD + b"transfer-encoding: chunked\r\n\r\n" + b"5\r\nhello\r\n", b"zz\r\n"]
    upstream = ScriptedUpstream(script, close=True)
    try:
        with running(tmp_path, routes=[("/s", upstream.url)]) as setup:
            received = b""
            with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
                with client.stream("POST", f"{setup.url}/s/v1/responses",
                                   json={"stream": True}) as response:
                    for chunk in response.iter_raw():
                        received += chunk
            assert received == b"hello"
            events = wait_for_drain(setup, response.headers["x-tracestore-attempt"])
            (outcome, detail), = [(e.event.outcome, e.event.detail) for e in events
                                  if e.type == "transport.drained"]
            assert outcome == "reset" and detail.startswith("RemoteProtocolError")
    finally:
        upstream.stop()


def test_the_path_is_forwarded_as_the_client_escaped_it(tmp_path: Path) -> None:
    with running(tmp_path, routes=[("/openai", "{upstream}/base")]) as setup:
        response = httpx.post(f"{setup.url}/openai/v1/files/a%20b%2Fc:x?key=1&q=%25",
                              content=b"{}")
        assert response.status_code == 404  # the fake upstream knows no such path
        method, path, headers, _ = setup.upstream.requests[-1]
        assert (method, path) == ("POST", "/base/v1/files/a%20b%2Fc:x?key=1&q=%25")
        assert dict((k.lower(), v) for k, v in headers)["host"] == \
            setup.upstream.url.split("//", 1)[1]
