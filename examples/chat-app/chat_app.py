"""A small web chat app recorded by tracestore.

``POST /ask`` starts an answer: a reader task streams it from an OpenAI-compatible API
through the official ``openai`` SDK and queues each delta on the turn's event queue; the
page reads ``GET /stream/{turn}``, an SSE stream of that queue (the UI loop).  ``POST
/stop/{turn}`` cancels the reader and closes the SDK stream (the upstream request ends
there); ``POST /retry/{turn}`` starts a new attempt of the same turn.

Every write is reported to the recorder on the attempt it belongs to: the UI gets the text
the page was sent (the answer, or after a Stop the partial, marked cut off), the history
list the answer the app keeps.  The SDK's HTTP client has a recording transport, so the
recorder holds the bytes the app read too, and the audit can check the writes against
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tracestore.recording import attempt_of
from tracestore.recording.httpx_capture import AsyncRecordingTransport

#: The app's acceptance rule for an answer: any word (a real app would say more).
DEFAULT_TASK: dict[str, Any] = {"answer_patterns": [r"\w"]}


@dataclass
class Attempt:
    number: int
    reader: asyncio.Task[None] | None = None
    handle: Any = None  # the recorder's handle, known once the response's headers arrived
    state: str = "streaming"  # streaming, done, stopped, failed
    received: str = ""  # what the reader read from its stream
    shown: str = ""  # what the UI loop sent to the page for this attempt


@dataclass
class Turn:
    id: str
    question: str
    scope: Any  # the recorder's turn: every SDK call made inside it is an attempt of it
    attempts: list[Attempt] = field(default_factory=list)
    events: asyncio.Queue[tuple[str, int, str]] = field(default_factory=asyncio.Queue)

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]


class ChatApp:
    """The app: ``ChatApp(recorder, base_url=...).app`` is the ASGI application."""

    def __init__(self, recorder: Any, *, base_url: str | None = None,
                 api_key: str | None = None, model: str = "gpt-4o-mini",
                 task: dict[str, Any] | None = None) -> None:
        self.recorder, self.model = recorder, model
        self.task = task if task is not None else DEFAULT_TASK
        self.client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(transport=AsyncRecordingTransport()))
        self.turns: dict[str, Turn] = {}
        self.history: list[dict[str, str]] = []
        self.app = Starlette(routes=[
            Route("/", self.page), Route("/ask", self.ask, methods=["POST"]),
            Route("/stream/{turn}", self.stream), Route("/stop/{turn}", self.stop,
                                                         methods=["POST"]),
            Route("/retry/{turn}", self.retry, methods=["POST"]),
            Route("/turns/{turn}", self.state), Route("/history", self.history_list),
        ], lifespan=self.lifespan)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self.client.close()

    # -- the reader: one task per attempt, reading its own SDK stream --------------------

    def start_attempt(self, turn: Turn) -> Attempt:
        attempt = Attempt(len(turn.attempts))
        turn.attempts.append(attempt)
        attempt.reader = asyncio.create_task(self.read(turn, attempt))
        return attempt

    async def read(self, turn: Turn, attempt: Attempt) -> None:
        with turn.scope:
            try:
                stream = await self.client.chat.completions.create(
                    model=self.model, stream=True,
                    messages=[{"role": "user", "content": turn.question}])
            except openai.APIError as exc:
                self.fail(turn, attempt, str(exc))
                return
            attempt.handle = attempt_of(stream)
            finish = None
            try:
                async for chunk in stream:
                    for choice in chunk.choices:
                        finish = choice.finish_reason or finish
                        if choice.delta.content:
                            attempt.received += choice.delta.content
                            turn.events.put_nowait(("delta", attempt.number,
                                                    choice.delta.content))
            except Exception as exc:  # the connection broke mid-answer: no answer to keep
                self.fail(turn, attempt, str(exc))
                return
            finally:
                # A Stop cancels this task while it waits for bytes: closing the stream
                # ends the upstream request, and the recorder records the Stop there.
                await stream.close()
        if finish != "stop":
            self.fail(turn, attempt, f"the answer ended early ({finish})")
            return
        attempt.state = "done"
        attempt.handle.destination("history", attempt.received)
        self.history.append({"turn": turn.id, "answer": attempt.received})
        turn.events.put_nowait(("done", attempt.number, ""))

    def fail(self, turn: Turn, attempt: Attempt, message: str) -> None:
        attempt.state = "failed"
        turn.events.put_nowait(("failed", attempt.number, message))

    # -- the UI loop: the turn's events, sent to the page ---------------------------------

    def attempt_of_delta(self, turn: Turn, number: int) -> Attempt:
        """The attempt a delta belongs to: the one whose stream it was read from."""
        return turn.attempts[number]

    async def ui_events(self, turn: Turn) -> AsyncIterator[str]:
        while True:
            kind, number, text = await turn.events.get()
            if kind == "delta":
                attempt = self.attempt_of_delta(turn, number)
                if attempt.state == "stopped":
                    continue  # queued before the Stop: the page never gets it
                attempt.shown += text
                yield _sse("delta", {"attempt": attempt.number, "text": text})
            elif number != turn.current.number:
                continue  # the end of an attempt the page no longer shows
            elif kind == "done":
                attempt = turn.current
                attempt.handle.destination("ui", attempt.shown)
                yield _sse("done", {"attempt": number, "text": attempt.shown})
                return
            else:  # stopped or failed
                yield _sse(kind, {"attempt": number, "text": text})
                return

    # -- the endpoints ----------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return HTMLResponse(PAGE)

    async def ask(self, request: Request) -> Response:
        question = str((await request.json()).get("question") or "").strip()
        if not question:
            return JSONResponse({"error": "ask a question"}, status_code=400)
        turn_id = f"turn-{uuid.uuid4().hex[:12]}"
        turn = Turn(turn_id, question, self.recorder.turn(turn_id, task=self.task))
        self.turns[turn_id] = turn
        self.start_attempt(turn)
        return JSONResponse({"turn": turn_id})

    async def stream(self, request: Request) -> Response:
        turn = self.turns.get(request.path_params["turn"])
        if turn is None:
            return JSONResponse({"error": "no such turn"}, status_code=404)
        return StreamingResponse(self.ui_events(turn), media_type="text/event-stream")

    async def stop(self, request: Request) -> Response:
        turn = self.turns.get(request.path_params["turn"])
        if turn is None:
            return JSONResponse({"error": "no such turn"}, status_code=404)
        attempt = await self.stop_attempt(turn)
        return JSONResponse({"attempt": attempt.number, "state": attempt.state,
                             "shown": attempt.shown})

    async def stop_attempt(self, turn: Turn) -> Attempt:
        attempt = turn.current
        if attempt.state != "streaming":
            return attempt  # already over: the answer stands
        attempt.state = "stopped"
        assert attempt.reader is not None
        attempt.reader.cancel()
        await asyncio.gather(attempt.reader, return_exceptions=True)
        if attempt.shown and attempt.handle is not None:
            attempt.handle.destination("ui", attempt.shown, cut_off=True)
        turn.events.put_nowait(("stopped", attempt.number, attempt.shown))
        return attempt

    async def retry(self, request: Request) -> Response:
        turn = self.turns.get(request.path_params["turn"])
        if turn is None:
            return JSONResponse({"error": "no such turn"}, status_code=404)
        await self.stop_attempt(turn)
        return JSONResponse({"attempt": self.start_attempt(turn).number})

    async def state(self, request: Request) -> Response:
        turn = self.turns.get(request.path_params["turn"])
        if turn is None:
            return JSONResponse({"error": "no such turn"}, status_code=404)
        return JSONResponse({"turn": turn.id, "attempts": [{
            "number": a.number, "state": a.state, "received": a.received, "shown": a.shown,
            "attempt_id": a.handle.attempt_id if a.handle is not None else None,
        } for a in turn.attempts], "history": [h["answer"] for h in self.history
                                              if h["turn"] == turn.id]})

    async def history_list(self, request: Request) -> Response:
        return JSONResponse(self.history)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chat-app</title>
<style>
 body { font: 16px system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; }
 #answer { white-space: pre-wrap; border: 1px solid #ccc; padding: .75rem; min-height: 4rem; }
 #status { color: #666; }
</style></head>
<body>
<h1>chat-app</h1>
<form id="form"><input id="question" size="40" value="What's up?">
 <button id="ask">Ask</button> <button id="stop" type="button" disabled>Stop</button>
 <button id="retry" type="button" disabled>Retry</button></form>
<p id="status"></p>
<div id="answer" aria-live="polite"></div>
<script>
const $ = (id) => document.getElementById(id);
let turn = null, controller = null;

function show(text, status) {
  $("answer").textContent = text;
  $("status").textContent = status;
}

async function listen() {
  controller = new AbortController();
  $("stop").disabled = false; $("retry").disabled = true;
  let text = "";
  show("", "answering…");
  try {
    const response = await fetch(`/stream/${turn}`, {signal: controller.signal});
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\\n\\n")) >= 0) {
        const lines = buffer.slice(0, end).split("\\n");
        buffer = buffer.slice(end + 2);
        const kind = lines[0].slice("event: ".length);
        const data = JSON.parse(lines[1].slice("data: ".length));
        if (kind === "delta") { text += data.text; show(text, "answering…"); }
        else if (kind === "done") show(data.text, "done");
        else if (kind === "stopped") show(data.text, "stopped");
        else if (kind === "failed") show(text, "failed: " + data.text);
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") show(text, "failed: " + error);
  }
  $("stop").disabled = true; $("retry").disabled = false;
}

$("form").onsubmit = async (event) => {
  event.preventDefault();
  const response = await fetch("/ask", {method: "POST",
    body: JSON.stringify({question: $("question").value})});
  turn = (await response.json()).turn;
  listen();
};
$("stop").onclick = async () => {
  const stopped = await (await fetch(`/stop/${turn}`, {method: "POST"})).json();
  controller.abort();
  show(stopped.shown, stopped.state === "stopped" ? "stopped" : stopped.state);
  $("answer").classList.toggle("cut-off", stopped.state === "stopped");
};
$("retry").onclick = async () => {
  await fetch(`/retry/${turn}`, {method: "POST"});
  $("answer").classList.remove("cut-off");
  listen();
};
</script>
</body></html>
"""


def main() -> None:
    """``chat-app``: serve on 127.0.0.1:8000 (``CHAT_APP_LISTEN``), recording into
    ``TRACESTORE_DB`` (default sqlite:///chat-app.db); the SDK reads ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY``."""
    import uvicorn

    from tracestore import Recorder

    host, _, port = os.environ.get("CHAT_APP_LISTEN", "127.0.0.1:8000").rpartition(":")
    with Recorder(os.environ.get("TRACESTORE_DB", "sqlite:///chat-app.db")) as recorder:
        uvicorn.run(ChatApp(recorder).app, host=host, port=int(port))


if __name__ == "__main__":
    main()
