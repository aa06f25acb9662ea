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
every piece climbs several async generators and is copied on the way -- which cost more CPU
per forwarded MiB than the client reading the same bytes directly.  Here the response head
is parsed by llhttp (the C parser behind Node's HTTP, through httptools, which uvicorn
already uses for the client side) and the body is taken straight from asyncio's socket
callback: a chunked body (what every provider streams) is forwarded as it came, framing and
all, to a client leg that is chunked too -- ``ChunkScanner`` only finds the size lines (a
few operations per chunk; the bytes between are never touched) to know the body's size and
where the terminal chunk starts -- so a read costs one callback, one ``write`` of the same
``bytes`` object, one reference queued for the recorder.

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

#: Body bytes parsed but not taken by the forwarding before the socket is no longer read.
MAX_BUFFERED = 2 << 20
#: Idle upstream connections kept for reuse (all upstreams together), and for how long.
MAX_KEEPALIVE = 128
KEEPALIVE_EXPIRY = 5.0


class ChunkScanner:
    """Where a chunked body's framing is, chunk by chunk (the bytes in between are skipped,
    never looked at): how many body bytes a read holds, how far it may be forwarded as it
    came, where the terminal chunk starts.  ``decode`` gives the body bytes themselves."""

    def __init__(self) -> None:
        self.data_left = 0
        "Body bytes of the current chunk still to come."
        self.crlf_left = 0
        "Bytes of the CRLF closing the current chunk's data still to come."
        self.done = False
        "The terminal (zero-size) chunk was reached."
        self.terminal_end = 0
        "Where the terminal chunk's size line ends in the data that reached it."
        self._held = b""

    def scan(self, data: bytes, pos: int = 0, out: list[bytes] | None = None) -> tuple[int, int]:
        """Scan ``data[pos:]``: ``(body bytes, end)``; ``data[pos:end]`` is whole chunk
        framing and data (a size line not complete at the end, and the terminal chunk, are
        not in it).  Body pieces are appended to ``out`` when given."""
        n, body = len(data), 0
        while pos < n:
            if self.data_left:
                take = min(self.data_left, n - pos)
                if out is not None:
                    out.append(data[pos:pos + take])
                self.data_left -= take
                body += take
                pos += take
                continue
            if self.crlf_left:
                byte = data[pos]
                if byte == 0x0A:  # the LF ends it (a bare LF is accepted, as llhttp does)
                    self.crlf_left = 0
                elif byte == 0x0D and self.crlf_left == 2:
                    self.crlf_left = 1
                else:
                    raise httpx.RemoteProtocolError("the upstream's chunk data is not "
                                                    "followed by CRLF")
                pos += 1
                continue
            nl = data.find(b"\n", pos, pos + MAX_LINE)
            if nl < 0:
                if n - pos >= MAX_LINE:
                    raise httpx.RemoteProtocolError("the upstream sent a chunk size line "
                                                    f"over {MAX_LINE} bytes")
                return body, pos
            size = _chunk_size(data[pos:nl])
            if size == 0:
                self.done, self.terminal_end = True, nl + 1
                return body, pos
            self.data_left, self.crlf_left = size, 2
            pos = nl + 1
        return body, n

    def decode(self, data: bytes) -> bytes:
        """The body bytes in ``data`` (the framing that follows what came before; what
        follows the terminal chunk is not body)."""
        if self.done:
            return b""
        if self._held:
            data, self._held = self._held + data, b""
        out: list[bytes] = []
        _, end = self.scan(data, 0, out)
        if end < len(data) and not self.done:
            self._held = data[end:]
        return out[0] if len(out) == 1 else b"".join(out)


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip(b" \t\r")
    if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
        raise httpx.RemoteProtocolError(f"the upstream sent a bad chunk size {line[:40]!r}")
    return int(size, 16)


#: The longest chunk-size line (with extensions) and response head accepted.
MAX_LINE = 4096
MAX_HEAD = 256 * 1024


