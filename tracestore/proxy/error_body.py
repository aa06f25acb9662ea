"""The proxy's own error answer (``_error``): the forwarding (``app.py``) and the destination
endpoint (``destinations.py``) both answer with it, so it is a module of its own that both
import.
"""

from __future__ import annotations

from starlette.responses import JSONResponse


def _error(status: int, code: str, message: str) -> JSONResponse:
    # Shaped like the providers' own error bodies ({"error": {"type", "message"}}), so an
    # SDK shows the message; ``code`` is the proxy's stable code.
    return JSONResponse({"error": {"type": "tracestore_proxy", "code": code,
                                   "message": message}}, status_code=status)
