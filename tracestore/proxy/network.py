"""The proxy's upstream sockets: httpcore's network backend on plain asyncio streams.

httpcore's default backend on asyncio goes through anyio: every read of a streamed body
enters a cancel scope for its timeout, checks the running async library and maps anyio's
exceptions -- about a third of the proxy's CPU per forwarded chunk.  This backend does the
same with asyncio's own ``StreamReader``/``StreamWriter`` and ``asyncio.timeout``, raising
httpcore's exceptions (``ConnectError``, ``ReadTimeout``, ``ReadError`` …) exactly where
the anyio backend does, so httpx maps them to the same errors the client sees.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

#: The reader's buffer before it stops reading the socket (asyncio's default is 64 KiB).
_LIMIT = 1 << 20


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc) or "timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc) or "timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            await self.aclose()
            raise httpcore.ConnectTimeout(str(exc) or "timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        transport = self._writer.transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            # A pooled connection the server closed (or that has unread bytes) is readable:
            # httpcore then does not reuse it.
            unread = len(self._reader._buffer)  # type: ignore[attr-defined]  # no public count
            return self._reader.at_eof() or bool(unread) \
                or transport.is_closing() or _socket_readable(transport.get_extra_info("socket"))
        return None


def _socket_readable(sock: Any) -> bool:
    if sock is None:
        return True
    import select

    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None,
                          ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, limit=_LIMIT,
                    local_addr=(local_address, 0) if local_address else None)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or "timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = writer.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None,
                                  ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=_LIMIT)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or "timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def upstream_transport(**limits: Any) -> Any:
    """``httpx.AsyncHTTPTransport`` (no retries, these limits) on ``AsyncioBackend``."""
    import httpx

    transport = httpx.AsyncHTTPTransport(retries=0, limits=httpx.Limits(**limits))
    old = transport._pool
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=old._ssl_context, max_connections=old._max_connections,
        max_keepalive_connections=old._max_keepalive_connections,
        keepalive_expiry=old._keepalive_expiry, http1=old._http1, http2=old._http2,
        retries=0, network_backend=AsyncioBackend())
    return transport
