"""A whole HTTP response body that is one JSON error object.

A provider that rejects a request (a bad key, an unknown model) answers with one JSON
object instead of a stream, compact or pretty-printed: OpenAI ``{"error": {"message",
"type", "code"}}``, Anthropic ``{"type": "error", "error": {"type", "message"}}``, Gemini
``{"error": {"code": 404, "message", "status": "NOT_FOUND"}}``.  It is valid JSON, just not
a stream: read as ONE frame spanning the body, and decoded by that provider's normalizer
into an ``error`` observation (the attempt fails with its error envelope).
"""

from __future__ import annotations

from typing import Any

from tracestore.errors import WireError
from tracestore.providers.base import is_map
from tracestore.providers.strictjson import strict_loads
from tracestore.wire import Frame, TextFrame

#: A whole-body error is small; larger bodies are never re-read whole.
MAX_ERROR_BODY_BYTES = 64 * 1024


def error_body_provider(native: Any) -> str | None:
    """The provider whose error shape ``native`` has, or ``None`` when it is not one."""
    if not is_map(native) or not is_map(native.get("error")):
        return None
    err = native["error"]
    if native.get("type") == "error" and isinstance(err.get("type"), str):
        return "anthropic-messages"
    if len(native) != 1 or not isinstance(err.get("message"), str):
        return None
    code = err.get("code")
    if isinstance(err.get("status"), str) and isinstance(code, int) and not isinstance(code, bool):
        return "gemini"
    return "openai-chat"


def whole_error_body(data: bytes, framing: str) -> list[Frame] | None:
    """One frame for a pretty-printed JSON error body (NDJSON framing would read its first
    line ``{`` alone and refuse it as not strict JSON); ``None`` for anything else."""
    if framing != "ndjson" or len(data) > MAX_ERROR_BODY_BYTES:
        return None
    first = data.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].strip()
    if first != b"{":
        return None
    try:
        text = data.decode("utf-8")
        native = strict_loads(text.lstrip("\ufeff"), offset=0)
    except (UnicodeDecodeError, WireError):
        return None
    if error_body_provider(native) is None:
        return None
    return [TextFrame(0, len(data), text.lstrip("\ufeff"))]
