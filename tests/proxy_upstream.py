"""A fake provider upstream for the proxy tests: real captures byte for byte, on 127.0.0.1.

Like ``capture_server`` (chunked bodies, hold at a byte, drop after N bytes, pace), plus
what a proxy test must see from the upstream's side: the request headers exactly as they
arrived, and whether the client of the upstream (the proxy) closed the connection while the
body was held (``Route.closed``): a held body waits for ``release`` *or* that close.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOLD_TIMEOUT_S = 20.0
CONTENT_TYPES = {".sse": "text/event-stream", ".bin": "application/vnd.amazon.eventstream",
                 ".ndjson": "application/x-ndjson", ".json": "application/json"}


@dataclass
class Route:
    capture: bytes
    content_type: str
    chunk: int = 64
    drop_after: int | None = None
    hold_at: int | None = None
    pace: float = 0.0
    headers_delay: float = 0.0
    status: int = 200
    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    "Set when the connection was closed by the other side while the body was held."
    sent: int = 0


def route_for(path: Path, **options: object) -> Route:
    return Route(path.read_bytes(), CONTENT_TYPES[path.suffix], **options)  # type: ignore[arg-type]


def _peer_closed(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class Upstream:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str, list[tuple[str, str]], bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                server.requests.append((self.command, self.path, list(self.headers.items()),
                                        body))
                route = server.routes.get(path) or next(
                    (r for suffix, r in server.routes.items() if path.endswith(suffix)), None)
                if route is None:
                    self.send_error(404)
                    return
                if route.headers_delay:
                    time.sleep(route.headers_delay)
                self.send_response(route.status)
                self.send_header("content-type", route.content_type)
                self.send_header("transfer-encoding", "chunked")
                self.send_header("x-request-id", "req-upstream-1")
                self.end_headers()
                self._body(route)

            do_GET = do_POST  # noqa: N815

            def _hold(self, route: Route) -> None:
                route.reached.set()
                deadline = time.monotonic() + HOLD_TIMEOUT_S
                while time.monotonic() < deadline and not route.release.is_set():
                    if _peer_closed(self.connection):
                        route.closed.set()
                        return
                    route.release.wait(0.01)

            def _body(self, route: Route) -> None:
                data, sent = route.capture, 0
                try:
                    while sent < len(data):
                        if route.hold_at is not None and sent >= route.hold_at \
                                and not route.reached.is_set():
                            self._hold(route)
                            if route.closed.is_set():
                                return
                        size = route.chunk
                        if route.hold_at is not None and sent < route.hold_at:
                            size = min(size, route.hold_at - sent)
                        if route.drop_after is not None:
                            size = min(size, route.drop_after - sent)
                            if size <= 0:
                                self.wfile.flush()
                                self.connection.shutdown(socket.SHUT_RDWR)
                                self.close_connection = True
                                return
                        piece = data[sent:sent + size]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                        sent += len(piece)
                        route.sent = sent
                        if route.pace:
                            time.sleep(route.pace)
                    if route.hold_at is not None and route.hold_at >= len(data):
                        self._hold(route)  # every byte sent, the body's end held back
                        if route.closed.is_set():
                            return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    route.closed.set()
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Upstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for route in self.routes.values():
            route.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
