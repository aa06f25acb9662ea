"""The immutable event vocabulary.

Each event kind is a pydantic model discriminated on a literal ``type``.  The type names are
stable strings (``frame.received``), never Python paths, because they are stored forever.
Every kind has a ``SCHEMA_VERSION``; when a kind's shape changes, bump it and add an upcaster
to ``UPCASTERS`` so old rows still load.

A ``StoredEvent`` is an event as the log holds it: its payload model plus the envelope the
store assigned (global position, stream, stream version, recorded-at time, hash).
Projections take ``StoredEvent`` sequences and nothing else.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from tracestore.errors import InputError

DrainOutcome = Literal["clean", "eof", "error", "reset"]
Destination = Literal["progress", "ui", "history", "export", "copy"]
ANSWER_DESTINATIONS: tuple[str, ...] = ("ui", "history", "export", "copy")


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskRule(BaseModel):
    """Semantic acceptance as data: every answer pattern must match, no forbidden one may."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str | None = None
    "What the task asks, in words, for the review record."
    answer_patterns: tuple[str, ...] = ()
    "Regular expressions that must ALL match the NFC-normalised answer (case-insensitive)."
    forbidden_patterns: tuple[str, ...] = ()
    "Regular expressions of which NONE may match (case-insensitive)."


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


class ReviewApproved(_Event):
    type: Literal["review.approved"] = "review.approved"
    attempt_id: str
    template: str
    reviewer: str


Event = Annotated[
    Union[
        TraceOpened, AttemptStarted, CaptureStored, FrameReceived, LocalStopped,
        TransportDrained, SemanticJudged, ReleaseDecided, DestinationWritten, ModelDecision,
        ReviewFieldSet, ReviewApproved, RunOpened, ModelCalled, ToolObserved, RunFinished,
        RunGraded,
        ContractBound, RequestBound, FrameRejected,
        CaptureSegment, DestinationReadBack, TaskRevised,
    ],
    Field(discriminator="type"),
]
_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)

EVENT_TYPES: tuple[str, ...] = (
    "trace.opened", "attempt.started", "capture.stored", "frame.received", "local.stopped",
    "transport.drained", "semantic.judged", "release.decided", "destination.written",
    "model.decision", "review.field_set", "review.approved",
    "run.opened", "model.called", "tool.observed", "run.finished", "run.graded",
    "contract.bound", "request.bound", "frame.rejected",
    "capture.segment", "destination.read_back", "task.revised",
)

SCHEMA_VERSIONS: dict[str, int] = {name: 1 for name in EVENT_TYPES}
SCHEMA_VERSIONS["model.decision"] = 2
SCHEMA_VERSIONS["release.decided"] = 2

# (type, from_version) -> function upgrading a payload dict one version.  Empty at v1; the
# hook exists from day one so that a shape change never strands stored rows.
UPCASTERS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    # v2 added the decision's index and whether its verdict was implied by a run result.
    ("model.decision", 1): lambda p: {**p, "index": None, "implied": False},
    # v2 names the task rule version a decision used; v1 decisions did not record it.
    ("release.decided", 1): lambda payload: {**payload, "rule_version": None},
}


def upcast(type_name: str, schema_version: int, payload: dict[str, Any]) -> dict[str, Any]:
    """Upgrade a stored payload to the current schema version of its type."""
    current = SCHEMA_VERSIONS.get(type_name, schema_version)
    while schema_version < current:
        payload = UPCASTERS[(type_name, schema_version)](payload)
        schema_version += 1
    return payload


def parse_event_json(payload: str | bytes) -> Any:
    """A stored payload (current schema version) straight from its JSON text to its model.

    pydantic parses and validates in one step, about twice as fast as ``json.loads`` then
    ``parse_event``; anything it refuses (lone surrogate escapes, a damaged row) takes the
    ``json`` route, which accepts or explains exactly as before.
    """
    try:
        return _EVENT_ADAPTER.validate_json(payload)
    except ValidationError:
        import json

        return parse_event(json.loads(payload))


def parse_event(payload: dict[str, Any]) -> Any:
    """Validate a payload dict (with its ``type``) into its event model."""
    try:
        return _EVENT_ADAPTER.validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(
            f"event of type {payload.get('type')!r} is not valid: {where}: {first.get('msg')}",
            code="invalid_event",
        ) from exc


