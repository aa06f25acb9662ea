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


@dataclass(frozen=True)
class Expected:
    """A head the log must still extend: ``hash`` at ``position``."""

    position: int
    hash: str


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


__all__ = ["GENESIS_HASH", "Expected", "VerifyResult", "chain_hash"]
