"""Strict JSON for native payloads.

Why strict: a payload with a duplicated key means two readers may disagree about its
value (Python keeps the last, others the first), and ``NaN``/``Infinity`` are not JSON at
all.  Evidence that is ambiguous is refused at the boundary with a typed error that
points at the frame's byte offset, instead of being silently normalized.
"""

from __future__ import annotations

import json
from typing import Any

from tracestore.errors import WireError


class _Refused(ValueError):
    pass


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in items:
        if key in result:
            raise _Refused(f"duplicate key {key!r}")
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise _Refused(f"non-finite constant {name}")


def strict_loads(data: str | bytes, *, offset: int | None = None) -> Any:
    """Parse one JSON document; key order is kept.  Raises ``WireError(code="invalid_json")``."""
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except (_Refused, ValueError, RecursionError) as exc:
        raise WireError(f"payload is not strict JSON: {exc}", code="invalid_json",
                        offset=offset) from exc
