"""The mock provider as an ASGI app: each request is matched to a recorded exchange
(``matching.choose``) and answered with that exchange's capture bytes, with its faults.

Every request leaves an entry in ``MockApp.log`` (``GET /.tracestore/mock/log`` serves it as
JSON): the path, the exchange that answered, the status, the body bytes sent, and the byte
at which the client went away — the server's own receipt of a cancellation, which a review
can cite as evidence that the Stop reached the provider.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

from tracestore.mock.matching import choose, error_body
from tracestore.mock.scenario import MockScenario, content_type

LOG_PATH = "/.tracestore/mock/log"
#: A request body larger than this is refused (413) before it is read further.
MAX_REQUEST_BYTES = 16 * 1024 * 1024


class MockCut(Exception):
    """Raised after the last byte before ``cut_at_byte``: the server resets the connection."""


class _QuietMockCut(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, MockCut)


logging.getLogger("uvicorn.error").addFilter(_QuietMockCut())


class MockApp:
    def __init__(self, scenario: MockScenario, bodies: list[bytes]) -> None:
        self.scenario, self.bodies = scenario, bodies
        self.used: set[int] = set()
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == LOG_PATH:
            await _json(send, 200, {"requests": self.log})
            return
        raw = await _body(receive)
        if raw is None:
            refused = {"code": "request_too_large",
                       "message": f"the request body is over {MAX_REQUEST_BYTES} bytes"}
            await _json(send, 413, error_body(path, refused["code"], refused["message"], 413))
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            choice = choose(self.scenario.exchanges, self.used, path, body)
            if choice.index is not None:
                self.used.add(choice.index)
            entry: dict[str, Any] = {"path": path, "exchange": choice.index, "status": 0,
                                     "sent": 0, "client_left_at": None, "completed": False}
            self.log.append(entry)
        if choice.index is None:
            entry["status"] = choice.status
            entry["error"] = choice.code
            await _json(send, choice.status, error_body(path, choice.code, choice.message,
                                                        choice.status))
            return
        await self._play(choice.index, entry, path, receive, send)

    async def _play(self, index: int, entry: dict[str, Any], path: str, receive: Any,
                    send: Any) -> None:
        exchange, data = self.scenario.exchanges[index], self.bodies[index]
        faults = exchange.faults
        if faults.status is not None:
            entry["status"] = faults.status
            headers = [(b"retry-after", str(faults.retry_after).encode())] \
                if faults.retry_after is not None else []
            fault = {"code": "mock_fault", "message": f"a scripted HTTP {faults.status}"}
            await _json(send, faults.status, error_body(
                path, fault["code"], fault["message"], faults.status), headers)
            return
        entry["status"] = 200
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", content_type(exchange).encode())]})
        gone = asyncio.ensure_future(_disconnected(receive))
        end = faults.cut_at_byte if faults.cut_at_byte is not None else len(data)
        stalled = faults.stall_at_byte is None
        at = 0
        try:
            while at < end:
                stop = min(at + faults.chunk_bytes, end)
                if not stalled and faults.stall_at_byte is not None:
                    if at >= faults.stall_at_byte:
                        stalled = True
                        await asyncio.sleep(faults.stall_ms / 1000)
                    else:
                        stop = min(stop, faults.stall_at_byte)
                if at and faults.delay_ms:
                    await asyncio.sleep(faults.delay_ms / 1000)
                if gone.done():
                    if entry["client_left_at"] is None:
                        entry["client_left_at"] = at
                    if not faults.keep_sending_after_disconnect:
                        return
                else:
                    await send({"type": "http.response.body", "body": data[at:stop],
                                "more_body": True})
                    entry["sent"] = stop
                at = stop
            if gone.done() and entry["client_left_at"] is None:
                entry["client_left_at"] = entry["sent"]
            if faults.cut_at_byte is not None:
                raise MockCut(f"scripted reset at byte {faults.cut_at_byte}")
            entry["completed"] = True
            if not gone.done():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _body(receive: Any) -> bytes | None:
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(parts)


async def _json(send: Any, status: int, doc: Any,
                headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = json.dumps(doc).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


__all__ = ["LOG_PATH", "MockApp", "MockCut"]
