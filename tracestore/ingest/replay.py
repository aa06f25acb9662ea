"""Replay of interleaved attempts: a scenario file drives readers the way an application does.

Why readers, not "the current attempt": seed 003's T8 shows that a harness which rewrites
every incoming callback with whatever attempt is current appends the old attempt's late
text to the retry.  Here an attempt is bound to its reader when the reader is opened, and
every step names its reader, so a late old delta can only ever land in the old attempt.

``plan_replay`` is pure: scenario + the log's prior events + its head position in, the
events to append out.  The store assigns positions ``head + 1, head + 2, …`` in list order,
so the planner simulates those stored events and runs the same release projection the CLI
runs afterwards — a recorded ``release.decided`` and a recomputed decision cannot disagree.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Sequence
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from tracestore.contracts.binding import binding_digest, context_of
from tracestore.contracts.model import load_contract
from tracestore.errors import InputError
from tracestore.events import (
    SCHEMA_VERSIONS, AttemptStarted, ContractBound, Destination, DestinationWritten, DrainOutcome, FrameReceived, LocalStopped,
    NewEvent, ReleaseDecided, RequestBound, SemanticJudged, StoredEvent, TaskRule, TraceOpened,
    TransportDrained, attempt_stream, to_json_bytes, trace_stream,
)
from tracestore.projections import reasons as R
from tracestore.projections.destinations import PROGRESS_TEXT, audit
from tracestore.projections.profiles import PROFILES
from tracestore.projections.release import ReleaseJudge, decide_all
from tracestore.projections.semantics import sha256_text, validate_rule
from tracestore.providers.base import PROVIDER_NAMES, Normalizer, make_normalizer

#: Namespace for deterministic event ids: the same scenario always plans the same ids, so
#: appending a plan twice is an idempotent no-op in the store.
_ID_NAMESPACE = uuid.UUID("7c0f7f0e-3b1d-5c9a-9e59-0d3b2a6f1e03")


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    at: str | None = None
    "Wall-clock time the application observed this step, if known (never used to order)."


class OpenStep(_Step):
    open: str
    "The reader (callback set) being created; the attempt is bound to it here, once."
    attempt: str
    api: str
    retry_of: str | None = None
    request: dict[str, Any] | None = None


class EventStep(_Step):
    reader: str
    event: Any
    "The native event exactly as the provider sent it (decoded)."
    event_name: str | None = None


class StopStep(_Step):
    reader: str
    local: Literal["stop"]
    by: str | None = None


class DrainStep(_Step):
    reader: str
    local: Literal["drain"]
    outcome: DrainOutcome
    detail: str | None = None


class DestinationStep(_Step):
    """What a real application wrote to a destination (recorded from its log)."""

    destination: Destination
    text: str
    reader: str | None = None
    attempt: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> DestinationStep:
        if (self.reader is None) == (self.attempt is None):
            raise ValueError("a destination step names exactly one of reader or attempt")
        return self


Step = Union[OpenStep, EventStep, StopStep, DrainStep, DestinationStep]


def _parse_step(index: int, raw: Any) -> Step:
    if not isinstance(raw, dict):
        raise _bad(index, "a step must be a JSON object")
    if "open" in raw:
        model: type[_Step] = OpenStep
    elif "event" in raw:
        model = EventStep
    elif raw.get("local") == "stop":
        model = StopStep
    elif raw.get("local") == "drain":
        model = DrainStep
    elif "destination" in raw:
        model = DestinationStep
    else:
        raise _bad(index, "unknown step shape (expected open, event, local stop/drain or "
                          "destination)")
    try:
        return model.model_validate(raw)  # type: ignore[return-value]
    except ValidationError as exc:
        raise _bad(index, _first_error(exc)) from exc


def _bad(index: int, message: str) -> InputError:
    return InputError(f"step {index}: {message}", code="invalid_scenario", step=index)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))


class Scenario(BaseModel):
    """One trace's scenario: its task rule and the steps, in the order they happened."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    trace: str
    task: TaskRule | None = None
    profile: str | None = None
    comparison: str | None = None
    origin: str | None = None
    destinations: Literal["harness", "application"] = "harness"
    """``harness``: tracestore writes progress and released answers following the policy;
    ``application``: only the scenario's recorded ``destination`` steps are written."""
    description: str | None = None
    source: str | None = None
    "Where the scenario comes from (seed section, capture)."
    expected: dict[str, Any] | None = None
    "The stated expected outcome (for tests and reviewers); the planner ignores it."
    contract: dict[str, Any] | None = None
    "Output contract document: the trace's answers are structured replies judged by it."
    binding: dict[str, Any] | None = None
    "Request binding (seed 000): frames and citations are checked against it."
    steps: tuple[Step, ...]

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> tuple[Step, ...]:
        if not isinstance(value, list):
            raise InputError("steps must be a JSON array", code="invalid_scenario")
        return tuple(_parse_step(i, raw) for i, raw in enumerate(value))

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if not self.trace:
            raise InputError("trace must be a non-empty id", code="invalid_scenario")
        if self.profile is not None and self.profile not in PROFILES:
            raise InputError(f"unknown profile {self.profile!r}; known: {', '.join(PROFILES)}",
                             code="invalid_scenario")
        if self.task is not None:
            validate_rule(self.task)
        if self.contract is not None:
            load_contract(self.contract)  # a bad contract fails now, before anything is written
        if self.binding is not None:
            context_of(self.binding)
        _check_readers(self.steps)
        return self


