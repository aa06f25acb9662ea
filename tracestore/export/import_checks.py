"""Every line of an export checked as the store would have written it.

``import`` used to trust what parsed: 100,000-deep nesting and 5,000-digit integers crashed
the parser, a version of 2**63 the driver, ``schema_version: -1`` the upcaster; positions of
-1, unknown fields, ``recorded_at: "yesterday"`` or ids holding control characters were
stored and later broke ``events``/``audit``; an export with its blob lines removed imported
and then failed ``verify``.  Here every line is bounded and strictly parsed, and every row is
held to what ``EventStore.append`` writes:

* exactly the stored columns (no unknown field), of their types; integers in 1 .. 2**63-1;
* ``schema_version`` between 1 and the type's current version;
* ids, streams and trace ids non-empty printable text (as ``NewEvent`` requires);
* ``recorded_at`` the store's own spelling: ISO 8601, UTC, microseconds;
* ``hash`` 64 lowercase hex digits;
* positions strictly increasing, each stream's versions
  increasing (a complete export: 1, 2, 3, … per stream);
* the payload strict JSON, no deeper than ``MAX_JSON_DEPTH``, valid for its type, and --
  at the type's current schema version -- byte for byte the canonical JSON the store writes;
* every integer field of an event within a 64-bit signed integer (``index: 10**30`` would
  be stored and then break every reader that hands it to the database or a struct);
* an event in an attempt's, a trace's, an evidence or a review stream names that attempt or
  trace in its payload (the stream is how every reader finds it);
* every event id once (the store's own unique index would refuse it later, by a driver
  message);
* every capture an event names has its blob line in the file, with its size and sha256.

Each refusal is an ``InputError`` with a stable code and the line number; the import runs
in one transaction, so nothing is imported.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any, TextIO

from tracestore.errors import InputError

#: Longest line read: a blob line holds a capture of up to ``MAX_INPUT_BYTES`` in base64.
MAX_LINE_CHARS = (256 * 1024 * 1024) * 4 // 3 + 1024 * 1024
MAX_INT = 2**63 - 1
MIN_INT = -(2**63)
ROW_FIELDS: dict[str, type] = {
    "position": int, "id": str, "stream": str, "version": int, "type": str,
    "schema_version": int, "recorded_at": str, "hash": str, "payload": str}
_ALLOWED = frozenset(ROW_FIELDS) | {"trace_id", "trace_version"}
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_CAPTURE_TYPES = ("capture.stored", "capture.segment")


def bounded_lines(handle: TextIO, limit: int | None = None) -> Iterator[str]:
    """Lines of ``handle``, refusing one longer than ``limit`` (``/dev/zero`` has none)."""
    limit = MAX_LINE_CHARS if limit is None else limit
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise InputError(f"line {number} of the export is longer than {limit} characters",
                             code="input_too_large", line=number, limit=limit)
        yield line


def parse_line(line: str, name: str, number: int) -> Any:
    from tracestore.providers.strictjson import StrictJSONError, strict_parse
    from tracestore.wire.limits import MAX_JSON_DEPTH

    try:
        # A line nests at most 3 levels above its payload text (which is a string here).
        return strict_parse(line, max_depth=MAX_JSON_DEPTH)
    except StrictJSONError as exc:
        code = exc.kind if exc.kind != "invalid_json" else "invalid_export"
        raise InputError(f"{name} line {number} is not strict JSON: {exc}", code=code,
                         line=number) from None


def _refuse(message: str, name: str, number: int, code: str = "invalid_export") -> InputError:
    return InputError(f"{name} line {number}: {message}", code=code, line=number)


class RowChecker:
    """Checks rows in file order; ``complete`` exports must number positions and stream
    versions from 1 without gaps."""

    def __init__(self, name: str, *, complete: bool) -> None:
        self.name, self.complete = name, complete
        self.last_position = 0
        self.versions: dict[str, int] = {}
        self.captures: dict[str, int] = {}  # sha256 -> line naming it
        self.blobs: set[str] = set()
        self.ids: set[str] = set()

    def row(self, item: dict[str, Any], number: int) -> dict[str, Any]:
        if set(item) != {"event"}:
            raise _refuse(f"unknown fields {sorted(set(item) - {'event'})}", self.name, number)
        row = item["event"]
        unknown = set(row) - _ALLOWED
        if unknown:
            raise _refuse(f"unknown fields {sorted(unknown)} in an event",
                          self.name, number, "export_unknown_field")
        for key, kind in ROW_FIELDS.items():
            if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
                raise _refuse(f"field {key!r} is missing or not {kind.__name__}",
                              self.name, number)
        self._envelope(row, number)
        if row["id"] in self.ids:
            raise _refuse(f"event id {row['id']!r} appears twice (an event id is unique in a "
                          "store)", self.name, number, "import_duplicate_event")
        self.ids.add(row["id"])
        self._payload(row, number)
        return row

    def _envelope(self, row: dict[str, Any], number: int) -> None:
        from tracestore.events import SCHEMA_VERSIONS

        name = self.name
        for key in ("position", "version", "schema_version"):
            if not 1 <= row[key] <= MAX_INT:
                raise _refuse(f"{key} {row[key]} is not between 1 and 2**63-1", name, number,
                              "export_value_out_of_range")
        if row["type"] not in SCHEMA_VERSIONS:
            raise _refuse(f"unknown event type {row['type']!r}", name, number)
        if row["schema_version"] > SCHEMA_VERSIONS[row["type"]]:
            raise _refuse(f"schema_version {row['schema_version']} of {row['type']} is newer "
                          "than this tracestore reads", name, number, "export_value_out_of_range")
        for key in ("id", "stream", "trace_id"):
            value = row.get(key)
            if key == "trace_id" and value is None:
                continue
            if not isinstance(value, str) or not value or not value.isprintable():
                raise _refuse(f"{key} {value!r} is not non-empty printable text", name,
                              number, "invalid_identifier")
        if not _HEX64.match(row["hash"]):
            raise _refuse("hash is not 64 lowercase hex digits", name, number)
        if not _stored_time(row["recorded_at"]):
            raise _refuse(f"recorded_at {row['recorded_at'][:40]!r} is not a time as the "
                          "store writes it (ISO 8601, UTC, microseconds)", name, number,
                          "export_bad_time")
        # Positions rise; a complete export of a PostgreSQL store may skip some (an
        # append rolled back after reserving them), and its hashes cover each position.
        if row["position"] <= self.last_position:
            raise _refuse(f"position {row['position']} does not follow {self.last_position}",
                          name, number, "export_out_of_order")
        last = self.versions.get(row["stream"], 0)
        if row["version"] <= last or (self.complete and row["version"] != last + 1):
            raise _refuse(f"version {row['version']} of stream {row['stream']!r} does not "
                          f"follow {last}", name, number, "export_out_of_order")
        self.last_position, self.versions[row["stream"]] = row["position"], row["version"]

    def _payload(self, row: dict[str, Any], number: int) -> None:
        from tracestore.events import SCHEMA_VERSIONS, parse_event, upcast
        from tracestore.store.log import canonical_payload

        payload = parse_line(row["payload"], self.name, number)
        if not isinstance(payload, dict) or payload.get("type") != row["type"]:
            raise _refuse("payload is not an object of the row's type", self.name, number)
        event = parse_event(upcast(row["type"], row["schema_version"], payload))
        if row["schema_version"] == SCHEMA_VERSIONS[row["type"]] and \
                canonical_payload(event) != row["payload"].encode("utf-8", "surrogatepass"):
            raise _refuse("payload is not the JSON the store writes for it (a field added, "
                          "dropped or re-spelled)", self.name, number,
                          "export_payload_not_canonical")
        for field, value in _integers(event):
            if not MIN_INT <= value <= MAX_INT:
                shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}…"
                raise _refuse(f"field {field!r} of the {row['type']} payload is {shown}, "
                              "outside a 64-bit signed integer", self.name, number,
                              "export_value_out_of_range")
        owner = _stream_owner(row["stream"], event)
        if owner is not None:
            raise _refuse(owner, self.name, number, "export_stream_mismatch")
        if row["type"] in _CAPTURE_TYPES:
            self.captures.setdefault(event.sha256, number)

    def blob(self, item: dict[str, Any], number: int) -> bytes:
        import base64
        import hashlib

        blob = item["blob"]
        if set(item) != {"blob"} or set(blob) != {"sha256", "size", "base64"}:
            raise _refuse("a blob line holds exactly sha256, size and base64", self.name,
                          number)
        try:
            data = base64.b64decode(blob["base64"], validate=True)
        except (TypeError, ValueError):
            raise _refuse("blob data is not base64", self.name, number) from None
        if hashlib.sha256(data).hexdigest() != blob["sha256"] or blob["size"] != len(data):
            raise _refuse("blob bytes do not match their sha256 and size", self.name, number)
        self.blobs.add(blob["sha256"])
        return data

    def finish(self) -> None:
        missing = [(line, sha) for sha, line in self.captures.items() if sha not in self.blobs]
        if missing:
            line, sha = missing[0]
            raise InputError(
                f"{self.name}: {len(missing)} capture(s) named by events have no blob line "
                f"(first: {sha[:16]}… at line {line}); the store would fail verify. A "
                "redacted export carries no raw captures and cannot be imported when it "
                "names any", code="export_blob_missing", line=line)


def _integers(model: Any, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(field, value) for every integer field of an event, nested models included; free
    JSON (``native``, a request's settings) is the provider's and is not walked."""
    from pydantic import BaseModel

    for field in type(model).model_fields:
        value = getattr(model, field)
        values = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            if isinstance(item, int) and not isinstance(item, bool):
                yield prefix + field, item
            elif isinstance(item, BaseModel):
                yield from _integers(item, f"{prefix}{field}.")


#: Stream kind → the payload field naming its owner (``attempt:A`` holds A's events).
_OWNERS = {"attempt": "attempt_id", "evidence": "attempt_id", "trace": "trace_id"}


def _stream_owner(stream: str, event: Any) -> str | None:
    """Why ``event`` does not belong in ``stream``, or None when it does."""
    kind, _, rest = stream.partition(":")
    if kind == "review":  # review:TEMPLATE:ATTEMPT
        field, owner = "attempt_id", rest.partition(":")[2]  # template names hold no ":"
    elif kind in _OWNERS:
        field, owner = _OWNERS[kind], rest
    else:
        return None
    said = getattr(event, field, None)
    if said is None or said == owner:
        return None
    return (f"an event in stream {stream!r} says {field} {str(said)[:80]!r}: its payload "
            "names another owner than its stream")


def _stored_time(text: str) -> bool:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return value.utcoffset() == dt.timedelta(0) and \
        value.isoformat(timespec="microseconds") == text
