"""Running the desk: uvicorn on a socket (``serve``), or in a thread (``RunningDesk``)."""

from __future__ import annotations

import socket
from typing import Any

from tracestore.proxy.server import UvicornThread, signals_end_cleanly


def _config(app: Any, **options: Any) -> Any:
    import uvicorn

    return uvicorn.Config(app, lifespan="off", http="h11", loop="asyncio",
                          server_header=False, access_log=False, log_level="warning",
                          **options)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (bound before uvicorn starts, so the port is known: 0 picks a
    free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)  # connections queue from now on, before uvicorn starts accepting
    return sock


def serve(app: Any, sock: socket.socket, grace: float = 10.0) -> None:
    """Serve until SIGTERM or Ctrl-C; requests in flight get ``grace`` seconds, then the
    call returns normally (the process exits 0, as a process manager expects)."""
    import uvicorn

    with signals_end_cleanly():
        uvicorn.Server(_config(app, timeout_graceful_shutdown=grace)).run(sockets=[sock])


class RunningDesk(UvicornThread):
    """``with RunningDesk(app, sock) as desk: desk.url`` -- the desk served from a thread."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        import uvicorn

        super().__init__(uvicorn.Server(_config(app)), sock)
