"""Running the recording proxy: uvicorn serving ``ProxyApp`` on a socket.

``serve`` is what ``tracestore proxy`` runs (until interrupted); ``RunningProxy`` starts it in
a thread on an already bound socket (tests, the benchmark, embedding).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, Self

from tracestore.errors import InputError

#: The proxy's own failures are logged here (uvicorn's loggers stay quiet below warnings).
LOG = "tracestore.proxy"


class _QuietCut(logging.Filter):
    """uvicorn logs "Exception in ASGI application" with a traceback for an exception after
    the response started; cutting the client's connection on purpose (``UpstreamBroke``:
    the upstream broke, the client must see it too) is no bug, so it is one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        from tracestore.proxy.app import UpstreamBroke

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, UpstreamBroke):
            logging.getLogger(LOG).warning("upstream broke mid-body (%s); the client's "
                                           "connection was cut the same way", exc)
            return False
        return True


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InputError(f"--listen {listen!r} is not HOST:PORT (for example 127.0.0.1:8787)",
                         code="invalid_listen")
    return host.strip("[]"), int(port)


def parse_routes(upstream: str | None, routes: list[str]) -> list[tuple[str, str]]:
    """``--upstream URL`` (every path) and ``--route PREFIX=URL`` (longest prefix wins)."""
    parsed = []
    for spec in routes:
        prefix, sep, url = spec.partition("=")
        if not sep or not prefix.startswith("/"):
            raise InputError(f"--route {spec!r} is not /PREFIX=URL", code="invalid_route")
        parsed.append((prefix, _url(url, spec)))
    if upstream is not None:
        parsed.append(("", _url(upstream, upstream)))
    if not parsed:
        raise InputError("give --upstream URL or at least one --route /PREFIX=URL",
                         code="invalid_route")
    return parsed


def _url(url: str, spec: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise InputError(f"upstream {spec!r} is not an http:// or https:// URL",
                         code="invalid_route")
    return url


#: The client connection's write buffer before the forwarding waits for the client to read
#: (asyncio's default, 64 KiB, is one upstream chunk: every chunk would wait for a drain).
WRITE_BUFFER = 512 * 1024

#: The ASGI scope extension naming the client connection (``ClientLeg``).
CLIENT_LEG = "tracestore.client_leg"


class ClientLeg:
    """What the raw path of ``app.py`` needs of the client's connection, kept here with the
    uvicorn protocol it comes from: the transport to write the upstream's chunked bytes to
    (between uvicorn's own writes of the head and of the last chunk), whether uvicorn frames
    this response chunked, whether the transport's buffer is over ``WRITE_BUFFER``."""

    __slots__ = ("_cycle", "_flow", "transport")

    def __init__(self, protocol: Any) -> None:
        self.transport = protocol.transport
        self._cycle, self._flow = protocol.cycle, protocol.flow

    def chunked(self) -> bool:
        """The response head is out and uvicorn frames the body chunked (it then writes
        only the terminal chunk at the end)."""
        cycle = self._cycle
        return bool(getattr(cycle, "response_started", False)) \
            and getattr(cycle, "chunked_encoding", None) is True \
            and not getattr(cycle, "response_complete", True)

    @property
    def write_paused(self) -> bool:
        return bool(self._flow.write_paused)


def _protocol() -> Any:
    """uvicorn's HTTP/1.1 protocol on httptools' C parser, with a write buffer of
    ``WRITE_BUFFER`` and the connection in each request's scope (``CLIENT_LEG``)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class Protocol(HttpToolsProtocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            transport.set_write_buffer_limits(high=WRITE_BUFFER)

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            if self.parser.should_upgrade() and self._should_upgrade():
                return  # the WebSocket protocol takes the connection over
            # the cycle just made is this request's (a pipelined one's task starts later)
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            extensions[CLIENT_LEG] = ClientLeg(self)

    return Protocol


#: Largest WebSocket message the client leg takes (uvicorn's default, 16 MiB, is under a
#: realtime client's longest audio append; the upstream leg has no bound of its own).
WS_MAX_MESSAGE = 64 << 20


def _config(app: Any, **options: Any) -> Any:
    import uvicorn

    logging.getLogger("uvicorn.error").addFilter(_QuietCut())
    # No Server/Date headers of uvicorn's own: the upstream's are forwarded as they came.
    # WebSocket upgrades go to the websockets library's protocol (``proxy/websocket.py``).
    return uvicorn.Config(app, lifespan="on", http=_protocol(), ws="websockets-sansio",
                          ws_max_size=WS_MAX_MESSAGE, loop="asyncio",
                          server_header=False, date_header=False, access_log=False,
                          log_level="warning", **options)


class UvicornThread:
    """A uvicorn server on a bound socket, run from a daemon thread: entering starts it
    (waiting up to 10 s until it listens), leaving stops it and closes the socket.  The
    proxy's and the desk's in-process servers (tests, benches, ``RunningDesk``)."""

    def __init__(self, server: Any, sock: socket.socket) -> None:
        self.server, self.sock = server, sock
        self.thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        import time

        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


class RunningProxy(UvicornThread):
    """A proxy served from a thread: ``with RunningProxy(app) as proxy: proxy.url``."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.app = app
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on such sockets, and
        # without it each response's first chunk waits for the client's delayed ACK (40 ms)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        super().__init__(uvicorn.Server(_config(app)), sock)


#: Seconds in-flight streams get to finish after SIGTERM or Ctrl-C before they are cut.
DEFAULT_GRACE_S = 30.0


def serve(app: Any, host: str, port: int,
          on_ready: Callable[[], None] | None = None, grace: float = DEFAULT_GRACE_S) -> None:
    """Serve until SIGTERM or Ctrl-C, then stop accepting, give in-flight streams ``grace``
    seconds to finish, cut the rest (each recorded with a reset drain) and return normally,
    so the caller's ``finally`` flushes the recording.  ``on_ready`` is called once the
    socket is bound and accepting (a "listening" line printed before that would send a
    script that waits for it to a refused connection)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and on_ready is not None:
                on_ready()

    with signals_end_cleanly():
        Server(_config(app, host=host, port=port, timeout_graceful_shutdown=grace)).run()


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived again after uvicorn's graceful shutdown."""


@contextlib.contextmanager
def signals_end_cleanly() -> Iterator[None]:
    """uvicorn shuts down gracefully on SIGTERM/SIGINT and then raises the same signal again
    under the handlers it found.  With the default SIGTERM handler that kills the process
    before anything after ``run()`` (the recording's flush) can run, so the handlers here
    turn that second signal into a normal return instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


__all__ = ["CLIENT_LEG", "ClientLeg", "RunningProxy", "parse_listen", "parse_routes", "serve",
           "signals_end_cleanly"]