class UpstreamResponse:
    """One response on an ``UpstreamConnection``.

    The head is parsed by llhttp (httptools); the body is then taken one of two ways:
    ``read()`` gives its bytes, framing removed (the ASGI path), or ``attach(sink)`` hands
    each read's bytes *as they came* -- chunked framing included, the terminal chunk not --
    to ``sink(raw, body_size)`` right from the socket callback (the raw path: the client leg
    is chunked too, so the same bytes are forwarded without a copy or a coroutine step)."""

    def __init__(self, conn: UpstreamConnection, method: str, timeout: float | None) -> None:
        self.conn, self.timeout = conn, timeout
        self.loop = conn.loop
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head: asyncio.Future = self.loop.create_future()
        self._head: bytearray | None = bytearray()
        self._final = False
        self.head_only = method == "HEAD"
        self.mode = ""
        "After the head: ``chunked``, ``length``, ``close`` (ends with the connection), ``none``."
        self.chunks: ChunkScanner | None = None
        self._left = 0
        self._held = b""
        self.reusable = False
        self.pieces: list[bytes] = []
        self.buffered = 0
        self._early: list[bytes] | None = []
        "Body bytes that came with the head or before the body was taken (one read, mostly)."
        self.sink: Any = None
        self.ended = False
        "Every body byte arrived (the terminal chunk, Content-Length, the close)."
        self.complete = False
        "The whole message arrived (trailers included): the connection can be reused."
        self.error: BaseException | None = None
        self.waiter: asyncio.Future | None = None
        self.last = self.loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self.done = False

    # -- parser callbacks (the head only) ------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # an interim response: the real one follows
            self.headers = []
            return
        self.status, self._final = status, True

    # -- from the connection -------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        self.last = self.loop.time()
        try:
            if self._head is not None:
                rest = self._take_head(data)
                if rest is None:
                    return
                data = rest
                if not data and not self.ended:
                    return
            if self._early is not None:
                if data:
                    self._early.append(data)
                    self.buffered += len(data)
                    if self.buffered > MAX_BUFFERED:
                        self.conn.pause()
                self._wake()
                return
            self._body(data)
        except httpx.RemoteProtocolError as exc:
            self.fail(exc)
            self.conn.abort()

    def _take_head(self, data: bytes) -> bytes | None:
        buf = self._head
        assert buf is not None
        start = max(0, len(buf) - 3)
        buf += data
        while True:
            end = _head_end(buf, start)
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise httpx.RemoteProtocolError(f"the upstream's response head is over "
                                                    f"{MAX_HEAD} bytes")
                return None
            try:
                self.parser.feed_data(memoryview(buf)[:end])
            except httptools.HttpParserError as exc:
                raise httpx.RemoteProtocolError(f"the upstream sent what is not HTTP/1.1: "
                                                f"{exc}") from exc
            if self._final:
                break
            del buf[:end]  # an interim (1xx) head: the final one follows
            start = 0
        rest = bytes(buf[end:])
        self._head = None
        self._framing()
        if not self.head.done():
            self.head.set_result(None)
        return rest

    def _framing(self) -> None:
        names = {k.lower(): v for k, v in self.headers}
        coding = names.get(b"transfer-encoding", b"").lower()
        connection = names.get(b"connection", b"").lower()
        keep = self.parser.get_http_version() == "1.1" and b"close" not in connection
        if self.head_only or self.status in (204, 304):
            self.mode, self.ended, self.complete = "none", True, True
        elif coding:
            if coding.rsplit(b",", 1)[-1].strip() == b"chunked":
                self.mode, self.chunks = "chunked", ChunkScanner()
            else:
                self.mode, keep = "close", False
        elif b"content-length" in names:
            try:
                self.mode, self._left = "length", int(names[b"content-length"])
            except ValueError:
                raise httpx.RemoteProtocolError("the upstream sent a bad Content-Length") \
                    from None
            if not self._left:
                self.ended = self.complete = True
        else:
            self.mode, keep = "close", False
        self.reusable = keep

    def _body(self, data: bytes) -> None:
        if self.complete:
            if data:
                self.reusable = False  # bytes after the response: the connection is not reused
            return
        mode = self.mode
        if mode == "chunked":
            self._chunked(data)
            return
        if mode == "length":
            if len(data) >= self._left:
                if len(data) > self._left:
                    self.reusable = False
                    data = data[:self._left]
                self.ended = self.complete = True
            self._left -= len(data)
        if data:
            self._deliver(data, len(data), None)
        elif self.ended:
            self._deliver(b"", 0, None)

    def _chunked(self, data: bytes) -> None:
        chunks = self.chunks
        assert chunks is not None
        if chunks.done:
            self._trailers(data)
            return
        if self._held:
            data, self._held = self._held + data, b""
        out: list[bytes] | None = None if self.sink is not None else []
        body, end = chunks.scan(data, 0, out)
        if chunks.done:
            self.ended = True
            self._trailers(data[chunks.terminal_end:])
        elif end < len(data):
            self._held = data[end:]  # a size line not complete yet (it may be the terminal's)
        self._deliver(data if end == len(data) else data[:end], body, out)

    def _trailers(self, data: bytes) -> None:
        """After the terminal chunk's size line: trailer lines (dropped), the empty line."""
        if self._held:
            data, self._held = self._held + data, b""
        while True:
            nl = data.find(b"\n")
            if nl < 0:
                if len(data) > MAX_HEAD:
                    raise httpx.RemoteProtocolError("the upstream's trailers are too long")
                self._held = data
                return
            line, data = data[:nl], data[nl + 1:]
            if line in (b"", b"\r"):
                self.complete = True
                if data:
                    self.reusable = False  # bytes after the response
                if self.done:
                    self._release()
                return

    def _deliver(self, raw: bytes, body: int, out: list[bytes] | None) -> None:
        sink = self.sink
        if sink is not None:
            if raw:
                sink(raw, body)
            if self.ended:
                self._wake()
            return
        if out is not None:
            raw = out[0] if len(out) == 1 else b"".join(out)
        if raw:
            self.pieces.append(raw)
            self.buffered += len(raw)
            if self.buffered > MAX_BUFFERED:
                self.conn.pause()
        self._wake()

    def lost(self, exc: BaseException | None) -> None:
        if self.ended:
            self.complete = True
            return
        if exc is None and self.head.done() and self.mode == "close":
            self.ended = self.complete = True  # a body delimited by the connection's close
            self._wake()
            return
        if not self.head.done():
            self.fail(httpx.RemoteProtocolError("Server disconnected without sending a "
                                                "response.") if exc is None
                      else httpx.ReadError(f"{type(exc).__name__}: {exc}"))
        elif exc is None:
            self.fail(httpx.RemoteProtocolError("peer closed connection without sending "
                                                "complete message body"))
        else:
            self.fail(httpx.ReadError(f"{type(exc).__name__}: {exc}"))

    def fail(self, exc: BaseException) -> None:
        if self.error is None and not self.ended:
            self.error = exc
        if not self.head.done():
            self.head.set_exception(exc)
            self.head.exception()  # retrieved: whoever awaits it raises it
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wake(self) -> None:
        """Wake the forwarding coroutine (a sink that paused the reads)."""
        self._wake()

    # -- the forwarding side -------------------------------------------------------------
    async def start(self) -> None:
        """Wait for the response's head (``ReadTimeout`` after ``timeout`` s of silence)."""
        try:
            async with asyncio.timeout(self.timeout):
                await self.head
        except TimeoutError as exc:
            self.close()
            raise httpx.ReadTimeout("the upstream sent no response in time") from exc

    def _take_early(self) -> None:
        early, self._early = self._early, None
        self.buffered = 0
        for data in early or ():
            self._body(data)
        if not early and self.ended:
            self._wake()

    def attach(self, sink: Any) -> None:
        """The raw path: ``sink(raw, body_size)`` gets each read's bytes from now on."""
        self.sink = sink
        try:
            self._take_early()
        except httpx.RemoteProtocolError as exc:
            self.fail(exc)
            self.conn.abort()
        self.conn.resume()

    async def wait(self) -> None:
        """Wait (raw path) until the body ended, failed, or the sink paused the reads."""
        if self.ended or self.error is not None or self.conn.paused:
            return
        await self._wait()

    async def _wait(self) -> None:
        self.waiter = self.loop.create_future()
        self.last = self.loop.time()
        if self._timer is None and self.timeout is not None:
            self._timer = self.loop.call_at(self.last + self.timeout, self._check)
        try:
            await self.waiter
        finally:
            self.waiter = None

    async def read(self) -> list[bytes]:
        """The body pieces (framing removed) since the last call; ``[]`` at the end."""
        if self._early is not None:
            try:
                self._take_early()
            except httpx.RemoteProtocolError as exc:
                self.fail(exc)
                self.conn.abort()
        while not self.pieces:
            if self.ended:
                self._finished()
                return []
            if self.error is not None:
                raise self.error
            self.conn.resume()
            await self._wait()
        pieces, self.pieces, self.buffered = self.pieces, [], 0
        self.conn.resume()
        return pieces

    def _check(self) -> None:
        self._timer = None
        if self.done or self.ended or self.error is not None:
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
        if self.reusable and not self.complete:
            # the body ended, the terminal chunk's last bytes are still on their way: the
            # connection is kept for them (``_trailers``), closed if they do not come soon
            self.loop.call_later(KEEPALIVE_EXPIRY, self._release)
            return
        self._release()

    def _release(self) -> None:
        self.conn.finished(self, reusable=self.reusable and self.complete)

    def close(self) -> None:
        """Done with this response; an unfinished one closes its connection."""
        if self.done:
            return
        if self.ended and not self.pieces and self.error is None:
            self._finished()
            return
        self.done = True
        self._cancel_timer()
        self.conn.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _ascii(name: str) -> bytes:
    try:
        return name.encode("ascii")
    except UnicodeEncodeError:
        return name.encode("idna")


