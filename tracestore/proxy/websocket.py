"""The proxy's WebSocket leg: a realtime session relayed both ways and recorded whole.

A WebSocket upgrade on a routed path opens the same path on the route's upstream (``ws://``
for an ``http://`` route, ``wss://`` for ``https://``), with the client's headers minus the
hop-by-hop and handshake ones (credentials are forwarded, never stored) and the client's
subprotocols; the client is accepted with the upstream's subprotocol.  A refused upgrade is
answered with the upstream's own status, headers and body; an unreachable upstream with
``502`` (``504`` on a timeout) and a JSON body naming the cause.

Messages go both ways as they arrive, text as text and binary as binary, one at a time and
in order (nothing is buffered), and a close is passed on with its code and reason.  Each
message is noted with its direction and arrival time on the event loop (a list append, no
encoding); when the socket closes -- either side, or the proxy shutting down -- the session
is encoded as the realtime session capture (``tracestore.ingest.session``), redacted
(``tracestore.text.redaction``: client messages can carry keys) and ingested by the
recording's writer thread, as ``tracestore ingest`` would: one trace, one attempt per
response.  A session the ingest refuses is logged and kept on ``failures``; the client's
socket was never waiting for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

from tracestore.errors import StoreError, TracestoreError
from tracestore.recording.session_record import MAX_SESSION_BYTES, SessionRecord, write_record

log = logging.getLogger("tracestore.proxy")

#: Handshake headers the upstream connection sets itself (its own key, version and
#: extensions; the subprotocols are passed as such), never forwarded as they came.
HANDSHAKE = frozenset({"host", "content-length", "sec-websocket-key", "sec-websocket-version",
                       "sec-websocket-extensions", "sec-websocket-protocol",
                       "sec-websocket-accept"})

#: Close codes a close frame may not carry (RFC 6455 §7.4.1): what is sent on instead.
_UNSENDABLE = {1005: 1000, 1006: 1011, 1015: 1011}

#: Seconds a closing handshake with the upstream may take before its connection is dropped.
CLOSE_TIMEOUT = 5.0

#: The origin of a session's trace: its messages are the captured wire, as an ingested
#: session capture's are.
ORIGIN = "capture"


def ws_url(http_url: str) -> str:
    """The upstream's WebSocket URL for a route's http(s) URL."""
    if http_url.startswith("https://"):
        return "wss://" + http_url[len("https://"):]
    if http_url.startswith("http://"):
        return "ws://" + http_url[len("http://"):]
    return http_url


async def relay(proxy: Any, scope: dict, receive: Any, send: Any) -> None:
    """Serve one WebSocket connection of the proxy (module docstring)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidHandshake, InvalidStatus
    from websockets.protocol import State

    from tracestore.proxy.app import (
        ATTEMPT_HEADER, HOP_BY_HOP, TRACE_HEADER, _forwarded, _header_id,
    )

    if (await receive())["type"] != "websocket.connect":
        return
    url = proxy.target(scope["path"], scope.get("query_string", b""), scope.get("raw_path"))
    if url is None:
        await _refuse(send, 404, "no_route", f"no --route prefix matches {scope['path']!r}")
        return
    raw = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    try:
        trace_id = _header_id(raw, TRACE_HEADER)
        prefix = _header_id(raw, ATTEMPT_HEADER)
    except TracestoreError as exc:
        await _refuse(send, 400, exc.code, exc.message)
        return
    trace_id = trace_id or f"px-ws-{uuid.uuid4().hex[:16]}"
    headers = [(k.decode("latin-1"), v.decode("latin-1"))
               for k, v in _forwarded(scope["headers"], drop=HOP_BY_HOP | HANDSHAKE)]
    target = ws_url(url)
    try:
        upstream = await connect(
            target, additional_headers=headers, subprotocols=scope.get("subprotocols") or None,
            user_agent_header=None, max_size=None, open_timeout=proxy.connect_timeout,
            close_timeout=CLOSE_TIMEOUT, proxy=None)
    except InvalidStatus as exc:  # the upstream refused the upgrade: its answer, as sent
        response = exc.response
        await send({"type": "websocket.http.response.start", "status": response.status_code,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                for k, v in response.headers.raw_items()
                                if k.lower() not in HOP_BY_HOP | {"content-length"}]})
        await send({"type": "websocket.http.response.body", "body": response.body or b""})
        return
    except TimeoutError as exc:
        await _refuse(send, 504, "upstream_timeout", f"the upstream {target} did not answer "
                      f"the upgrade in time ({type(exc).__name__})")
        return
    except (OSError, InvalidHandshake) as exc:
        await _refuse(send, 502, "upstream_unreachable", f"the upstream {target} could not "
                      f"be reached: {type(exc).__name__}: {exc}")
        return
    handshake = upstream.response
    answer = [(k.encode("latin-1"), v.encode("latin-1"))
              for k, v in (handshake.headers.raw_items() if handshake is not None else ())
              if k.lower() not in HOP_BY_HOP | HANDSHAKE | {"date", "server"}]
    answer.append((TRACE_HEADER.encode(), trace_id.encode()))
    await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol,
                "headers": answer})
    record = SessionRecord(trace_id, prefix, scope["path"])
    try:
        await _pump(upstream, receive, send, record)
    finally:
        if upstream.state is not State.CLOSED:  # cut short (the proxy stopping): drop it
            upstream.transport.abort()
        if proxy.recording is not None:
            ingest(proxy.recording, record)


