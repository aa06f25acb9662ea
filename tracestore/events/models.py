"""The event kinds: one frozen pydantic model per stored event type (see ``events.py``).

Models are built lazily (``defer_build``): a command that reads three event types builds
three validators, not twenty-four; ``codec`` picks the model by the stored type.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_serializer

DrainOutcome = Literal["clean", "eof", "error", "reset"]
Destination = Literal["progress", "ui", "history", "export", "copy"]
ANSWER_DESTINATIONS: tuple[str, ...] = ("ui", "history", "export", "copy")


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class TaskRule(BaseModel):
    """Semantic acceptance as data: every answer pattern must match, no forbidden one may."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    description: str | None = None
    "What the task asks, in words, for the review record."
    answer_patterns: tuple[str, ...] = ()
    "Regular expressions that must ALL match the NFC-normalised answer (case-insensitive)."
    forbidden_patterns: tuple[str, ...] = ()
    "Regular expressions of which NONE may match (case-insensitive)."
    semantic: Literal["regex", "reviewer"] | None = None
    """Who decides acceptance: the patterns (``regex``, the default when unset) or a
    reviewer's recorded verdict (``reviewer``: ``tracestore judge``; issue 21)."""

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: Any) -> Any:
        # ``semantic`` is left out while unset, so rules written before it keep their bytes.
        data = handler(self)
        if isinstance(data, dict) and data.get("semantic", 0) is None:
            del data["semantic"]
        return data


class TraceOpened(_Event):
    type: Literal["trace.opened"] = "trace.opened"
    trace_id: str
    "The trace: one user question and every attempt made to answer it."
    task: TaskRule | None = None
    "The semantic acceptance rule; without one, no answer can be accepted."
    profile: str | None = None
    "Output profile name (e.g. ``bedrock-converse-text``); None lets each attempt's API decide."
    comparison: str | None = None
    "Free text naming the comparison pair / revision, for the review record."
    origin: str | None = None
    "Where the trace came from: ``synthetic projection``, ``decoded capture``, ``framed capture``."


class AttemptStarted(_Event):
    type: Literal["attempt.started"] = "attempt.started"
    attempt_id: str
    trace_id: str
    api: str
    "Provider API name (``openai-responses``, ``bedrock-converse-stream`` …)."
    reader: str | None = None
    "The reader (callback set) bound to this attempt when it was opened."
    retry_of: str | None = None
    "The attempt this one retries; a retry is a fresh attempt, never a continuation."
    request: dict[str, Any] | None = None
    "Request settings as recorded (model, endpoint, region …), if known."
    observed_at: str | None = None
    "Wall-clock time the application opened the reader, if recorded (never used to order)."


class CaptureStored(_Event):
    type: Literal["capture.stored"] = "capture.stored"
    attempt_id: str
    sha256: str
    "Content address of the raw bytes in the blob table."
    size: int
    framing: str
    "``sse``, ``ndjson``, ``json-array``, ``chunks``, ``aws-eventstream``, ``projection``."
    filename: str | None = None


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


class FrameReceived(_Event):
    type: Literal["frame.received"] = "frame.received"
    attempt_id: str
    api: str
    native: Any
    "The native object exactly as decoded (key order kept)."
    kinds: tuple[str, ...] = ()
    "Normalized observation kinds at ingest time, for display; projections re-normalize."
    event_name: str | None = None
    "SSE ``event:`` field, when the framing had one."
    reader: str | None = None
    index: int | None = None
    "Index of this frame within its capture or scenario."
    capture_sha256: str | None = None
    offset: int | None = None
    "Byte offset of the frame in the stored capture."
    length: int | None = None
    observed_at: str | None = None
    "Wall-clock time the application observed the frame, if recorded (never used to order)."


class LocalStopped(_Event):
    type: Literal["local.stopped"] = "local.stopped"
    attempt_id: str
    reader: str | None = None
    by: str | None = None
    "Who pressed Stop (user, timeout, application)."
    observed_at: str | None = None


class TransportDrained(_Event):
    type: Literal["transport.drained"] = "transport.drained"
    attempt_id: str
    outcome: DrainOutcome
    detail: str | None = None
    reader: str | None = None
    observed_at: str | None = None


