"""JSON lines export and import: the log as stored, one object per line.

Lossless by construction: each event line carries the stored row itself — position, id,
stream, version, type, schema version, recorded-at time, trace, hash and the payload TEXT
exactly as it was hashed (re-serializing a parsed payload could change a float's spelling
and break the chain).  Raw capture bytes follow as base64 blob lines.

What ``import`` reproduces (into an empty store):

* a complete export (no ``--trace``, no redaction) is the same log byte for byte: same
  positions, trace versions, ids, recorded-at times and hashes (rows of the global chain
  a store kept before per-trace chains, up to the header's ``legacy_chain_end``, included),
  so ``verify`` passes with the same trace heads;
* a trace export keeps ids, streams, versions, recorded-at times and payloads, but its events
  are numbered from 1 and the hash chains are computed anew (positions are part of each
  hash).  Positions written inside payloads
  (``decided_at_position``, review evidence) still name the source store's positions;
* a redacted export imports the same way (its payloads changed, so its hashes must).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

from tracestore.errors import InputError
from tracestore.events import parse_event, upcast

FORMAT = "tracestore-jsonl"
VERSION = 1
#: What a header holds (``header``); any other field is refused on import.
HEADER_FIELDS = frozenset({"format", "version", "trace_id", "complete", "redacted",
                           "tracestore_version", "legacy_chain_end"})
_ROW_FIELDS = ("position", "id", "stream", "version", "type", "schema_version",
               "recorded_at", "hash", "payload")


def header(*, trace_id: str | None, redacted: bool, tracestore_version: str,
           legacy_chain_end: int = 0) -> dict[str, Any]:
    """``legacy_chain_end``: the last position of the source's global chain (rows stored
    before per-trace chains); a complete import hashes those rows as they were."""
    out = {"format": FORMAT, "version": VERSION, "trace_id": trace_id,
           "complete": trace_id is None and not redacted, "redacted": redacted,
           "tracestore_version": tracestore_version}
    if out["complete"] and legacy_chain_end:
        out["legacy_chain_end"] = legacy_chain_end
    return out


def _parsed(row: dict[str, Any]) -> Any:
    return parse_event(upcast(row["type"], row["schema_version"], json.loads(row["payload"])))


def export_lines(read_rows: Callable[[], Iterable[dict[str, Any]]], *, trace_id: str | None,
                 redact: bool, tracestore_version: str, get_blob: Any,
                 legacy_chain_end: int = 0) -> Iterator[str]:
    """The export as text: chunks of whole lines (each line ending in a newline).

    ``read_rows()`` yields the stored rows in order (called twice when redacting: the first
    pass learns each attempt's model text); ``get_blob(sha)`` reads capture bytes.
    """
    from tracestore.export.redact import Redactor
    from tracestore.store.log import canonical_payload

    yield _dump(header(trace_id=trace_id, redacted=redact,
                       tracestore_version=tracestore_version,
                       legacy_chain_end=legacy_chain_end))
    redactor = Redactor() if redact else None
    if redactor is not None:
        redactor.learn_all(_parsed(row) for row in read_rows()
                           if row["type"] == "frame.received")
    captures: list[str] = []
    # Lines are encoded by one prepared encoder and escaped a batch at a time (one pass of
    # the escaper over many lines: the characters it escapes only occur inside strings).
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    batch: list[str] = []
    for row in read_rows():
        out = {k: row[k] for k in _LINE_FIELDS}
        event = None
        if redactor is not None or row["type"] == "capture.stored":
            event = _parsed(row)
        if event is not None and row["type"] == "capture.stored":
            captures.append(event.sha256)
        if redactor is not None:
            out["payload"] = canonical_payload(redactor.event(event)).decode("utf-8")
        batch.append(encode({"event": out}))
        if len(batch) >= _LINES_PER_CHUNK:
            yield _escaped_lines(batch)
            batch = []
    if batch:
        yield _escaped_lines(batch)
    if redactor is not None:
        return  # raw captures are model text too: a redacted export carries none
    for sha in dict.fromkeys(captures):
        data = get_blob(sha)
        if data is not None:
            yield _dump({"blob": {"sha256": sha, "size": len(data),
                                  "base64": base64.b64encode(data).decode("ascii")}})


_LINE_FIELDS = (*_ROW_FIELDS, "trace_id", "trace_version")
_LINES_PER_CHUNK = 1000


def _escaped_lines(lines: list[str]) -> str:
    """Lines as ``_dump`` writes them (``json_text(compact=True)`` + newline), many at once."""
    text = "\n".join(lines)
    if text.isascii() and "\x7f" not in text:
        # json.dumps already escaped every C0 control; in ASCII only DEL is left unsafe.
        return text + "\n"
    from tracestore.text.neutralize import json_escaped

    return json_escaped(text) + "\n"


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


def read_export(lines: Iterable[str] | TextIO, name: str) -> ImportFile:
    """Check the header now; rows are checked one by one as the import consumes them
    (``tracestore.export.import_checks``: every row as the store would have written it)."""
    from tracestore.export.import_checks import RowChecker, bounded_lines, parse_line

    source = bounded_lines(cast(TextIO, lines)) if hasattr(lines, "readline") else lines
    it = iter(enumerate(source, 1))
    first = next(it, None)
    head = parse_line(first[1], name, 1) if first else None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise InputError(f"{name} is not a tracestore export (its first line must be the "
                         f"{FORMAT} header)", code="invalid_export")
    version = head.get("version")
    if type(version) is not int or version != VERSION:
        raise InputError(f"{name} is export version {str(version)[:40]}; this tracestore "
                         f"reads version {VERSION}", code="invalid_export")
    unknown = set(head) - HEADER_FIELDS
    if unknown:
        raise InputError(f"{name} line 1: the header has unknown fields {sorted(unknown)[:5]} "
                         f"(an export header holds only {', '.join(sorted(HEADER_FIELDS))})",
                         code="export_unknown_field", line=1)
    for key in ("complete", "redacted"):
        if type(head.get(key, False)) is not bool:
            raise InputError(f"{name}: header field {key!r} is not true or false",
                             code="invalid_export")
    checker = RowChecker(name, complete=bool(head.get("complete")))
    result = ImportFile(head, iter(()))
    result.rows = _rows(it, name, result.blobs, checker)
    return result


def _rows(lines: Iterator[tuple[int, str]], name: str, blobs: list[bytes], checker: Any
          ) -> Iterator[dict[str, Any]]:
    from tracestore.export.import_checks import parse_line

    for number, line in lines:
        if not line.strip():
            continue
        item = parse_line(line, name, number)
        if isinstance(item, dict) and isinstance(item.get("event"), dict):
            yield checker.row(item, number)
        elif isinstance(item, dict) and isinstance(item.get("blob"), dict):
            blobs.append(checker.blob(item, number))
        else:
            raise InputError(f"{name} line {number}: expected an event or a blob object",
                             code="invalid_export", line=number)
    checker.finish()