def _check_readers(steps: Sequence[Step]) -> None:
    readers: set[str] = set()
    attempts: set[str] = set()
    for i, step in enumerate(steps):
        if isinstance(step, OpenStep):
            if step.open in readers:
                raise _bad(i, f"reader {step.open!r} is opened twice")
            if step.attempt in attempts:
                raise _bad(i, f"attempt {step.attempt!r} is opened twice")
            if step.api not in PROVIDER_NAMES:
                raise _bad(i, f"unknown api {step.api!r}")
            readers.add(step.open)
            attempts.add(step.attempt)
        elif isinstance(step, DestinationStep) and step.attempt is not None:
            if step.attempt not in attempts:
                raise _bad(i, f"attempt {step.attempt!r} is used before it is opened")
        elif step.reader not in readers:
            raise _bad(i, f"reader {step.reader!r} is used before it is opened")


def parse_scenario(data: Any) -> Scenario:
    """Validate decoded scenario JSON; every problem is ``InputError(invalid_scenario)``."""
    if not isinstance(data, dict):
        raise InputError("a scenario must be a JSON object", code="invalid_scenario")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"scenario: {_first_error(exc)}", code="invalid_scenario") from exc


class _Reader:
    def __init__(self, attempt_id: str, api: str) -> None:
        self.attempt_id, self.api = attempt_id, api
        self.normalizer: Normalizer = make_normalizer(api)
        self.frames = 0


def scenario_digest(scenario: Scenario) -> str:
    """sha256 of the scenario's content (its stated expectations excluded)."""
    return hashlib.sha256(to_json_bytes(scenario, exclude={"expected"})).hexdigest()


def _planned_id(digest: str, index: int) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"{digest}:{index}"))


def first_planned_id(scenario: Scenario) -> str:
    """The id the planner gives the first event of ``scenario``.

    Ids derive from the scenario's content, so finding this id in the log means this very
    scenario was replayed before: replaying it again is a reported no-op, not a conflict.
    """
    return _planned_id(scenario_digest(scenario), 0)


