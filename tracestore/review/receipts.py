"""External receipts a reviewer attaches to an attempt (``tracestore evidence``).

A provider's cancellation receipt, a UI screenshot, a support ticket: facts the stream
cannot hold.  The bytes go into the blob table content-addressed (sha256), and one
``evidence.attached`` event on the stream ``evidence:<attempt>`` names them, with the
attempt's trace id, so a review value can cite its position.  ``verify`` re-hashes the
bytes like a capture's.  Pure: the CLI reads the file and appends what this plans.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Final

from tracestore.errors import InputError
from tracestore.events import EvidenceAttached, NewEvent, StoredEvent
from tracestore.review.context import find_attempt

#: A kind is a short slug: ``cancellation_receipt``, ``screenshot``, ``ticket`` …
KIND: Final = re.compile(r"^[a-z0-9_]{1,64}$")
#: Largest receipt accepted (bytes): a receipt, not a capture.
MAX_RECEIPT_BYTES: Final = 16 << 20


def evidence_stream(attempt_id: str) -> str:
    return f"evidence:{attempt_id}"


def plan_receipt(events: Sequence[StoredEvent], attempt_id: str, *, kind: str, data: bytes,
                 filename: str | None = None, by: str | None = None,
                 note: str | None = None) -> NewEvent:
    """The ``evidence.attached`` event for ``data`` (``attempt_not_found`` for a stranger)."""
    if not KIND.match(kind):
        raise InputError(f"evidence kind {kind!r} must match {KIND.pattern} "
                         "(e.g. cancellation_receipt, screenshot, ticket)",
                         code="invalid_evidence_kind", kind=kind)
    if len(data) > MAX_RECEIPT_BYTES:
        raise InputError(f"the receipt has {len(data)} bytes; the limit is "
                         f"{MAX_RECEIPT_BYTES}", code="receipt_too_large", size=len(data))
    trace_id = find_attempt(events, attempt_id).event.trace_id
    sha = hashlib.sha256(data).hexdigest()
    event = EvidenceAttached(attempt_id=attempt_id, kind=kind, sha256=sha, size=len(data),
                             filename=filename, by=by, note=note)
    # Content-addressed id: attaching the same bytes as the same kind twice is a no-op.
    digest = hashlib.sha256(f"{attempt_id}\x1f{kind}\x1f{sha}".encode()).hexdigest()[:32]
    return NewEvent(evidence_stream(attempt_id), event, trace_id=trace_id,
                    id=f"evidence-{digest}")
