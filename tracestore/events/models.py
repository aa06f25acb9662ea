"""The event kinds: one frozen pydantic model per stored event type (see ``events.py``).

Models are built lazily (``defer_build``): a command that reads three event types builds
three validators, not twenty-four; ``codec`` picks the model by the stored type.

The kinds a stream's release decision never reads (destinations, live segments, agent
runs, reviews, store settings) are defined in ``more_models`` and imported the first time
one of them is named or asked for by type (``MODELS``): defining a pydantic class costs
about as much as reading a small attempt.  Every kind still imports from here (and from
``tracestore.events``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from tracestore.events.model_base import Destination, _Event  # noqa: F401 - re-exported

DrainOutcome = Literal["clean", "eof", "error", "reset"]
ANSWER_DESTINATIONS: tuple[str, ...] = ("ui", "history", "export", "copy")


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
    reviewer's recorded verdict (``reviewer``: ``tracestore judge``)."""

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: Any) -> Any:
        # ``semantic`` is left out while unset, so rules written before it keep their bytes.
        data = handler(self)
        if isinstance(data, dict) and data.get("semantic", 0) is None:
            del data["semantic"]
        return data


class TraceOpened(_Event):
    """A trace opens: one user question, the rule its answers are judged by, and where it came from."""

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
    """One attempt to answer the trace's question starts: the API, the reader bound to it, the request settings and the attempt it retries."""

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
    """The raw bytes of a whole capture, stored once by their sha256; frames point into them."""

    type: Literal["capture.stored"] = "capture.stored"
    attempt_id: str
    sha256: str
    "Content address of the raw bytes in the blob table."
    size: int
    framing: str
    "``sse``, ``ndjson``, ``json-array``, ``chunks``, ``aws-eventstream``, ``projection``."
    filename: str | None = None


class FrameReceived(_Event):
    """One decoded provider frame of an attempt: the native object exactly as decoded, what it means (its kinds) and where its bytes are."""

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
    """The user or the application stopped reading the attempt (a local Stop), at this point in the stream."""

    type: Literal["local.stopped"] = "local.stopped"
    attempt_id: str
    reader: str | None = None
    by: str | None = None
    "Who pressed Stop (user, timeout, application)."
    observed_at: str | None = None


class TransportDrained(_Event):
    """How the attempt's transport ended: ``clean``, ``eof``, ``error`` or ``reset``, with what the bytes or the exception showed."""

    type: Literal["transport.drained"] = "transport.drained"
    attempt_id: str
    outcome: DrainOutcome
    detail: str | None = None
    reader: str | None = None
    observed_at: str | None = None


class SemanticJudged(_Event):
    """A verdict on whether a candidate answer meets the task rule: the rule's own, or a person's (signed)."""

    type: Literal["semantic.judged"] = "semantic.judged"
    attempt_id: str
    verdict: Literal["accepted", "rejected"]
    rule: TaskRule
    answer_sha256: str
    failed_patterns: tuple[str, ...] = ()
    "Answer patterns that did not match, then forbidden patterns that did."
    by: str = "rule"
    "``rule`` (the task rule's patterns) or the reviewer who judged (``tracestore judge``)."
    # The reviewer fields are optional and left out of the stored JSON while unset, so events
    # written before them (and the replay's rule verdicts) keep their exact bytes.
    OMIT_NONE: ClassVar[tuple[str, ...]] = ("note", "key_id", "signature")
    note: str | None = None
    "The reviewer's note on a person's verdict."
    key_id: str | None = None
    "The reviewer key that signed a person's verdict (None: unsigned)."
    signature: str | None = None
    "Ed25519 signature (base64) over the payload without this field."


class ReleaseDecided(_Event):
    """The final release decision of an attempt, as the pure judge derived it from the events before it: status, reasons, the answer and the policy and rule versions."""

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


class TaskRevised(_Event):
    """A new version of a trace's task rule (version 1 is the one ``trace.opened`` holds)."""

    type: Literal["task.revised"] = "task.revised"
    trace_id: str
    version: int
    "2, 3, …: one more than the newest version before it."
    task: TaskRule
    by: str | None = None


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