class _Planner:
    """Builds the event list step by step, judging every attempt as it goes."""

    def __init__(self, scenario: Scenario, prior: Sequence[StoredEvent], head: int,
                 recorded_at: dt.datetime) -> None:
        self.sc = scenario
        self.head, self.recorded_at = head, recorded_at
        self.sim: list[StoredEvent] = sorted(prior, key=lambda e: e.position)
        self.out: list[NewEvent] = []
        self.versions: dict[str, int] = {}
        for stored in self.sim:
            self.versions[stored.stream] = max(self.versions.get(stored.stream, 0),
                                               stored.version)
        self.digest = scenario_digest(scenario)
        self.readers: dict[str, _Reader] = {}
        self.judges: dict[str, ReleaseJudge] = {}
        self.recorded: set[str] = {e.event.attempt_id for e in self.sim
                                   if isinstance(e.event, ReleaseDecided)}
        self._adopt_prior()

    def _adopt_prior(self) -> None:
        """Refuse a scenario that collides with the log; judge the trace's prior attempts."""
        mine = {s.attempt for s in self.sc.steps if isinstance(s, OpenStep)}
        for stored in self.sim:
            ev = stored.event
            if isinstance(ev, AttemptStarted) and ev.attempt_id in mine:
                raise InputError(f"attempt {ev.attempt_id!r} is already in the log",
                                 code="attempt_exists", attempt_id=ev.attempt_id)
            if isinstance(ev, AttemptStarted) and ev.trace_id == self.sc.trace:
                judge = ReleaseJudge.for_attempt(self.sim, ev.attempt_id)
                for later in self.sim:
                    judge.feed(later)
                self.judges[ev.attempt_id] = judge
        opened = [e.event for e in self.sim
                  if isinstance(e.event, TraceOpened) and e.event.trace_id == self.sc.trace]
        if opened and (opened[0].task, opened[0].profile) != (self.sc.task, self.sc.profile):
            raise InputError(f"trace {self.sc.trace!r} is already in the log with another "
                             "task or profile", code="trace_conflict", trace_id=self.sc.trace)
        self.trace_known = bool(opened)

    # -- appending -------------------------------------------------------------------
    def append(self, stream: str, event: Any) -> None:
        position = self.head + len(self.out) + 1
        event_id = _planned_id(self.digest, len(self.out))
        self.out.append(NewEvent(stream=stream, event=event, id=event_id,
                                 trace_id=self.sc.trace))
        version = self.versions.get(stream, 0) + 1
        self.versions[stream] = version
        stored = StoredEvent(position=position, id=event_id, stream=stream, version=version,
                             type=event.type, schema_version=SCHEMA_VERSIONS[event.type], recorded_at=self.recorded_at,
                             trace_id=self.sc.trace, event=event, hash="")
        self.sim.append(stored)
        for judge in self.judges.values():
            judge.feed(stored)
        if isinstance(event, AttemptStarted):
            self.judges[event.attempt_id] = ReleaseJudge.for_attempt(self.sim, event.attempt_id)

    def write(self, attempt_id: str, destination: str, text: str, source: str,
              observed_at: str | None = None) -> None:
        self.append(attempt_stream(attempt_id), DestinationWritten(
            attempt_id=attempt_id, destination=destination, text=text,  # type: ignore[arg-type]
            sha256=sha256_text(text), source=source, observed_at=observed_at))  # type: ignore[arg-type]

    # -- steps -----------------------------------------------------------------------
    def run(self) -> list[NewEvent]:
        sc = self.sc
        if not self.trace_known:
            self.append(trace_stream(sc.trace), TraceOpened(
                trace_id=sc.trace, task=sc.task, profile=sc.profile, comparison=sc.comparison,
                origin=sc.origin))
            if sc.contract is not None:
                contract = load_contract(sc.contract)
                self.append(trace_stream(sc.trace), ContractBound(
                    trace_id=sc.trace, name=contract.name, contract=sc.contract,
                    sha256=contract.sha256))
            if sc.binding is not None:
                self.append(trace_stream(sc.trace), RequestBound(
                    trace_id=sc.trace, binding=sc.binding, sha256=binding_digest(sc.binding)))
        for step in sc.steps:
            self.step(step)
            self.record_decisions()
        return self.out

    def step(self, step: Step) -> None:
        if isinstance(step, OpenStep):
            self.readers[step.open] = _Reader(step.attempt, step.api)
            self.append(attempt_stream(step.attempt), AttemptStarted(
                attempt_id=step.attempt, trace_id=self.sc.trace, api=step.api,
                reader=step.open, retry_of=step.retry_of, request=_stored_request(step.request),
                observed_at=step.at))
            if self.sc.destinations == "harness":
                self.write(step.attempt, "progress", PROGRESS_TEXT, "harness")
            return
        if isinstance(step, DestinationStep):
            attempt = step.attempt or self.readers[step.reader or ""].attempt_id
            self.write(attempt, step.destination, step.text, "application", step.at)
            return
        reader = self.readers[step.reader]
        stream = attempt_stream(reader.attempt_id)
        if isinstance(step, EventStep):
            kinds = tuple(o.kind for o in reader.normalizer.feed(step.event, step.event_name))
            self.append(stream, FrameReceived(
                attempt_id=reader.attempt_id, api=reader.api, native=step.event, kinds=kinds,
                event_name=step.event_name, reader=step.reader, index=reader.frames,
                observed_at=step.at))
            reader.frames += 1
        elif isinstance(step, StopStep):
            self.append(stream, LocalStopped(attempt_id=reader.attempt_id, reader=step.reader,
                                             by=step.by, observed_at=step.at))
        else:
            self.append(stream, TransportDrained(
                attempt_id=reader.attempt_id, outcome=step.outcome, detail=step.detail,
                reader=step.reader, observed_at=step.at))

    def record_decisions(self) -> None:
        """Append each newly final decision once, and (harness) the released answer."""
        for attempt_id, judge in list(self.judges.items()):
            if attempt_id in self.recorded or not judge.decided:
                continue
            self.recorded.add(attempt_id)
            decision = judge.decision()
            stream = attempt_stream(attempt_id)
            if decision.judgement is not None and self.sc.task is not None:
                j = decision.judgement
                self.append(stream, SemanticJudged(
                    attempt_id=attempt_id, verdict=j.verdict, rule=self.sc.task,
                    answer_sha256=j.answer_sha256, failed_patterns=j.failed_patterns))
            self.append(stream, ReleaseDecided(
                attempt_id=attempt_id, eligible=decision.eligible, status=decision.status,
                reasons=decision.reasons, policy_version=R.POLICY_VERSION,
                decided_at_position=decision.decided_at_position,
                answer_sha256=decision.answer_sha256))
            if decision.eligible and self.sc.destinations == "harness":
                for destination in ("ui", "history", "export", "copy"):
                    self.write(attempt_id, destination, decision.answer or "", "harness")


