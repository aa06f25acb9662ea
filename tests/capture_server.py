"""A local HTTP server that replays real captures byte for byte, in small chunks.

Binds 127.0.0.1 on an ephemeral port, serves each POST with the capture its route names
(chunked transfer encoding, so clients read it as a stream), can drop the connection after
N bytes or hold a body at a byte until told to go on, and stops by itself (daemon thread,
bounded waits).  Used by the SDK-capture tests and ``bench/recorder.py``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: Longest a held body waits to be released before the server gives up (seconds).
HOLD_TIMEOUT_S = 20.0


@dataclass
class Route:
    capture: bytes
    content_type: str
    chunk: int = 64
    drop_after: int | None = None
    "Close the connection (no final chunk) once this many body bytes were sent."
    hold_at: int | None = None
    "Pause once this many body bytes were sent, until ``release`` is set."
    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)
    "Set when the body reached ``hold_at``."
    pace: float = 0.0
    "Seconds to wait between chunks (a provider producing tokens), 0: as fast as possible."
    by_event: bool = False
    "Send one chunk per SSE event (each ends at a blank line), ``chunk`` ignored."
    content_length: bool = False
    "Send a content-length body (the capture's size) instead of chunked transfer encoding."
    status: int = 200
    "The HTTP status (an error body is served with its provider's 4xx status)."
    headers: dict[str, str] = field(default_factory=dict)
    "More response headers (``retry-after-ms`` …)."


CONTENT_TYPES = {".sse": "text/event-stream", ".bin": "application/vnd.amazon.eventstream",
                 ".ndjson": "application/x-ndjson", ".json": "application/json"}


def route_for(path: Path, **options: object) -> Route:
    return Route(path.read_bytes(), CONTENT_TYPES[path.suffix], **options)  # type: ignore[arg-type]


class CaptureServer:
    """``with CaptureServer() as server: server.routes["/v1/messages"] = route_for(...)``."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                server.requests.append((path, body))
                route = server.routes.get(path) or next(
                    (r for suffix, r in server.routes.items() if path.endswith(suffix)), None)
                if route is None:
                    self.send_error(404)
                    return
                self.send_response(route.status)
                self.send_header("content-type", route.content_type)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                if route.content_length:
                    self.send_header("content-length", str(len(route.capture)))
                else:
                    self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self._body(route)

            def _body(self, route: Route) -> None:
                data, sent = route.capture, 0
                while sent < len(data):
                    if route.hold_at is not None and sent >= route.hold_at and not route.reached.is_set():
                        route.reached.set()
                        route.release.wait(HOLD_TIMEOUT_S)
                    size = route.chunk
                    if route.by_event:
                        end = data.find(b"\n\n", sent)
                        size = (end + 2 - sent) if end >= 0 else len(data) - sent
                    if route.hold_at is not None and sent < route.hold_at:
                        size = min(size, route.hold_at - sent)
                    if route.drop_after is not None:
                        size = min(size, route.drop_after - sent)
                        if size <= 0:
                            self.wfile.flush()
                            self.connection.shutdown(2)  # dropped mid-body, no final chunk
                            self.close_connection = True
                            return
                    piece = data[sent:sent + size]
                    self.wfile.write(piece if route.content_length
                                     else b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                    sent += len(piece)
                    if route.pace:
                        time.sleep(route.pace)
                if not route.content_length:
                    self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> CaptureServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for route in self.routes.values():
            route.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
