"""Strict JSON for native payloads.

Why strict: a payload with a duplicated key means two readers may disagree about its
value (Python keeps the last, others the first), and ``NaN``/``Infinity`` are not JSON at
all.  Evidence that is ambiguous is refused at the boundary with a typed error that
points at the frame's byte offset, instead of being silently normalized.

Two more refusals keep "decoded" meaning "storable": a number too large for a
float (``1e999`` would parse as infinity and be stored as ``null``) is ``number_out_of_range``,
and nesting deeper than ``MAX_JSON_DEPTH`` is ``json_too_deep`` -- one bound for parsing,
storing and printing, instead of the parser's ~1000 and the serializer's ~255.  Lone UTF-16
surrogate escapes (``"\\ud83d"``, half an emoji split across two deltas) are accepted: the
store keeps them as the same escape (see ``tracestore.events.to_json_bytes``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from tracestore.errors import WireError
from tracestore.wire.limits import MAX_JSON_DEPTH


class StrictJSONError(ValueError):
    """Why a text is not strict JSON; ``kind`` is ``duplicate_json_key``,
    ``invalid_json_constant``, ``json_too_deep``, ``number_out_of_range`` or
    ``invalid_json`` (plain syntax)."""

    def __init__(self, message: str, kind: str = "invalid_json") -> None:
        super().__init__(message)
        self.kind = kind


_Refused = StrictJSONError  # the name the wire readers' tests know


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(items)  # C speed; a duplicate key shows as a shorter dict
    if len(result) != len(items):
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise StrictJSONError(f"duplicate key {key!r}", "duplicate_json_key")
            seen.add(key)
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


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise StrictJSONError(f"number {literal[:40]}{'…' if len(literal) > 40 else ''} "
                              "is too large for a 64-bit float", "number_out_of_range")
    return value


def _too_deep(text: str, value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays/objects deeper than ``limit``.

    Counting brackets in the text is one C pass and settles nearly every document (fewer
    openers than the limit cannot nest that deep); only the rest are walked.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        node, depth = level.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        level.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def strict_parse(text: str, *, max_depth: int | None = None) -> Any:
    """Parse one strict JSON document or raise :class:`StrictJSONError` saying why.

    ``max_depth`` bounds nesting BEFORE parsing, so hostile input never reaches the
    recursive parser's own (much deeper, interpreter-dependent) limit.  Numbers too large
    for a float are refused (``number_out_of_range``) rather than read as infinity.
    """
    if max_depth is not None and nesting_depth(text) > max_depth:
        raise StrictJSONError(f"nested deeper than {max_depth} levels", "json_too_deep")
    try:
        if text.startswith("\ufeff"):  # what ``json.loads`` says of a str with a BOM
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)",
                                       text, 0)
        # the shared decoder: ``json.loads`` with hooks builds a decoder per call, which
        # cost more than parsing a small frame (same decoder class, same errors)
        return strict_decoder().decode(text)
    except StrictJSONError:
        raise
    except RecursionError as exc:
        raise StrictJSONError("nested too deeply to parse", "json_too_deep") from exc
    except ValueError as exc:
        raise StrictJSONError(str(exc)) from exc


_STRICT_DECODER: json.JSONDecoder | None = None


def strict_decoder() -> json.JSONDecoder:
    """One shared decoder with the strict hooks (``json.loads`` with hooks builds a new
    decoder per call, which cost more than parsing a small frame); use ``raw_decode`` and
    then ``too_deep`` for the depth bound, as ``strict_loads`` does."""
    global _STRICT_DECODER
    if _STRICT_DECODER is None:
        _STRICT_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant,
                                           parse_float=_finite_float)
    return _STRICT_DECODER


too_deep = _too_deep


def strict_loads(data: str | bytes, *, offset: int | None = None,
                 max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse one native payload; key order is kept.

    Raises ``WireError`` at ``offset`` with code ``invalid_json``, ``number_out_of_range``
    or ``json_too_deep`` (deeper than ``MAX_JSON_DEPTH``, one bound for parsing, storing
    and printing).  The depth is checked after parsing, with a C-speed bracket count
    deciding whether a walk is needed, so ordinary frames pay nothing for it.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        value = strict_parse(text)
    except StrictJSONError as exc:
        code = exc.kind if exc.kind in ("json_too_deep", "number_out_of_range") else "invalid_json"
        message = (f"JSON nests deeper than {max_depth} levels" if code == "json_too_deep"
                   else str(exc) if code != "invalid_json" else f"payload is not strict JSON: {exc}")
        raise WireError(message, code=code, offset=offset) from None
    except ValueError as exc:  # UnicodeDecodeError
        raise WireError(f"payload is not strict JSON: {exc}", code="invalid_json",
                        offset=offset) from exc
    if isinstance(value, (dict, list)) and _too_deep(text, value, max_depth):
        raise WireError(f"JSON nests deeper than {max_depth} levels", code="json_too_deep",
                        offset=offset)
    return value
