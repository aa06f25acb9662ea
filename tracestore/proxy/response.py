"""One upstream response on an ``UpstreamConnection`` (``network.py``): its head parsed by
llhttp (httptools), its body handed on as the socket delivers it (see ``network.py`` for why
this leg is not httpx)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httptools
import httpx

from tracestore.proxy.chunked import ChunkScanner

if TYPE_CHECKING:
    from tracestore.proxy.network import UpstreamConnection

#: Body bytes parsed but not taken by the forwarding before the socket is no longer read.
MAX_BUFFERED = 2 << 20
#: The longest response head accepted.
MAX_HEAD = 256 * 1024
#: How long an idle upstream connection is kept for reuse (seconds).
KEEPALIVE_EXPIRY = 5.0



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



def _head_end(buf: bytearray, start: int) -> int:
    """The index just past the head's empty line (CRLF CRLF, or a bare LF LF), or -1."""
    crlf = buf.find(b"\r\n\r\n", start)
    lf = buf.find(b"\n\n", start)
    if crlf < 0:
        return lf + 2 if lf >= 0 else -1
    if 0 <= lf < crlf + 2:
        return lf + 2
    return crlf + 4