class SemanticJudged(_Event):
    type: Literal["semantic.judged"] = "semantic.judged"
    attempt_id: str
    verdict: Literal["accepted", "rejected"]
    rule: TaskRule
    answer_sha256: str
    failed_patterns: tuple[str, ...] = ()
    "Answer patterns that did not match, then forbidden patterns that did."
    by: str = "rule"
    "``rule`` (the task rule's patterns) or the reviewer who judged (``tracestore judge``)."
    # Issue 21's optional fields are left out of the stored JSON while unset, so events
    # written before them (and the replay's rule verdicts) keep their exact bytes.
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("note", "key_id", "signature")
    note: str | None = None
    "The reviewer's note on a person's verdict."
    key_id: str | None = None
    "The reviewer key that signed a person's verdict (None: unsigned)."
    signature: str | None = None
    "Ed25519 signature (base64) over the payload without this field."


class ReleaseDecided(_Event):
    type: Literal["release.decided"] = "release.decided"
    attempt_id: str
    eligible: bool
    status: str
    reasons: tuple[str, ...]
    policy_version: str
    decided_at_position: int | None
    "The log position the decision was judged at (the last event considered)."
    answer_sha256: str | None = None
    rule_version: int | None = None
    "The task rule version the decision used (1 = the rule ``trace.opened`` holds; None: no rule)."


class DestinationWritten(_Event):
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
    """Issue 18: ``cut_off`` is the application saying it showed this (partial) text marked as
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


class TaskRevised(_Event):
    """A new version of a trace's task rule (version 1 is the one ``trace.opened`` holds)."""

    type: Literal["task.revised"] = "task.revised"
    trace_id: str
    version: int
    "2, 3, …: one more than the newest version before it."
    task: TaskRule
    by: str | None = None


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


class ContractBound(_Event):
    """The output contract a trace's structured answers are judged by (seeds 000 and 004)."""

    type: Literal["contract.bound"] = "contract.bound"
    trace_id: str
    name: str
    "The contract's own name (``seed004-faq``)."
    contract: dict[str, Any]
    "The contract document exactly as given; judges rebuild its validators from it."
    sha256: str
    "sha256 of the document's canonical JSON."


class RequestBound(_Event):
    """The request a trace's attempts answer: seed 000's binding (messages, request hash,
    schema, corpus identity, selected context)."""

    type: Literal["request.bound"] = "request.bound"
    trace_id: str
    binding: dict[str, Any]
    sha256: str
    "Seed 000's digest of the binding; every application frame must carry it."


class FrameRejected(_Event):
    """A frame that could not be read; the frames before it stay recorded and judged."""

    type: Literal["frame.rejected"] = "frame.rejected"
    attempt_id: str
    code: str
    "Why: ``invalid_frame_json`` …"
    offset: int | None = None
    "Byte offset of the rejected frame in the stored capture."
    index: int | None = None
    detail: str | None = None


class ReviewFieldSet(_Event):
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
    """An external receipt a reviewer attaches to an attempt (issue 21): a provider's
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
    """A reviewer's Ed25519 public key registered with the store (issue 21)."""

    type: Literal["reviewer.added"] = "reviewer.added"
    name: str
    key_id: str
    "sha256 of the raw public key, first 16 hex digits."
    public_key: str
    "The public key as PEM (SubjectPublicKeyInfo)."


class StoreSetting(_Event):
    """A store-wide setting, recorded as an event (issue 21: ``unsigned_reviews``)."""

    type: Literal["store.setting"] = "store.setting"
    name: str
    value: str
    by: str | None = None
    reason: str | None = None


Event = Annotated[
    Union[
        TraceOpened, AttemptStarted, CaptureStored, FrameReceived, LocalStopped,
        TransportDrained, SemanticJudged, ReleaseDecided, DestinationWritten, ModelDecision,
        ReviewFieldSet, ReviewApproved, RunOpened, ModelCalled, ToolObserved, RunFinished,
        RunGraded,
        ContractBound, RequestBound, FrameRejected,
        CaptureSegment, DestinationReadBack, TaskRevised,
        EvidenceAttached, ReviewerAdded, StoreSetting,
    ],
    Field(discriminator="type"),
]

EVENT_TYPES: tuple[str, ...] = (
    "trace.opened", "attempt.started", "capture.stored", "frame.received", "local.stopped",
    "transport.drained", "semantic.judged", "release.decided", "destination.written",
    "model.decision", "review.field_set", "review.approved",
    "run.opened", "model.called", "tool.observed", "run.finished", "run.graded",
    "contract.bound", "request.bound", "frame.rejected",
    "capture.segment", "destination.read_back", "task.revised",
    "evidence.attached", "reviewer.added", "store.setting",
)

#: The model of each event type, for validating a payload whose type is already known.
MODELS: dict[str, type[BaseModel]] = {
    model.model_fields["type"].default: model
    for model in Event.__origin__.__args__  # type: ignore[attr-defined]
}
