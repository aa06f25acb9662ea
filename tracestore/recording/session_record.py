"""A realtime WebSocket session's messages as they are sent and received, recorded whole.

Both ways of recording a realtime session note its messages here: the proxy's WebSocket leg
(``tracestore.proxy.websocket``) for any client, and ``record_realtime``
(``tracestore.recording.realtime``) for a Python application's own SDK connection.  Each
message is noted with its direction and arrival time (a list append, no encoding); when the
socket closes the session is encoded as the realtime session capture
(``tracestore.ingest.session``), redacted (``tracestore.text.redaction``: client messages
can carry keys) and ingested as ``tracestore ingest`` would: one trace, one attempt per
response.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import time
from typing import Any

log = logging.getLogger("tracestore.recording")

#: The most message bytes one session keeps for its recording.  Past it the session goes
#: on untouched but the recording keeps only the prefix (its turn in flight then reads as
#: cut off, never as whole), so a long audio session cannot grow memory unbounded.
MAX_SESSION_BYTES = 64 * 1024 * 1024


class SessionRecord:
    """One session's messages as they arrived: ``(direction, epoch seconds, text or
    bytes)``, and the close (who closed, code, reason) once there was one."""

    def __init__(self, trace_id: str, attempt_prefix: str | None, path: str,
                 max_bytes: int = MAX_SESSION_BYTES) -> None:
        self.trace_id, self.attempt_prefix, self.path = trace_id, attempt_prefix, path
        self.messages: list[tuple[str, float, str | bytes]] = []
        self.close: tuple[str, float, int | None, str] | None = None
        self.kept_bytes, self.max_bytes = 0, max_bytes
        self.cut = False
        "Set once the session outgrew ``max_bytes``: later messages went on, not kept."

    def add(self, direction: str, data: str | bytes) -> None:
        if self.cut:
            return
        self.kept_bytes += len(data)
        if self.kept_bytes > self.max_bytes:
            self.cut = True
            log.warning("the WebSocket session on %s (trace %s) outgrew %d bytes: its "
                        "recording keeps the messages before; the session goes on",
                        self.path, self.trace_id, self.max_bytes)
            return
        self.messages.append((direction, time.time(), data))

    def closed(self, direction: str, code: int | None, reason: str) -> None:
        if self.close is None:  # the first close is the session's end; its echo is not
            self.close = (direction, time.time(), code, reason)

    def jsonl(self, fields: frozenset[str]) -> bytes:
        """The session capture, every message redacted."""
        from tracestore.text.redaction import redact

        lines = [_line(direction, t, {"data": redact(_data(raw), fields)})
                 for direction, t, raw in self.messages]
        if self.close is not None:
            direction, t, code, reason = self.close
            lines.append(_line(direction, t, {"kind": "close", "data": {
                "code": code, "reason": redact(reason, fields) or None,
                "ok": code in (1000, 1001)}}))
        return b"".join(lines)


def _line(direction: str, t: float, rest: dict[str, Any]) -> bytes:
    iso = dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).isoformat()
    return json.dumps({"dir": direction, "t": iso, **rest}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8") + b"\n"


def _data(raw: str | bytes) -> Any:
    """A message's JSON (Gemini Live sends JSON in binary messages too); a text message that
    is not JSON as its text, a binary one as ``{"binary_base64": …}``."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        if isinstance(raw, str):
            return raw
        return {"binary_base64": base64.b64encode(raw).decode("ascii")}


def write_record(recorder: Any, record: SessionRecord, *, task: Any = None,
                 origin: str | None = None) -> Any:
    """Encode, redact and ingest ``record`` into the recorder's store, in one transaction
    (``write_session``); returns its ``RunsIngested``.  Raises what the ingest raises."""
    from tracestore.ingest.pipeline import IngestOptions, write_session

    data = record.jsonl(recorder.secret_fields)
    options = IngestOptions(trace_id=record.trace_id, attempt_id=record.attempt_prefix,
                            task=task, origin=origin)
    with recorder.lock:
        recorder.check_open()
        return write_session(recorder.store, data, options)


__all__ = ["MAX_SESSION_BYTES", "SessionRecord", "write_record"]
