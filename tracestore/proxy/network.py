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

import httpx

from tracestore.proxy.response import KEEPALIVE_EXPIRY, UpstreamResponse

#: Idle upstream connections kept for reuse (all upstreams together).
MAX_KEEPALIVE = 128


def _ascii(name: str) -> bytes:
    try:
        return name.encode("ascii")
    except UnicodeEncodeError:
        return name.encode("idna")


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
