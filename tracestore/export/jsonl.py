"""JSON lines export and import: the log as stored, one object per line.

Lossless by construction: each event line carries the stored row itself — position, id,
stream, version, type, schema version, recorded-at time, trace, hash and the payload TEXT
exactly as it was hashed (re-serializing a parsed payload could change a float's spelling
and break the chain).  Raw capture bytes follow as base64 blob lines.

What ``import`` reproduces (into an empty store):

* a complete export (no ``--trace``, no redaction) is the same log byte for byte: same
  positions, ids, recorded-at times and hashes, so ``verify`` reports the same head hash;
* a trace export keeps ids, streams, versions, recorded-at times and payloads, but its events
  are numbered from 1 and the hash chain is computed anew (the hashes of the source store
  chain through events that are not in the file).  Positions written inside payloads
  (``decided_at_position``, review evidence) still name the source store's positions;
* a redacted export imports the same way (its payloads changed, so its hashes must).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tracestore.errors import InputError
from tracestore.events import SCHEMA_VERSIONS, parse_event, upcast

FORMAT = "tracestore-jsonl"
VERSION = 1
_ROW_FIELDS = {"position": int, "id": str, "stream": str, "version": int, "type": str,
               "schema_version": int, "recorded_at": str, "hash": str, "payload": str}


def header(*, trace_id: str | None, redacted: bool, tracestore_version: str) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "trace_id": trace_id,
            "complete": trace_id is None and not redacted, "redacted": redacted,
            "tracestore_version": tracestore_version}


def _parsed(row: dict[str, Any]) -> Any:
    return parse_event(upcast(row["type"], row["schema_version"], json.loads(row["payload"])))


def export_lines(read_rows: Callable[[], Iterable[dict[str, Any]]], *, trace_id: str | None,
                 redact: bool, tracestore_version: str, get_blob: Any) -> Iterator[str]:
    """The export as text lines (each ending in a newline).

    ``read_rows()`` yields the stored rows in order (called twice when redacting: the first
    pass learns each attempt's model text); ``get_blob(sha)`` reads capture bytes.
    """
    from tracestore.export.redact import Redactor
    from tracestore.store.log import canonical_payload

    yield _dump(header(trace_id=trace_id, redacted=redact,
                       tracestore_version=tracestore_version))
    redactor = Redactor() if redact else None
    if redactor is not None:
        redactor.learn_all(_parsed(row) for row in read_rows()
                           if row["type"] == "frame.received")
    captures: list[str] = []
    for row in read_rows():
        out = {k: row[k] for k in (*_ROW_FIELDS, "trace_id")}
        event = None
        if redactor is not None or row["type"] == "capture.stored":
            event = _parsed(row)
        if row["type"] == "capture.stored":
            captures.append(event.sha256)
        if redactor is not None:
            out["payload"] = canonical_payload(redactor.event(event)).decode("utf-8")
        yield _dump({"event": out})
    if redactor is not None:
        return  # raw captures are model text too: a redacted export carries none
    for sha in dict.fromkeys(captures):
        data = get_blob(sha)
        if data is not None:
            yield _dump({"blob": {"sha256": sha, "size": len(data),
                                  "base64": base64.b64encode(data).decode("ascii")}})


def _dump(value: Any) -> str:
    """One line; C1, bidi, separators and lone surrogates as escapes (the one JSON escaper),
    so every line can be written as UTF-8 and read back as the same text."""
    from tracestore.review.escape import json_text

    return json_text(value, compact=True) + "\n"


@dataclass
class ImportFile:
    """A parsed export: the header, then rows as a generator (blobs fill in as it runs)."""

    header: dict[str, Any]
    rows: Iterator[dict[str, Any]]
    blobs: list[bytes] = field(default_factory=list)


def read_export(lines: Iterable[str], name: str) -> ImportFile:
    """Check the header now; rows are checked one by one as the import consumes them."""
    it = iter(enumerate(lines, 1))
    first = next(it, None)
    head = _parse_line(first[1], name, 1) if first else None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise InputError(f"{name} is not a tracestore export (its first line must be the "
                         f"{FORMAT} header)", code="invalid_export")
    if head.get("version") != VERSION:
        raise InputError(f"{name} is export version {head.get('version')!r}; this tracestore "
                         f"reads version {VERSION}", code="invalid_export")
    result = ImportFile(head, iter(()))
    result.rows = _rows(it, name, result.blobs)
    return result


def _rows(lines: Iterator[tuple[int, str]], name: str, blobs: list[bytes]
          ) -> Iterator[dict[str, Any]]:
    for number, line in lines:
        if not line.strip():
            continue
        item = _parse_line(line, name, number)
        if isinstance(item, dict) and isinstance(item.get("event"), dict):
            yield _check_row(item["event"], name, number)
        elif isinstance(item, dict) and isinstance(item.get("blob"), dict):
            blobs.append(_check_blob(item["blob"], name, number))
        else:
            raise InputError(f"{name} line {number}: expected an event or a blob object",
                             code="invalid_export", line=number)


def _parse_line(line: str, name: str, number: int) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} line {number} is not JSON: {exc.msg}",
                         code="invalid_export", line=number) from exc


def _check_row(row: dict[str, Any], name: str, number: int) -> dict[str, Any]:
    for key, kind in _ROW_FIELDS.items():
        if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
            raise InputError(f"{name} line {number}: field {key!r} is missing or not "
                             f"{kind.__name__}", code="invalid_export", line=number)
    if row.get("trace_id") is not None and not isinstance(row["trace_id"], str):
        raise InputError(f"{name} line {number}: trace_id is not text", code="invalid_export",
                         line=number)
    if row["type"] not in SCHEMA_VERSIONS:
        raise InputError(f"{name} line {number}: unknown event type {row['type']!r}",
                         code="invalid_export", line=number)
    try:
        payload = json.loads(row["payload"])
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} line {number}: payload is not JSON", code="invalid_export",
                         line=number) from exc
    parse_event(upcast(row["type"], row["schema_version"], payload))  # InputError if invalid
    return row


def _check_blob(blob: dict[str, Any], name: str, number: int) -> bytes:
    try:
        data = base64.b64decode(blob["base64"], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{name} line {number}: blob data is not base64",
                         code="invalid_export", line=number) from exc
    if hashlib.sha256(data).hexdigest() != blob.get("sha256"):
        raise InputError(f"{name} line {number}: blob bytes do not match their sha256",
                         code="invalid_export", line=number)
    return data
