"""The proxy's upstream leg: HTTP/1.1 on an asyncio protocol, parsed by httptools (C).

    pool = UpstreamPool()
    response = await pool.request("POST", "https://api.openai.com/v1/responses", headers,
                                  body, connect_timeout=10, timeout=600)
    response.status, response.headers          # as the upstream sent them (raw names)
    while pieces := await response.read():     # the body as it arrived, framing removed
        ...
    response.close()                           # before the end: closes the connection

Why not httpx for this leg (it was, until the proxy's throughput round): a streamed body
through httpx goes through httpcore and h11 -- h11 parses the chunked framing in Python,
and every piece climbs several async generators -- which cost more CPU per forwarded MiB
than the client reading the same bytes directly.  Here the socket is read into one buffer
per connection (``asyncio.BufferedProtocol``, no allocation per read), llhttp (the C parser
behind Node's HTTP, through httptools, which uvicorn already uses for the client side)
removes the framing, and the body pieces of each read are handed over together: one wake-up
of the forwarding coroutine per socket read, not one per chunk per layer.

The failures are httpx's exception types with httpx's meanings, so the proxy answers as it
did (and as a client talking to the upstream directly would see them): ``ConnectError`` /
``ConnectTimeout`` before a connection, ``ReadTimeout`` when the upstream is silent for
``timeout`` seconds, ``RemoteProtocolError`` when it closes mid-response or sends what is
not HTTP/1.1, ``ReadError`` / ``WriteError`` for socket errors.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

import httptools
import httpx

#: Bytes read from an upstream socket at once (asyncio's default reads are 256 KiB).
READ_SIZE = 512 * 1024
#: Body bytes parsed but not taken by the forwarding before the socket is no longer read.
MAX_BUFFERED = 2 << 20
#: Idle upstream connections kept for reuse (all upstreams together), and for how long.
MAX_KEEPALIVE = 128
KEEPALIVE_EXPIRY = 5.0


class UpstreamResponse:
    """One response on an ``UpstreamConnection``; the parser's callbacks land here."""

    def __init__(self, conn: UpstreamConnection, method: str, timeout: float | None) -> None:
        self.conn, self.timeout = conn, timeout
        self.loop = conn.loop
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head: asyncio.Future = self.loop.create_future()
        self.pieces: list[bytes] = []
        self.buffered = 0
        self.complete = False
        self.error: BaseException | None = None
        self.head_only = method == "HEAD"
        self.framed = False  # content-length or chunked: else the body ends at close
        self.interim = False
        self.waiter: asyncio.Future | None = None
        self.last = self.loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self.done = False

    # -- parser callbacks ----------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        low = name.lower()
        if low == b"content-length" or low == b"transfer-encoding":
            self.framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # an interim response: the real one follows
            self.headers, self.framed, self.interim = [], False, True
            return
        self.status = status
        if self.head_only or status in (204, 304):
            self.complete = True
        if not self.head.done():
            self.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self.pieces.append(body)
        self.buffered += len(body)
        if self.buffered > MAX_BUFFERED:
            self.conn.pause()

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.complete = True

    # -- from the connection -------------------------------------------------------------
    def feed(self, data: memoryview) -> None:
        self.last = self.loop.time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.fail(httpx.RemoteProtocolError(f"the upstream sent what is not HTTP/1.1: "
                                                f"{exc}"))
            self.conn.abort()
            return
        waiter = self.waiter
        if waiter is not None and (self.pieces or self.complete) and not waiter.done():
            waiter.set_result(None)

    def lost(self, exc: BaseException | None) -> None:
        if self.complete:
            return
        if exc is None and self.head.done() and not self.framed:
            self.complete = True  # a body delimited by the connection's close
        elif not self.head.done():
            self.fail(httpx.RemoteProtocolError("Server disconnected without sending a "
                                                "response.") if exc is None
                      else httpx.ReadError(f"{type(exc).__name__}: {exc}"))
        elif exc is None:
            self.fail(httpx.RemoteProtocolError("peer closed connection without sending "
                                                "complete message body"))
        else:
            self.fail(httpx.ReadError(f"{type(exc).__name__}: {exc}"))
        self._wake()

    def fail(self, exc: BaseException) -> None:
        if self.error is None and not self.complete:
            self.error = exc
        if not self.head.done():
            self.head.set_exception(exc)
            self.head.exception()  # retrieved: whoever awaits it raises it
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the forwarding side -------------------------------------------------------------
    async def start(self) -> None:
        """Wait for the response's head (``ReadTimeout`` after ``timeout`` s of silence)."""
        try:
            async with asyncio.timeout(self.timeout):
                await self.head
        except TimeoutError as exc:
            self.close()
            raise httpx.ReadTimeout("the upstream sent no response in time") from exc

    async def read(self) -> list[bytes]:
        """The body pieces parsed since the last call (at least one); ``[]`` at the end."""
        while not self.pieces:
            if self.complete:
                self._finished()
                return []
            if self.error is not None:
                raise self.error
            self.waiter = self.loop.create_future()
            self.last = self.loop.time()
            if self._timer is None and self.timeout is not None:
                self._timer = self.loop.call_at(self.last + self.timeout, self._check)
            self.conn.resume()
            await self.waiter
            self.waiter = None
        pieces, self.pieces, self.buffered = self.pieces, [], 0
        self.conn.resume()
        return pieces

    def _check(self) -> None:
        self._timer = None
        if self.done or self.complete or self.error is not None:
            return
        waiting = self.waiter is not None and not self.conn.paused
        idle = self.loop.time() - self.last
        if waiting and idle >= self.timeout:  # type: ignore[operator]
            self.fail(httpx.ReadTimeout(f"the upstream sent nothing for {self.timeout:g} s"))
            self.conn.abort()
            return
        self._timer = self.loop.call_at(self.last + self.timeout, self._check)  # type: ignore[operator]

    def _finished(self) -> None:
        if self.done:
            return
        self.done = True
        self._cancel_timer()
        self.conn.finished(self, reusable=not self.head_only and self.framed
                           and self.parser.should_keep_alive())

    def close(self) -> None:
        """Done with this response; an unfinished one closes its connection."""
        if self.done:
            return
        if self.complete and not self.pieces and self.error is None:
            self._finished()
            return
        self.done = True
        self._cancel_timer()
        self.conn.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class UpstreamConnection(asyncio.BufferedProtocol):
    """One TCP (or TLS) connection to an upstream; at most one response at a time."""

    def __init__(self, pool: UpstreamPool, key: tuple[str, str, int]) -> None:
        self.pool, self.key = pool, key
        self.loop = asyncio.get_running_loop()
        self.transport: Any = None
        self._view = memoryview(bytearray(READ_SIZE))
        self.response: UpstreamResponse | None = None
        self.closed = False
        self.paused = False
        self.idle_since = 0.0
        self._drained: asyncio.Future | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        response = self.response
        if response is None or response.done:  # bytes nobody asked for: not reusable
            self.abort()
            return
        response.feed(self._view[:nbytes])

    def eof_received(self) -> bool:
        return False  # the transport closes itself; connection_lost follows

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.response is not None:
            self.response.lost(exc)
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def pause(self) -> None:
        if not self.paused and not self.closed:
            self.paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.paused and not self.closed:
            self.paused = False
            self.transport.resume_reading()

    def abort(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()

    def finished(self, response: UpstreamResponse, *, reusable: bool) -> None:
        if response is not self.response:
            return
        self.response = None
        if reusable and not self.closed and not self.transport.is_closing():
            self.resume()
            self.pool.keep(self)
        else:
            self.abort()

    async def send(self, head: bytes, body: bytes, method: str,
                   timeout: float | None) -> UpstreamResponse:
        response = self.response = UpstreamResponse(self, method, timeout)
        self.transport.write(head + body if len(body) < 65536 else head)
        if len(body) >= 65536:
            self.transport.write(body)
        if self._drained is not None:
            try:
                async with asyncio.timeout(timeout):
                    await self._drained
            except TimeoutError as exc:
                response.close()
                raise httpx.WriteTimeout("the upstream did not take the request in "
                                         "time") from exc
        if self.closed and not response.head.done():
            response.lost(None)
        return response


class UpstreamPool:
    """Connections per (scheme, host, port), reused while idle for ``KEEPALIVE_EXPIRY``."""

    def __init__(self, *, max_keepalive: int = MAX_KEEPALIVE) -> None:
        self.max_keepalive = max_keepalive
        self._idle: dict[tuple[str, str, int], collections.deque[UpstreamConnection]] = {}
        self._count = 0
        self._ssl: ssl.SSLContext | None = None

    def keep(self, conn: UpstreamConnection) -> None:
        if self._count >= self.max_keepalive:
            conn.abort()
            return
        conn.idle_since = time.monotonic()
        self._idle.setdefault(conn.key, collections.deque()).append(conn)
        self._count += 1

    def forget(self, conn: UpstreamConnection) -> None:
        idle = self._idle.get(conn.key)
        if idle is not None and conn in idle:
            idle.remove(conn)
            self._count -= 1

    def _reuse(self, key: tuple[str, str, int]) -> UpstreamConnection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            self._count -= 1
            if conn.closed or conn.transport.is_closing() \
                    or now - conn.idle_since > KEEPALIVE_EXPIRY:
                conn.abort()
                continue
            return conn
        return None

    async def request(self, method: str, url: str, headers: list[tuple[bytes, bytes]],
                      body: bytes, *, connect_timeout: float | None,
                      timeout: float | None) -> UpstreamResponse:
        """Send the request and wait for the response's head."""
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        key = (scheme, host, port)
        conn = self._reuse(key) or await self._connect(key, connect_timeout)
        authority = parts.netloc.rpartition("@")[2]
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        lines = [b"%s %s HTTP/1.1\r\nHost: %s\r\n" % (method.encode("ascii"),
                                                      target.encode("latin-1"),
                                                      authority.encode("idna"))]
        lines += [b"%s: %s\r\n" % (k, v) for k, v in headers]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(b"Content-Length: %d\r\n" % len(body))
        lines.append(b"\r\n")
        response = await conn.send(b"".join(lines), body, method, timeout)
        await response.start()
        return response

    async def _connect(self, key: tuple[str, str, int],
                       timeout: float | None) -> UpstreamConnection:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()
                self._ssl.set_alpn_protocols(["http/1.1"])
            context = self._ssl
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(
                    lambda: UpstreamConnection(self, key), host, port, ssl=context,
                    server_hostname=host if context is not None else None)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection to {host}:{port} in time") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return conn

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.abort()
        self._idle.clear()
        self._count = 0


__all__ = ["UpstreamPool", "UpstreamResponse"]
