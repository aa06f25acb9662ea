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


class StrictJSONError(ValueError):
    """Why a text is not strict JSON; ``kind`` is ``duplicate_json_key``,
    ``invalid_json_constant``, ``json_too_deep`` or ``invalid_json`` (plain syntax)."""

    def __init__(self, message: str, kind: str = "invalid_json") -> None:
        super().__init__(message)
        self.kind = kind


_Refused = StrictJSONError  # the name the wire readers' tests know


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in items:
        if key in result:
            raise StrictJSONError(f"duplicate key {key!r}", "duplicate_json_key")
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise StrictJSONError(f"non-finite constant {name}", "invalid_json_constant")


def nesting_depth(text: str) -> int:
    """The deepest ``[``/``{`` nesting outside strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def strict_parse(text: str, *, max_depth: int | None = None) -> Any:
    """Parse one strict JSON document or raise :class:`StrictJSONError` saying why.

    ``max_depth`` bounds nesting BEFORE parsing, so hostile input never reaches the
    recursive parser's own (much deeper, interpreter-dependent) limit.
    """
    if max_depth is not None and nesting_depth(text) > max_depth:
        raise StrictJSONError(f"nested deeper than {max_depth} levels", "json_too_deep")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except StrictJSONError:
        raise
    except RecursionError as exc:
        raise StrictJSONError("nested too deeply to parse", "json_too_deep") from exc
    except ValueError as exc:
        raise StrictJSONError(str(exc)) from exc


def strict_loads(data: str | bytes, *, offset: int | None = None) -> Any:
    """Parse one JSON document; key order is kept.  Raises ``WireError(code="invalid_json")``."""
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        return strict_parse(text)
    except (StrictJSONError, ValueError) as exc:
        raise WireError(f"payload is not strict JSON: {exc}", code="invalid_json",
                        offset=offset) from exc