EVENT_TYPES: tuple[str, ...] = (
    "trace.opened", "attempt.started", "capture.stored", "frame.received", "local.stopped",
    "transport.drained", "semantic.judged", "release.decided", "destination.written",
    "model.decision", "review.field_set", "review.approved",
    "run.opened", "model.called", "tool.observed", "run.finished", "run.graded",
    "contract.bound", "request.bound", "frame.rejected",
    "capture.segment", "destination.read_back", "task.revised",
    "evidence.attached", "reviewer.added", "store.setting",
)

#: The names ``more_models`` defines (loaded on first use).
MORE_MODELS: tuple[str, ...] = (
    "CaptureSegment", "DestinationWritten", "DestinationReadBack", "ModelDecision",
    "AgentMode", "RunOpened", "ModelCalled", "ToolObserved", "RunFinished", "RunGraded",
    "ReviewFieldSet", "ReviewApproved", "EvidenceAttached", "ReviewerAdded", "StoreSetting",
)

if TYPE_CHECKING:
    from tracestore.events.more_models import (  # noqa: F401 - re-exported names
        AgentMode, CaptureSegment, DestinationReadBack, DestinationWritten, EvidenceAttached,
        ModelCalled, ModelDecision, ReviewApproved, ReviewerAdded, ReviewFieldSet,
        RunFinished, RunGraded, RunOpened, StoreSetting, ToolObserved,
    )

    Event = Annotated[
        Union[
            TraceOpened, AttemptStarted, CaptureStored, FrameReceived, LocalStopped,
            TransportDrained, SemanticJudged, ReleaseDecided, DestinationWritten,
            ModelDecision, ReviewFieldSet, ReviewApproved, RunOpened, ModelCalled,
            ToolObserved, RunFinished, RunGraded,
            ContractBound, RequestBound, FrameRejected,
            CaptureSegment, DestinationReadBack, TaskRevised,
            EvidenceAttached, ReviewerAdded, StoreSetting,
        ],
        Field(discriminator="type"),
    ]

_CORE: dict[str, type[BaseModel]] = {
    model.model_fields["type"].default: model
    for model in (TraceOpened, AttemptStarted, CaptureStored, FrameReceived, LocalStopped,
                  TransportDrained, SemanticJudged, ReleaseDecided, ContractBound,
                  RequestBound, FrameRejected, TaskRevised)
}


def _all_models() -> dict[str, type[BaseModel]]:
    """Every kind by type, in ``EVENT_TYPES`` order (``more_models`` imported)."""
    from tracestore.events import more_models

    more = [getattr(more_models, name) for name in MORE_MODELS]
    found = {**_CORE, **{model.model_fields["type"].default: model for model in more
                         if isinstance(model, type) and issubclass(model, BaseModel)}}
    return {name: found[name] for name in EVENT_TYPES}


class _Models(Mapping[str, "type[BaseModel]"]):
    """The model of each event type; the kinds of ``more_models`` load when one of them
    is asked for (or the mapping is iterated)."""

    _all: dict[str, type[BaseModel]] | None = None

    def _full(self) -> dict[str, type[BaseModel]]:
        if self._all is None:
            self._all = _all_models()
        return self._all

    def __getitem__(self, type_name: str) -> type[BaseModel]:
        model = _CORE.get(type_name)
        return model if model is not None else self._full()[type_name]

    def get(self, type_name: str, default: Any = None) -> Any:
        model = _CORE.get(type_name)
        if model is not None:
            return model
        return self._full().get(type_name, default) if type_name in _TYPES else default

    def __contains__(self, type_name: object) -> bool:
        return type_name in _TYPES

    def __iter__(self) -> Iterator[str]:
        return iter(self._full())

    def __len__(self) -> int:
        return len(EVENT_TYPES)


_TYPES = frozenset(EVENT_TYPES)

#: The model of each event type, for validating a payload whose type is already known.
MODELS: Mapping[str, type[BaseModel]] = _Models()


def __getattr__(name: str) -> Any:
    if name in MORE_MODELS:
        from tracestore.events import more_models

        return getattr(more_models, name)
    if name == "Event":
        # The discriminated union over every kind, members in EVENT_TYPES order.
        union = Annotated[Union[tuple(_all_models().values())],  # type: ignore[valid-type]
                          Field(discriminator="type")]
        globals()["Event"] = union
        return union
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