async def _pump(upstream: Any, receive: Any, send: Any, record: SessionRecord) -> None:
    from websockets.exceptions import ConnectionClosed

    client_gone = False

    async def from_client() -> None:
        nonlocal client_gone
        while True:
            message = await receive()
            if message["type"] == "websocket.receive":
                text = message.get("text")
                data = text if text is not None else message.get("bytes") or b""
                record.add("client", data)
                try:
                    await upstream.send(data)
                except ConnectionClosed:
                    return  # the upstream closed; from_upstream passes it on
            elif message["type"] == "websocket.disconnect":
                client_gone = True
                code = message.get("code", 1005)
                reason = message.get("reason") or ""
                record.closed("client", code, reason)
                await upstream.close(_UNSENDABLE.get(code, code), reason)
                return

    async def from_upstream() -> None:
        try:
            while True:
                data = await upstream.recv()
                record.add("server", data)
                await send({"type": "websocket.send", "bytes": data} if isinstance(data, bytes)
                           else {"type": "websocket.send", "text": data})
        except ConnectionClosed as exc:
            close = exc.rcvd
            code = close.code if close is not None else 1006
            reason = close.reason if close is not None else ""
            record.closed("server", code, reason)
        if not client_gone:
            try:
                await send({"type": "websocket.close", "code": _UNSENDABLE.get(code, code),
                            "reason": reason})
            except Exception:  # noqa: BLE001 - the client left meanwhile: nothing to tell it
                pass

    client = asyncio.ensure_future(from_client())
    server = asyncio.ensure_future(from_upstream())
    try:
        await asyncio.wait({client, server}, return_when=asyncio.FIRST_COMPLETED)
        if client.done():  # the client closed: the upstream's close reply ends the reads
            await asyncio.wait({server}, timeout=CLOSE_TIMEOUT + 1)
        else:  # the upstream closed: the client's close reply ends the other leg
            await asyncio.wait({client}, timeout=CLOSE_TIMEOUT + 1)
    finally:
        for task in (client, server):
            task.cancel()
        for task in (client, server):
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.warning("a WebSocket leg failed: %s: %s", type(task.exception()).__name__,
                            task.exception())


async def _refuse(send: Any, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send({"type": "websocket.http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "websocket.http.response.body", "body": body})


def ingest(recording: Any, record: SessionRecord) -> None:
    """Hand the session to the recording's writer thread: encoded, redacted, ingested."""
    recording.call(lambda: _ingest(recording, record))


def _ingest(recording: Any, record: SessionRecord) -> None:
    try:
        result = write_record(recording.recorder, record, task=recording.task, origin=ORIGIN)
        recording.sessions.append(result)
    except Exception as exc:  # noqa: BLE001 - the writer outlives any one session
        failure = exc if isinstance(exc, TracestoreError) else StoreError(
            f"recording failed: {type(exc).__name__}: {exc}", code="recording_failed")
        recording.failures.append(failure)
        log.warning("the WebSocket session on %s (trace %s, %d messages) was not recorded "
                    "(%s: %s); the client's socket was unaffected", record.path,
                    record.trace_id, len(record.messages), failure.code, failure.message)


__all__ = ["HANDSHAKE", "MAX_SESSION_BYTES", "SessionRecord", "relay", "ws_url"]
