"""A local OpenAI Realtime upstream (the ``websockets`` library on 127.0.0.1) that plays a
real session's server messages in answer to the client's.

On connect it sends the server messages the session opened with; to each client message it
answers with the server messages that followed that client event's type in the session;
each ``response.create`` plays the session's response again (``_N`` appended to its
response id, N the response's number on this connection), one message every ``pace``
seconds.  A ``response.cancel`` while a response plays is the barge-in: the rest of it is
not sent, and a ``response.done`` with ``status: cancelled`` ends it, as the service does.
Every message sent is kept on ``sent`` (the text as written) and every one received on
``received``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

WILD_WS = Path(__file__).resolve().parents[2] / "shared" / "wild-ws"


class LoopServer:
    """A ``websockets`` server run on its own event loop in a daemon thread: ``_serve(start)``
    starts it (``start`` a coroutine function returning the server), leaving stops it."""

    def _serve(self, start: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)

    @property
    def url(self) -> str:
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class RealtimeUpstream(LoopServer):
    def __init__(self, session: Path, *, pace: float = 0.02) -> None:
        lines = [json.loads(line) for line in session.read_text().splitlines() if line.strip()]
        self.opening: list[Any] = []
        self.answers: dict[str, list[Any]] = {}
        self.pace = pace
        current: list[Any] | None = self.opening
        for line in lines:
            if line["dir"] == "client":
                etype = line["data"].get("type")
                current = self.answers.setdefault(etype, []) if etype not in self.answers \
                    else None
            elif current is not None and line.get("kind") is None:
                current.append(line["data"])
        answer = self.answers.get("response.create", [])
        first = next(i for i, m in enumerate(answer) if m.get("type") == "response.created")
        self.before_response, self.response = answer[:first], answer[first:]
        self.response_id = self.response[0]["response"]["id"]
        self.sent: list[str] = []
        self.received: list[Any] = []
        self.headers: list[tuple[str, str]] = []
        self.server: Any = None

    def __enter__(self) -> RealtimeUpstream:
        from websockets.asyncio.server import serve

        async def start() -> Any:
            return await serve(self._session, "127.0.0.1", 0, max_size=None)

        self._serve(start)
        return self

    async def _session(self, ws: Any) -> None:
        self.headers = list(ws.request.headers.raw_items())
        lock = asyncio.Lock()

        async def send(message: Any) -> None:
            async with lock:
                text = json.dumps(message)
                self.sent.append(text)
                await ws.send(text)

        for message in self.opening:
            await send(message)
        responses = 0
        playing: asyncio.Task | None = None
        cancel = asyncio.Event()
        async for raw in ws:
            message = json.loads(raw)
            self.received.append(message)
            etype = message.get("type")
            if etype == "response.cancel":
                cancel.set()
            elif etype == "response.create":
                if playing is not None:
                    await playing
                responses += 1
                cancel = asyncio.Event()
                playing = asyncio.ensure_future(self._play(send, responses, cancel))
            else:
                for answer in self.answers.get(etype, []):
                    await send(answer)
        if playing is not None:
            playing.cancel()

    async def _play(self, send: Any, number: int, cancel: asyncio.Event) -> None:
        rid = f"{self.response_id}_{number}"
        for message in self.before_response + self.response:
            if cancel.is_set():
                await send({"type": "response.done", "event_id": f"event_cancel_{number}",
                            "response": {"object": "realtime.response", "id": rid,
                                         "status": "cancelled",
                                         "status_details": {"type": "cancelled",
                                                            "reason": "client_cancelled"},
                                         "output": []}})
                return
            text = json.dumps(message).replace(self.response_id, rid)
            await send(json.loads(text))
            await asyncio.sleep(self.pace)


__all__ = ["WILD_WS", "RealtimeUpstream"]


async def until_done(conn, seen: list[bytes], *, cancel_at_delta: bool = False) -> dict:
    """Read raw messages until a ``response.done``; with ``cancel_at_delta``, send
    ``response.cancel`` at the first transcript delta."""
    cancelled = False
    while True:
        raw = await asyncio.wait_for(conn.recv_bytes(), 10)
        seen.append(raw)
        event = json.loads(raw)
        if cancel_at_delta and not cancelled and event["type"].endswith("transcript.delta"):
            await conn.response.cancel()
            cancelled = True
        if event["type"] == "response.done":
            return event
