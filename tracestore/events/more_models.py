"""The event kinds a stream's release decision never reads: destinations, live-recording
segments, agent runs, reviews and store settings.  Loaded on first use through
``tracestore.events.models`` (see there); import them from ``tracestore.events``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from tracestore.events.model_base import Destination, _Event


class CaptureSegment(_Event):
    """Raw bytes of a live recording, stored as they arrive (``tracestore.recording``).

    A live stream has no whole-capture hash until it ends, and holding it whole would
    make memory grow with the stream, so the recorder stores it in content-addressed
    segments.  Every frame lies inside one segment: ``frame.received`` names the segment's
    ``sha256`` and its offset *within* the segment, so ``blob[offset:offset + length]``
    is the frame's exact bytes, as with ``capture.stored``.
    """

    type: Literal["capture.segment"] = "capture.segment"
    attempt_id: str
    sha256: str
    "Content address of this segment's bytes in the blob table."
    offset: int
    "Absolute offset of the segment's first byte in the attempt's byte stream."
    size: int
    framing: str
    final: bool = False
    "True for the last segment (written when the transport drained)."
    stream_sha256: str | None = None
    "On the final segment: sha256 of the whole stream (equals an ingest of the same bytes)."


class DestinationWritten(_Event):
    """What was written to a destination (ui, history, export, copy, progress), by the harness on release or as the application reported it."""

    type: Literal["destination.written"] = "destination.written"
    attempt_id: str
    destination: Destination
    text: str
    "Exactly what the destination received (fixed progress text for ``progress``)."
    sha256: str
    source: Literal["harness", "application"] = "harness"
    "``harness``: written by tracestore's replay following the policy; ``application``: read from a real app's log."
    observed_at: str | None = None
    "Wall-clock time of the write in the application's log, if recorded (never used to order)."
    shown_as: Literal["cut_off"] | None = None
    """``cut_off`` is the application saying it showed this (partial) text marked as
    cut off after a Stop, which the release policy allows on the UI only.  Left out of the
    stored JSON while unset, so every write recorded before it keeps its bytes."""
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("shown_as",)


class DestinationReadBack(_Event):
    """What a destination actually held when the application read it back."""

    type: Literal["destination.read_back"] = "destination.read_back"
    attempt_id: str
    destination: Destination
    text: str
    sha256: str
    observed_at: str | None = None


class ModelDecision(_Event):
    """A model's proposed action, or the application's admission / refusal of it (v2).

    ``proposed`` keeps the structured reply exactly as the model returned it; ``admitted`` /
    ``refused`` repeat it with the application's verdict (``reason`` holds the refusal code,
    e.g. seed 001's ``unissued_source``).
    """

    type: Literal["model.decision"] = "model.decision"
    attempt_id: str
    stage: Literal["proposed", "admitted", "refused"]
    decision: dict[str, Any]
    reason: str | None = None
    index: int | None = None
    "v2: the decision's ordinal within its run (0-based), joining proposal and verdict."
    implied: bool = False
    "v2: True when the verdict was not logged by the application but follows from its recorded run result (a result file says which actions ran)."


AgentMode = Literal["agent", "fixed"]


class RunOpened(_Event):
    """An agent run starts (seed 001): the question, the limits and the model it runs with."""

    type: Literal["run.opened"] = "run.opened"
    attempt_id: str
    question: str
    version: str
    "The documentation version the run is pinned to (``3.12``)."
    mode: AgentMode
    "``agent``: the model selects retrieval; ``fixed``: code searches once and reads."
    limits: dict[str, int]
    "model_calls, searches, reads, source_bytes, seconds, as the run was configured."
    model: str | None = None
    config: dict[str, Any] | None = None
    "Generation config as recorded (temperature, thinking level …)."
    trial_id: str | None = None
    case_id: str | None = None
    split: str | None = None
    repeat: int | None = None


class ModelCalled(_Event):
    """One model request of a run: its digest (when recorded) and usage exactly as reported."""

    type: Literal["model.called"] = "model.called"
    attempt_id: str
    index: int
    "0-based ordinal of the call within its run."
    request_sha256: str | None = None
    "sha256 of the request body, when the recording holds it (None: not recorded)."
    usage: dict[str, Any] | None = None
    "Provider usage as reported; None when absent (never an invented zero)."


class ToolObserved(_Event):
    """A tool result the application accepted: search metadata, or a read passage."""

    type: Literal["tool.observed"] = "tool.observed"
    attempt_id: str
    index: int
    "0-based ordinal of the observation within its run."
    tool: Literal["search", "read"]
    arguments: dict[str, Any]
    result: dict[str, Any]
    "search: {query, candidates: [{source_id, rank, version}]}; read: {source_id, version, text, url, text_sha256}."


class RunFinished(_Event):
    """How the run ended, as the application recorded it (re-derived, never trusted)."""

    type: Literal["run.finished"] = "run.finished"
    attempt_id: str
    status: Literal["answered", "incomplete", "failed"]
    reason: str
    "seed 001's reason: citation_contract_passed, model_stopped, search_limit, a refusal code …"
    answer: str = ""
    citations: tuple[dict[str, Any], ...] = ()
    "[{source_id, quote, url}] as recorded; the URL came from the read record."
    usage: dict[str, int] | None = None
    "The run's own counters (model_calls, searches, reads, source_bytes) as recorded."
    elapsed_seconds: float | None = None


class RunGraded(_Event):
    """Grading checks recorded alongside a run (seed 001's evaluate.py output)."""

    type: Literal["run.graded"] = "run.graded"
    attempt_id: str
    checks: dict[str, Any]
    by: str = "recorded"


class ReviewFieldSet(_Event):
    """A reviewer sets one field of an attempt's review record, with the evidence positions it rests on (signed when the store uses keys)."""

    type: Literal["review.field_set"] = "review.field_set"
    attempt_id: str
    template: str
    field: str
    value: str
    reviewer: str
    evidence: tuple[int, ...] = ()
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("key_id", "signature")
    key_id: str | None = None
    "The registered reviewer key that signed this value (None: unsigned)."
    signature: str | None = None
    "Ed25519 signature (base64) over the payload without this field."


class ReviewApproved(_Event):
    """A reviewer approves an attempt's review record as it stood (its digest), independent of those who set its fields."""

    type: Literal["review.approved"] = "review.approved"
    attempt_id: str
    template: str
    reviewer: str
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("digest", "override_reason", "key_id",
                                            "signature")
    digest: str | None = None
    "sha256 of the record as approved (field values, evidence, template version)."
    override_reason: str | None = None
    "Why the approver approved while a CONFLICT stood (None: no conflict overridden)."
    key_id: str | None = None
    "The registered reviewer key that signed this approval (None: unsigned)."
    signature: str | None = None
    "Ed25519 signature (base64) over the payload without this field."


class EvidenceAttached(_Event):
    """An external receipt a reviewer attaches to an attempt: a provider's
    cancellation receipt, a UI screenshot's digest, a support ticket id.  The bytes are
    stored content-addressed in the blob table; this event names them, so it can be cited."""

    type: Literal["evidence.attached"] = "evidence.attached"
    attempt_id: str
    kind: str
    "What the receipt is (``cancellation_receipt``, ``screenshot``, ``ticket`` …)."
    sha256: str
    size: int
    filename: str | None = None
    by: str | None = None
    note: str | None = None


class ReviewerAdded(_Event):
    """A reviewer's Ed25519 public key registered with the store.

    The first key a store registers is its owner's, the root of trust; every later
    registration is signed by an admin key registered before it (``signed_by``)."""

    type: Literal["reviewer.added"] = "reviewer.added"
    name: str
    key_id: str
    "sha256 of the raw public key, first 16 hex digits."
    public_key: str
    "The public key as PEM (SubjectPublicKeyInfo)."
    admin: bool = False
    "Whether this key may register (sign the registration of) other reviewers."
    signed_by: str | None = None
    "The key id of the admin who signed this registration (None: the store's first key)."
    signature: str | None = None
    "Ed25519 signature by ``signed_by`` over the registration without this field."


class StoreSetting(_Event):
    """A store-wide setting, recorded as an event (``unsigned_reviews``)."""

    type: Literal["store.setting"] = "store.setting"
    name: str
    value: str
    by: str | None = None
    reason: str | None = None