def plan_replay(scenario: Scenario, *, prior: Sequence[StoredEvent], head_position: int,
                recorded_at: dt.datetime) -> list[NewEvent]:
    """The events replaying ``scenario`` appends after ``prior`` (pure, deterministic)."""
    return _Planner(scenario, prior, head_position, recorded_at).run()


def preview_replay(scenario: Scenario, *, prior: Sequence[StoredEvent] = (),
                   head_position: int = 0,
                   recorded_at: dt.datetime = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc),
                   ) -> tuple[list[NewEvent], list[StoredEvent]]:
    """The plan and the log as it will read after the append (prior + simulated events).

    The simulated events carry the positions the store will assign and an empty hash; run
    any projection on them to see the outcome without a database (tests, dry runs).
    """
    planner = _Planner(scenario, prior, head_position, recorded_at)
    return planner.run(), planner.sim


def replay_report(events: Sequence[StoredEvent], trace_id: str) -> dict[str, Any]:
    """``{"attempts": [decision…], "violations": […]}`` for one trace (the replay contract)."""
    return {"attempts": [d.to_dict() for d in decide_all(events, trace_id)],
            "violations": [v.to_dict() for v in audit(events, trace_id=trace_id).violations]}


def _stored_request(request: dict[str, Any] | None) -> dict[str, Any] | None:
    """A scenario's request settings as the recorder stores them: credentials redacted."""
    from tracestore.text.redaction import redact, secret_fields

    return None if request is None else redact(request, secret_fields())
