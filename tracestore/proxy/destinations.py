"""The proxy's destination endpoint, ``POST /.tracestore/destinations``: how an application
behind the proxy (which does not run tracestore itself) records where it wrote an answer.

It forwards nothing, so it lives apart from the forwarding (``app.py``), whose
``ProxyApp`` builds it and routes ``DESTINATIONS_PATH`` here.  The events and ingest
layers it writes with are imported when ``ProxyApp`` builds it, not when this module loads.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from tracestore.errors import NotFound, TracestoreError
from tracestore.proxy.error_body import _error
from tracestore.proxy.writer import ProxyRecording

DESTINATIONS_PATH = "/.tracestore/destinations"


def destinations_endpoint(recording: ProxyRecording | None) -> Any:
    """``POST /.tracestore/destinations`` ``{"attempt", "destination", "text", "readback",
    "cut_off"}``: the application's destination write (or read-back), recorded after the
    attempt's bytes; ``cut_off``: the UI showed this partial text marked as cut off after a
    Stop, as ``AttemptHandle.destination(..., cut_off=True)`` says it."""
    from tracestore.events import NewEvent, attempt_stream
    from tracestore.ingest.evidence import destination_event

    async def endpoint(request: Request) -> JSONResponse:
        if recording is None:
            return _error(503, "not_recording", "this proxy records nothing")
        try:
            doc = json.loads(await request.body())
            attempt, name, text = doc["attempt"], doc["destination"], doc["text"]
            readback = bool(doc.get("readback", False))
            cut_off = doc.get("cut_off", False)
            if not isinstance(cut_off, bool):
                raise TypeError("cut_off must be true or false")
            if not isinstance(attempt, str) or not isinstance(name, str):
                raise TypeError("attempt and destination must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, "invalid_destination_request", "expected a JSON object "
                          f'{{"attempt", "destination", "text"[, "readback", "cut_off"]}} ({exc})')

        def record() -> int:
            live = recording.attempts.get(attempt)
            if live is not None and live.attempt is not None and live.attempt.started:
                if readback:
                    live.attempt.readback(name, text)
                else:
                    live.attempt.destination(name, text, cut_off=cut_off)
                return 0
            store = recording.recorder.store
            first = store.read(stream=attempt_stream(attempt), limit=1)
            if not first:
                raise NotFound(f"no attempt {attempt!r} in the log", code="attempt_not_found",
                               attempt_id=attempt)
            event = destination_event(attempt, name, text, readback=readback,
                                      cut_off=cut_off)
            store.append([NewEvent(attempt_stream(attempt), event, trace_id=first[0].trace_id)])
            return 0

        try:
            await asyncio.wrap_future(recording.call(record))
        except TracestoreError as exc:
            status = {2: 400, 4: 404}.get(exc.exit_code, 503)
            return _error(status, exc.code, exc.message)
        return JSONResponse({"recorded": True, "attempt": attempt, "destination": name,
                             "readback": readback, "cut_off": cut_off})

    return endpoint