def to_json_bytes(model: BaseModel, *, exclude: set[str] | None = None) -> bytes:
    """A model as compact JSON bytes, key order kept; lone surrogates kept as escapes.

    pydantic's Rust serializer is the fast path, but it refuses a string holding a lone
    UTF-16 surrogate (``"\\ud83d"``, half of an emoji a provider split across two deltas),
    which strict JSON parsing accepts.  Such a model is written by ``json`` with
    ``ensure_ascii``: every non-ASCII character becomes its ``\\uXXXX`` escape, so the text
    is valid UTF-8 and reads back to exactly the same string.  Anything else that will not
    serialize is refused here with a code, never stored half-converted.
    """
    try:
        return model.__pydantic_serializer__.to_json(model, exclude=exclude)
    except PydanticSerializationError as exc:
        try:
            plain = model.model_dump(mode="python", exclude=exclude)
            return json.dumps(plain, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")
        except (TypeError, ValueError, RecursionError):
            raise InputError(f"{type(model).__name__} cannot be stored as JSON: {exc}",
                             code="unstorable_value") from None


_id_source = random.Random(random.SystemRandom().getrandbits(128))


def new_event_id() -> str:
    """A fresh event id: 64 bits of time then 64 random bits, as 32 hex digits.

    Time first (the UUIDv7 idea) makes ids of one ingest sort together, so inserting them
    into the unique id index appends to its B-tree instead of touching random pages; with
    64 random bits after the nanosecond clock, two ids never collide in practice.  A PRNG
    seeded once from the OS is enough: ids must be unique, not secret.
    """
    return f"{time.time_ns():016x}{_id_source.getrandbits(64):016x}"


class NewEvent:
    """An event ready to append: payload model, target stream, and its id.

    A plain slotted class rather than a frozen dataclass: one ingest builds 100k of these,
    and frozen-dataclass construction was the largest single cost of an ingest.
    """

    __slots__ = ("stream", "event", "id", "trace_id", "fresh_id")

    def __init__(self, stream: str, event: Any, id: str = "", trace_id: str | None = None) -> None:
        self.stream = stream
        self.event = event
        # A freshly drawn 128-bit random id cannot already be stored, so the store may skip
        # its idempotency lookup; ids given by the caller are always checked.
        self.fresh_id = not id
        self.id = id or new_event_id()
        self.trace_id = trace_id
        for name, value in (("stream", stream), ("id", self.id), ("trace_id", trace_id)):
            # Ids and stream names are joined with a separator in the hash chain and shown
            # in terminals: printable text only.
            if value is not None and (not value or not value.isprintable()):
                raise InputError(f"{name} {value!r} must be non-empty printable text",
                                 code="invalid_identifier")

    def __repr__(self) -> str:
        return f"NewEvent({self.stream!r}, {self.event!r}, id={self.id!r})"


class SerializedEvent:
    """An event to append whose payload is already its canonical JSON bytes.

    The bulk ingest path builds these instead of models: a million ``FrameReceived``
    models cost more than the rest of an ingest.  The payload must be exactly what
    ``canonical_payload`` writes for the model (tests check it); ``event`` rebuilds the
    model on demand for callers that inspect a plan.
    """

    __slots__ = ("stream", "id", "trace_id", "type", "payload")
    fresh_id = False

    def __init__(self, stream: str, id: str, trace_id: str | None, type: str,
                 payload: bytes) -> None:
        self.stream, self.id, self.trace_id = stream, id, trace_id
        self.type, self.payload = type, payload

    @property
    def event(self) -> Any:
        import json

        return parse_event(json.loads(self.payload))

    def __repr__(self) -> str:
        return f"SerializedEvent({self.stream!r}, {self.type!r}, id={self.id!r})"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as recorded: the payload model plus the envelope the store assigned."""

    position: int
    id: str
    stream: str
    version: int
    type: str
    schema_version: int
    recorded_at: dt.datetime
    trace_id: str | None
    event: Any
    hash: str

    @property
    def attempt_id(self) -> str | None:
        return getattr(self.event, "attempt_id", None)


def attempt_stream(attempt_id: str) -> str:
    return f"attempt:{attempt_id}"


def trace_stream(trace_id: str) -> str:
    return f"trace:{trace_id}"


def review_stream(template: str, attempt_id: str) -> str:
    return f"review:{template}:{attempt_id}"
