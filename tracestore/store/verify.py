"""``verify``: recompute the hash chain and re-hash every stored capture it references.

What a pass proves (docs/store.md, "What verify proves, and what it cannot"): every row
from position 1 to the head is present, in order, and unchanged since it was appended
*relative to its predecessors*; every ``capture.stored`` or ``capture.segment`` event's
raw bytes are present and hash to the address it names; and, given a signed checkpoint, that the log still extends
the head that was signed.  Without a checkpoint, deleting the tail or re-hashing every row
after an edit cannot be detected by looking at the database alone.

Rows are read with their text columns as raw bytes on SQLite (``CAST … AS BLOB``) so a
payload written with another type or with invalid UTF-8 is reported as a broken chain at
its position instead of failing inside the driver.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, LargeBinary, cast, func, select

from tracestore.store.schema import blobs, events

GENESIS_HASH = "0" * 64
# Events that name raw bytes in ts_blobs by sha256: an ingested capture, a live segment.
_CAPTURE_TYPES = frozenset({"capture.stored", "capture.segment"})
_TEXT_COLUMNS = ("id", "stream", "type", "recorded_at", "trace_id", "payload", "hash")


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    count: int
    "Events verified (before the first break, when there is one)."
    first_broken_position: int | None = None
    reason: str | None = None
    head_hash: str = GENESIS_HASH
    "Hash of the last verified event."
    captures_checked: int = 0
    "Distinct stored captures re-hashed."
    checkpoint_position: int | None = None
    "Position of the signed head the log was checked against, if any."


@dataclass(frozen=True)
class Expected:
    """A head the log must still extend: ``hash`` at ``position``."""

    position: int
    hash: str


def _rows(conn: Connection, batch_size: int) -> Iterator[Mapping[str, Any]]:
    sqlite = conn.dialect.name == "sqlite"
    columns: list[Any] = [events.c.position, events.c.version, events.c.schema_version]
    if sqlite:  # PostgreSQL text columns are typed and always valid UTF-8
        columns += [cast(events.c[name], LargeBinary).label(name) for name in _TEXT_COLUMNS]
        columns.append(func.typeof(events.c.payload).label("payload_type"))
    else:
        columns += [events.c[name] for name in _TEXT_COLUMNS]
    last = 0
    while True:
        rows = conn.execute(select(*columns).where(events.c.position > last)
                            .order_by(events.c.position).limit(batch_size)).mappings().all()
        if not rows:
            return
        yield from rows
        last = rows[-1]["position"]


def _text(row: Mapping[str, Any], name: str) -> str | None:
    value = row[name]
    if value is None or isinstance(value, str):
        return value
    return bytes(value).decode("utf-8")  # UnicodeDecodeError: the caller reports it


def _check_row(row: Mapping[str, Any], prev_hash: str, expected_position: int,
               ) -> tuple[str | None, dict[str, Any]]:
    """(why the row breaks the chain or None, its decoded text columns)."""
    position = row["position"]
    if position != expected_position:
        return f"position {expected_position} is missing (next stored is {position})", {}
    stored_as = row.get("payload_type", "text")
    if stored_as != "text":
        return f"payload is stored as {stored_as}, not text", {}
    try:
        text = {name: _text(row, name) for name in _TEXT_COLUMNS}
    except UnicodeDecodeError:
        bad = next(n for n in _TEXT_COLUMNS if not _utf8(row[n]))
        return f"{bad} is not valid UTF-8", {}
    payload = text["payload"]
    if payload is None or any(text[n] is None for n in _TEXT_COLUMNS if n != "trace_id"):
        return "a required column is empty", {}
    digest = chain_hash(prev_hash, position, text["id"], text["stream"], row["version"],
                        text["type"], row["schema_version"], text["recorded_at"],
                        text["trace_id"], payload.encode("utf-8"))
    if digest != text["hash"]:
        return "hash does not match the event's content and its predecessor", text
    return None, text


def _utf8(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return True
    try:
        bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _capture_problem(conn: Connection, payload: str, checked: set[str],
                     ) -> tuple[str | None, str | None]:
    """(sha256 named by a capture.stored payload, why its blob fails or None).

    A capture already re-hashed in this pass (``checked``) is not read again: captures are
    content-addressed, so a second reference names the same bytes.
    """
    try:
        sha = json.loads(payload).get("sha256")
    except (ValueError, AttributeError):
        return None, "the capture event's payload is not a JSON object"
    if not isinstance(sha, str):
        return None, "the capture event's payload names no sha256"
    if sha in checked:
        return sha, None
    row = conn.execute(select(blobs.c.data).where(blobs.c.sha256 == sha)).first()
    if row is None:
        return sha, f"stored capture {sha[:16]}… is missing from ts_blobs"
    if hashlib.sha256(bytes(row[0])).hexdigest() != sha:
        return sha, f"stored capture {sha[:16]}… was changed (its bytes no longer hash to it)"
    return sha, None


def verify_log(conn: Connection, *, batch_size: int = 5000,
               expected: Expected | None = None) -> VerifyResult:
    """Walk the log from position 1; stop at the first break (see the module doc)."""
    prev_hash, count = GENESIS_HASH, 0
    checked: set[str] = set()
    anchor = expected.position if expected else None

    def broken(position: int, reason: str) -> VerifyResult:
        return VerifyResult(False, count, position, reason, prev_hash, len(checked), anchor)

    for row in _rows(conn, batch_size):
        reason, text = _check_row(row, prev_hash, count + 1)
        if reason is not None:
            return broken(row["position"], reason)
        if text["type"] in _CAPTURE_TYPES:
            sha, problem = _capture_problem(conn, text["payload"], checked)
            if problem is not None:
                return broken(row["position"], problem)
            checked.add(sha)  # type: ignore[arg-type]
        prev_hash = text["hash"]
        count += 1
        if expected is not None and count == expected.position and prev_hash != expected.hash:
            return broken(count, "the event at the checkpoint's position has another hash "
                                 "than the signed head (the log was rewritten or forked)")
    if expected is not None and count < expected.position:
        return broken(count + 1, f"the log ends at position {count}, before the signed head "
                                 f"at {expected.position} (events were deleted from the tail)")
    return VerifyResult(True, count, None, None, prev_hash, len(checked), anchor)


def chain_hash(prev_hash: str, position: int, event_id: str, stream: str, version: int,
               type_name: str, schema_version: int, recorded_at: str, trace_id: str | None,
               payload: bytes) -> str:
    """sha256 over the previous hash, the envelope fields and the payload's UTF-8 bytes.

    Fields are joined with the unit separator; ``NewEvent`` refuses non-printable
    characters in ids and stream names, so the join is unambiguous.
    """
    envelope = (f"{prev_hash}\x1f{position}\x1f{event_id}\x1f{stream}\x1f{version}"
                f"\x1f{type_name}\x1f{schema_version}\x1f{recorded_at}\x1f{trace_id or ''}\x1f")
    digest = hashlib.sha256(envelope.encode("utf-8"))
    digest.update(payload)
    return digest.hexdigest()