def _head_end(buf: bytearray, start: int) -> int:
    """The index just past the head's empty line (CRLF CRLF, or a bare LF LF), or -1."""
    crlf = buf.find(b"\r\n\r\n", start)
    lf = buf.find(b"\n\n", start)
    if crlf < 0:
        return lf + 2 if lf >= 0 else -1
    if 0 <= lf < crlf + 2:
        return lf + 2
    return crlf + 4


class UpstreamConnection(asyncio.Protocol):
    """One TCP (or TLS) connection to an upstream; at most one response at a time.  Each
    read is a new ``bytes`` (asyncio's, up to 256 KiB): the raw path forwards and records
    that very object, so the body is never copied on the event loop."""

    def __init__(self, pool: UpstreamPool, key: tuple[str, str, int]) -> None:
        self.pool, self.key = pool, key
        self.loop = asyncio.get_running_loop()
        self.transport: Any = None
        self.response: UpstreamResponse | None = None
        self.closed = False
        self.paused = False
        self.idle_since = 0.0
        self._drained: asyncio.Future | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or response.complete and response.done:
            self.abort()  # bytes nobody asked for: not reusable
            return
        response.feed(data)

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
        if parts.port is not None and parts.port == (443 if scheme == "https" else 80):
            authority = authority.rpartition(":")[0]  # as httpx sends it: no default port
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        lines = [b"%s %s HTTP/1.1\r\nHost: %s\r\n" % (method.encode("ascii"),
                                                      target.encode("latin-1"),
                                                      _ascii(authority))]
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
