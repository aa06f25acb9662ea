"""The recording reverse proxy as an ASGI application (Starlette parts; the upstream leg on
httptools, ``network.py``).

    app = proxy_app(routes=[("", "https://api.openai.com")], recording=ProxyRecording(rec))

Every request is forwarded to the upstream its path prefix names, headers byte for byte
minus the hop-by-hop ones (and the proxy's own ``X-Tracestore-*`` headers), body as sent;
the response comes back the same way, each chunk forwarded as the upstream delivered it
(no buffering).  A streamed response (``text/event-stream``, AWS event stream, NDJSON,
Gemini ``streamGenerateContent``) is also an attempt recorded through ``Recorder``
(``writer.py``); its id is sent back in ``X-Tracestore-Attempt``.

How each ending is recorded (see docs/recording.md, "The recording proxy"):

* the upstream body ended → drain as the bytes show (``clean`` after the native terminal);
* the client disconnected → the proxy closes the upstream request; before the native
  terminal that is a local Stop (``by: client``) at the bytes forwarded and drain ``eof``,
  after it a ``clean`` drain; the drain's detail says the proxy closed the upstream;
* the upstream broke mid-body → drain ``reset`` (or ``error``) naming the exception, and the
  client's connection is cut the same way (no final chunk), so it sees the same failure;
* the upstream could not be reached → ``502`` (timeout: ``504``) with a JSON body naming
  the cause; a request that asked for a stream is recorded as an attempt drained ``error``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import zlib
from typing import Any
from urllib.parse import quote

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import request_response

from tracestore.errors import InputError
from tracestore.proxy.chunked import ChunkScanner
# The destination endpoint and the error answer have their own modules; importable from here.
from tracestore.proxy.destinations import DESTINATIONS_PATH, destinations_endpoint
from tracestore.proxy.error_body import _error
from tracestore.proxy.network import UpstreamPool
from tracestore.proxy.response import UpstreamResponse
from tracestore.proxy.server import CLIENT_LEG, ClientLeg
from tracestore.proxy.writer import ProxyRecording, StreamRecord
from tracestore.recording.httpx_capture import api_for_path, request_settings

TRACE_HEADER = "x-tracestore-trace"
RETRY_HEADER = "x-tracestore-retry-of"
ATTEMPT_HEADER = "x-tracestore-attempt"

#: Connection-level headers (RFC 9110 §7.6.1) never forwarded, plus those the connection
#: itself sets (``host``, ``content-length`` are recomputed for the upstream request).
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate",
                        "proxy-authorization", "proxy-connection", "te", "trailer",
                        "transfer-encoding", "upgrade"})

#: Largest request body the proxy reads (it is read whole: the settings come from it).
MAX_REQUEST_BYTES = 64 << 20

_STREAM_TYPES = {"text/event-stream": "sse", "application/vnd.amazon.eventstream":
                 "aws-eventstream", "application/x-ndjson": "ndjson",
                 "application/ndjson": "ndjson"}
_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,200}")


class _ClientLeft(Exception):
    """The client disconnected before its request body was read."""


class UpstreamBroke(Exception):
    """Raised after the response started to cut the client's connection (no final chunk):
    the client then sees a broken body, as it would have from the upstream directly."""


class ProxyShutDown(Exception):
    """The proxy stopped while a stream was still being forwarded (its drain's detail)."""


def _forwarded(raw: list[tuple[bytes, bytes]], *, drop: frozenset[str]) -> list[tuple[bytes, bytes]]:
    named = {v.strip().lower() for k, value in raw if k.lower() == b"connection"
             for v in value.decode("latin-1").split(",")}
    return [(k, v) for k, v in raw
            if (name := k.decode("latin-1").lower()) not in drop and name not in named
            and not name.startswith("x-tracestore-")]


def _header_id(headers: Any, name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        return None
    if not _ID.fullmatch(value):
        raise InputError(f"header {name} must be 1-200 characters of letters, digits and "
                         "._:@/+=-", code="invalid_header")
    return value


class _Decoded:
    """The body as the recorder needs it: raw chunks, or gzip/deflate inflated."""

    def __init__(self, encoding: str) -> None:
        self.inflate = None
        if encoding in ("gzip", "x-gzip"):
            self.inflate = zlib.decompressobj(wbits=31)
        elif encoding == "deflate":
            self.inflate = zlib.decompressobj()

    def __call__(self, chunk: bytes) -> bytes:
        return self.inflate.decompress(chunk) if self.inflate is not None else chunk


class _Unchunked:
    """The raw path's decoding, run by the recorder's writer thread: the chunked framing
    removed (``ChunkScanner``), then gzip/deflate inflated as ``_Decoded`` does."""

    def __init__(self, decode: _Decoded) -> None:
        self.chunks, self.decode = ChunkScanner(), decode

    def __call__(self, raw: bytes) -> bytes:
        return self.decode(self.chunks.decode(raw))


class Proxy:
    """The forwarding logic (one instance per running proxy)."""

    def __init__(self, routes: list[tuple[str, str]], recording: ProxyRecording | None,
                 *, timeout: float | None = 600.0, connect_timeout: float = 10.0) -> None:
        self.routes = sorted(((p.rstrip("/"), u.rstrip("/")) for p, u in routes),
                             key=lambda r: -len(r[0]))
        self.recording = recording
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.pool = UpstreamPool()

    def target(self, path: str, query: bytes, raw_path: bytes | None = None) -> str | None:
        """The upstream URL: the route's base and the rest of the path as the client sent
        it (``raw_path``: percent-escapes kept), the query string as sent."""
        for prefix, base in self.routes:
            if not prefix or path == prefix or path.startswith(prefix + "/"):
                raw = (raw_path or b"").decode("latin-1")
                rest = raw[len(prefix):] if raw.startswith(prefix) else \
                    quote(path[len(prefix):], safe="/:@!$&'()*+,;=-._~")
                return base + rest + ("?" + query.decode("latin-1") if query else "")
        return None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            from tracestore.proxy.websocket import relay

            await relay(self, scope, receive, send)
            return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            response = await self.forward(scope, receive, send, request)
        except _ClientLeft:
            return
        except InputError as exc:
            response = _error(400, exc.code, exc.message)
        if response is not None:
            await response(scope, receive, send)

    async def _body(self, receive: Any) -> bytes:
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientLeft
            parts.append(message.get("body", b""))
            size += len(parts[-1])
            if size > MAX_REQUEST_BYTES:
                raise InputError(f"request body over {MAX_REQUEST_BYTES} bytes",
                                 code="request_too_large")
            if not message.get("more_body"):
                return b"".join(parts)

    async def forward(self, scope: dict, receive: Any, send: Any,
                      request: Request) -> JSONResponse | None:
        url = self.target(scope["path"], scope.get("query_string", b""), scope.get("raw_path"))
        if url is None:
            return _error(404, "no_route", f"no --route prefix matches {scope['path']!r}")
        trace_id = _header_id(request.headers, TRACE_HEADER)
        retry_of = _header_id(request.headers, RETRY_HEADER)
        attempt_id = _header_id(request.headers, ATTEMPT_HEADER) \
            or f"px-{uuid.uuid4().hex[:16]}"
        body = await self._body(receive)
        headers = _forwarded(scope["headers"], drop=HOP_BY_HOP | {"host", "content-length"})
        # What the recorder reads of the request (path, User-Agent, settings), as httpx's.
        upstream = httpx.Request(scope["method"], url, content=body, headers=headers)
        meta = dict(trace_id=trace_id or f"px-trace-{attempt_id}", attempt_id=attempt_id,
                    retry_of=retry_of)
        try:
            response = await self.pool.request(scope["method"], url, headers, body,
                                               connect_timeout=self.connect_timeout,
                                               timeout=self.timeout)
        except httpx.TimeoutException as exc:
            self._unanswered(upstream, body, meta, exc)
            return _error(504, "upstream_timeout", f"the upstream {upstream.url.host} did not "
                          f"answer in time ({type(exc).__name__})")
        except httpx.TransportError as exc:
            self._unanswered(upstream, body, meta, exc)
            return _error(502, "upstream_unreachable", f"the upstream {upstream.url.host} "
                          f"could not be reached: {type(exc).__name__}: {exc}")
        leg = scope.get("extensions", {}).get(CLIENT_LEG)
        try:
            await self._respond(upstream, response, send, receive, meta, leg)
        finally:
            response.close()  # an unfinished body closes the upstream connection
        return None

    def _settings(self, upstream: httpx.Request) -> dict:
        """The request's settings, and its prompt when the recorder keeps prompts."""
        recorder = getattr(self.recording, "recorder", None)
        return request_settings(upstream,
                                prompts=bool(getattr(recorder, "record_prompts", False)),
                                fields=getattr(recorder, "secret_fields", None))

    def _unanswered(self, upstream: httpx.Request, body: bytes, meta: dict,
                    exc: BaseException) -> None:
        """A streaming request whose upstream never answered: an attempt drained ``error``."""
        if self.recording is None or not _asks_for_stream(upstream, body):
            return
        api = api_for_path(upstream.url.path)
        if api == "auto":
            return
        record = StreamRecord(self.recording, api=api, framing=None,
                              settings=self._settings(upstream), **meta)
        record.open()
        record.upstream_broke(exc, reset=False)

    async def _respond(self, upstream: httpx.Request, response: UpstreamResponse, send: Any,
                       receive: Any, meta: dict, leg: ClientLeg | None) -> None:
        ctype = _header(response.headers, b"content-type").split(";", 1)[0].strip().lower()
        streaming = ctype in _STREAM_TYPES or ":streamGenerateContent" in upstream.url.path
        encoding = _header(response.headers, b"content-encoding", "identity").strip().lower()
        record = None
        headers = _forwarded(response.headers, drop=HOP_BY_HOP)
        decode = _Decoded(encoding)
        if streaming and self.recording is not None and (
                encoding == "identity" or decode.inflate is not None):
            record = StreamRecord(self.recording, api=api_for_path(upstream.url.path),
                                  framing=_STREAM_TYPES.get(ctype),
                                  settings=self._settings(upstream), **meta)
            headers += [(ATTEMPT_HEADER.encode(), meta["attempt_id"].encode()),
                        (TRACE_HEADER.encode(), meta["trace_id"].encode())]
            record.open()
        await send({"type": "http.response.start", "status": response.status,
                    "headers": headers})
        if leg is not None and response.mode == "chunked" and leg.chunked():
            # The raw path: the upstream's chunked bytes go to the chunked client leg as
            # they came; the recorder gets the same bytes and removes the framing itself.
            if record is not None:
                record.decode = _Unchunked(decode)
            forwarding = self._forward_raw(response, leg, send, record)
        else:
            forwarding = self._pump(response, send, record, decode)
        pump = asyncio.ensure_future(forwarding)
        gone = asyncio.ensure_future(_disconnected(receive))
        cut = False
        try:
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            cut = True
            # The server cancels what is still streaming when its shutdown grace runs out:
            # the stream was cut by the proxy, not stopped by the user, so it is a reset
            # drain at the bytes forwarded (and the decision follows), never a Stop.
            # Nothing is awaited here: the event loop itself may be closing and would cancel
            # any await again before the drain was handed to the writer.
            pump.cancel()
            gone.cancel()
            if record is not None:
                record.upstream_broke(ProxyShutDown("the proxy shut down before the upstream "
                                                    "body ended"), reset=True)
            # Returning ends the exchange (the server closes the unfinished response); a
            # re-raised cancellation would only be logged as an application error.
            return
        finally:
            if not pump.done() and not cut:  # the client left: stop reading the upstream
                pump.cancel()
                await asyncio.gather(pump, return_exceptions=True)
                if record is not None:
                    record.client_gone()
                gone.cancel()
                return
            gone.cancel()
        failure = pump.exception() if not pump.cancelled() else None
        if failure is None:
            if record is not None:
                record.upstream_ended()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if record is not None:
            record.upstream_broke(failure, reset=isinstance(
                failure, (httpx.NetworkError, httpx.RemoteProtocolError, httpx.TimeoutException)))
        raise UpstreamBroke(f"{type(failure).__name__}: {failure}") from failure

    @staticmethod
    async def _pump(response: UpstreamResponse, send: Any, record: StreamRecord | None,
                    decode: _Decoded) -> None:
        # One pass per socket read of the upstream: the pieces it held, sent as one.
        while pieces := await response.read():
            chunk = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if record is not None:
                record.received(decode(chunk))
                await record.backpressure()

    @staticmethod
    async def _forward_raw(response: UpstreamResponse, leg: ClientLeg, send: Any,
                           record: StreamRecord | None) -> None:
        """Each upstream read is written to the client's transport from the socket callback
        (``sink``); this coroutine only wakes when the body ended or failed, or when the
        client's buffer (or the recorder's backlog) is over its bound, which pauses the
        upstream's reads until it drains."""
        transport, conn = leg.transport, response.conn
        bound = record.owner.max_backlog if record is not None else 0

        def sink(raw: bytes, body: int) -> None:
            if transport.is_closing():  # the client left: its disconnect ends the exchange
                conn.pause()
                response.wake()
                return
            transport.write(raw)
            if record is not None:
                record.received(raw, body)
                if record.backlog > bound and not record.dead:
                    conn.pause()
            if leg.write_paused:
                conn.pause()
            if conn.paused:
                response.wake()

        response.attach(sink)
        while True:
            await response.wait()
            if response.error is not None:
                raise response.error
            if transport.is_closing():
                await asyncio.Event().wait()  # cancelled by _respond on the disconnect
            if leg.write_paused and not response.ended:
                # uvicorn's send waits until the client's buffer drained
                await send({"type": "http.response.body", "body": b"", "more_body": True})
            if record is not None:
                await record.backpressure()
            if response.ended:
                return
            conn.resume()

    async def aclose(self) -> None:
        await self.pool.aclose()


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _header(headers: list[tuple[bytes, bytes]], name: bytes, default: str = "") -> str:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return default


def _asks_for_stream(request: httpx.Request, body: bytes) -> bool:
    path = request.url.path
    if ":streamGenerateContent" in path or path.endswith("/converse-stream"):
        return True
    try:
        parsed = json.loads(body or b"null")
    except ValueError:
        return False
    return isinstance(parsed, dict) and parsed.get("stream") is True


class ProxyApp:
    """The ASGI application: the destination endpoint, and every other path proxied."""

    def __init__(self, routes: list[tuple[str, str]], recording: ProxyRecording | None,
                 **options: Any) -> None:
        self.proxy = Proxy(routes, recording, **options)
        self.recording = recording
        self._destinations = request_response(destinations_endpoint(recording))

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # at shutdown, close the upstream connections
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.proxy.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] == "http" and scope["path"] == DESTINATIONS_PATH:
            if scope["method"] != "POST":
                await _error(405, "method_not_allowed", "POST a JSON object here")(
                    scope, receive, send)
                return
            await self._destinations(scope, receive, send)
            return
        await self.proxy(scope, receive, send)


def proxy_app(routes: list[tuple[str, str]], recording: ProxyRecording | None,
              **options: Any) -> ProxyApp:
    return ProxyApp(routes, recording, **options)


__all__ = ["ATTEMPT_HEADER", "DESTINATIONS_PATH", "HOP_BY_HOP", "RETRY_HEADER",
           "TRACE_HEADER", "Proxy", "ProxyApp", "UpstreamBroke", "proxy_app"]
