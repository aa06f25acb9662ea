"""The hash chain's recipe and the verification results: what the append path needs of
``verify``, without the verifier (which reads the log through SQLAlchemy Core).

``verify.py`` re-exports every name here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

GENESIS_HASH = "0" * 64


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
    code: str | None = None
    """Why it failed when a row did: ``chain_broken`` (an event row), ``blob_damaged`` (a
    capture's row in ts_blobs is not bytes of its recorded size)."""
    missing: tuple[str, ...] = ()
    """Schema objects that should be there and are not (append-only triggers, the views):
    without the triggers a tail DELETE succeeds and the chain alone cannot see it."""
    last_position: int = 0
    "The last position verified (positions may skip on PostgreSQL)."
    tree_size: int = 0
    "Traces in the tree head of what was verified (``tree_head``)."
    tree_root: str = ""
    "The Merkle root over every verified trace's head, hex (empty when verify failed)."


@dataclass(frozen=True)
class Expected:
    """A head the log must still extend: the row at ``position`` carries ``hash`` (a
    ``tracestore-checkpoint-1`` file), or the traces' heads as of ``position`` hash to
    ``root`` over ``tree_size`` leaves (``-2``, ``store.tree_head``)."""

    position: int
    hash: str = ""
    root: str | None = None
    tree_size: int | None = None


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


def trace_chain_hash(prev_hash: str, position: int, trace_version: int, event_id: str,
                     stream: str, version: int, type_name: str, schema_version: int,
                     recorded_at: str, trace_id: str | None, payload: bytes) -> str:
    """The per-trace chain: sha256 over the hash of the previous event OF THE SAME TRACE
    (``GENESIS_HASH`` for its first), the position, the trace version, the envelope fields
    and the payload's UTF-8 bytes.

    It differs from ``chain_hash`` by the trace version after the position, so a row hashed
    under one recipe never verifies under the other.  Appends to different traces never
    read each other's hashes: nothing global is on the write path.
    """
    envelope = (f"{prev_hash}\x1f{position}\x1f{trace_version}\x1f{event_id}\x1f{stream}"
                f"\x1f{version}\x1f{type_name}\x1f{schema_version}\x1f{recorded_at}"
                f"\x1f{trace_id or ''}\x1f")
    digest = hashlib.sha256(envelope.encode("utf-8"))
    digest.update(payload)
    return digest.hexdigest()


__all__ = ["GENESIS_HASH", "Expected", "VerifyResult", "chain_hash", "trace_chain_hash"]
