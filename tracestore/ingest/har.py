"""A HAR file's WebSocket messages into a realtime session capture (pure: bytes in, bytes
out).

Chrome DevTools and Playwright export a WebSocket's messages on its HAR entry as
``_webSocketMessages``: ``{"type": "send"|"receive", "time": <epoch seconds>, "opcode",
"data"}``.  They become the session JSON Lines ``tracestore.ingest.session`` reads, one
message a line: ``send`` is the client's, ``receive`` the server's, and ``time`` the ISO
time ``t`` (so each frame keeps when it was observed).  A text message (opcode 1) is its
JSON; a binary one (opcode 2, base64 in the HAR: Gemini Live sends JSON in binary frames)
is the JSON its bytes hold.  Pings and pongs are the transport's, not messages; a close
frame (opcode 8) is the session's close record.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any

from tracestore.errors import InputError, WireError
from tracestore.providers.strictjson import strict_loads

_HAR_HEAD = re.compile(rb'\A\s*\{\s*"log"\s*:')
_DIRECTIONS = {"send": "client", "receive": "server"}
_CONTROL = frozenset({9, 10})  # ping, pong


def is_har(data: bytes) -> bool:
    """Whether ``data`` looks like a HAR file: a JSON object whose first member is ``log``."""
    return _HAR_HEAD.match(data[:256]) is not None


def _invalid(message: str) -> InputError:
    return InputError(message, code="invalid_har")


def _iso(time: Any) -> str | None:
    if time is None:
        return None
    if not isinstance(time, (int, float)) or isinstance(time, bool):
        raise _invalid(f"a WebSocket message's time {time!r} is not epoch seconds")
    return dt.datetime.fromtimestamp(time, tz=dt.timezone.utc).isoformat()


def _message(index: int, raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping) or raw.get("type") not in _DIRECTIONS:
        raise _invalid(f"WebSocket message {index} is not "
                       '{"type": "send"|"receive", "time", "opcode", "data"}')
    opcode, data = raw.get("opcode", 1), raw.get("data")
    t = _iso(raw.get("time"))
    if opcode in _CONTROL:
        return None
    if opcode == 8:
        return {"dir": "server", "t": t, "kind": "close",
                "data": {"code": None, "reason": data or None, "ok": None}}
    if opcode not in (1, 2) or not isinstance(data, str):
        raise _invalid(f"WebSocket message {index} has opcode {opcode!r} or data that is not "
                       "a string")
    text = data
    if opcode == 2:
        try:
            text = base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise _invalid(f"binary WebSocket message {index} is not base64 of UTF-8 "
                           "text") from exc
    try:
        value = strict_loads(text)
    except WireError as exc:
        raise _invalid(f"WebSocket message {index} is not JSON ({exc.message})") from exc
    return {"dir": _DIRECTIONS[raw["type"]], "t": t, "data": value}


def har_session(data: bytes) -> bytes:
    """The session capture of the HAR's one WebSocket (see the module docstring).

    Raises ``InputError(code="invalid_har")`` for a HAR that does not hold exactly one
    entry with WebSocket messages, or a message that cannot be read."""
    try:
        har = strict_loads(data)
    except WireError as exc:
        raise _invalid(f"the HAR file is not JSON ({exc.message})") from exc
    log = har.get("log") if isinstance(har, Mapping) else None
    entries = log.get("entries") if isinstance(log, Mapping) else None
    if not isinstance(entries, list):
        raise _invalid("the HAR file has no log.entries list")
    sockets = [e["_webSocketMessages"] for e in entries
               if isinstance(e, Mapping) and e.get("_webSocketMessages")]
    if len(sockets) != 1 or not isinstance(sockets[0], list):
        raise _invalid(f"the HAR file holds {len(sockets)} WebSocket entries with messages; "
                       "one session is one WebSocket (export it alone)")
    lines = [m for i, raw in enumerate(sockets[0]) if (m := _message(i, raw)) is not None]
    return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines).encode()


__all__ = ["har_session", "is_har"]
