"""The ingest pipeline: decoded input and a store in, a typed outcome out.

Every writer of an input goes through here -- ``tracestore ingest``, ``ingest-batch``, the
agent-run branch of both, ``replay`` (``append_scenario``) -- so they cannot drift apart
again (``ingest-batch`` once planned every file as a capture and refused an agent-run file
with ``invalid_json`` that ``ingest`` recorded).  The domain rules the CLI used to chain
are here, in order:

1. the input's kind: an agent-run file (``agent_format``) or a capture / decoded
   projection (``plan_input``: the plan, the application's own evidence);
2. ONE transaction per input (``append_plan`` / ``append_runs``): a trace has one task rule,
   one origin, one request and one contract; an attempt holds one input; the release
   decisions the input makes final are derived while it is written and appended with it.

The CLI reads files (captures, rules, contracts, cases) and renders an ``Ingested``; it
decides nothing.  Planning is pure; only ``write_input`` and ``append_*`` touch the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from typing import TYPE_CHECKING, Any, Union

from tracestore.errors import InputError, StoreError, TracestoreError

if TYPE_CHECKING:
    from tracestore.events import NewEvent, TaskRule
    from tracestore.ingest.agent import AgentIngestPlan
    from tracestore.ingest.plan import Bindings, IngestPlan
    from tracestore.ingest.replay import Scenario
    from tracestore.store.log import AppendResult, EventStore, WriteView


@dataclass(frozen=True)
class IngestOptions:
    """What the command line (or a script) says about one input; all optional."""

    filename: str | None = None
    "The input's name: default attempt id, messages, framing detection by extension."
    attempt_id: str | None = None
    trace_id: str | None = None
    "For agent runs: the prefix of each run's trace and attempt ids."
    provider: str = "auto"
    chunk_size: int | None = None
    task: TaskRule | None = None
    bindings: Bindings | None = None
    origin: str | None = None
    fmt: str = "auto"
    "``auto``, ``capture``, ``agent-report`` or ``agent-result``."
    cases: Mapping[str, Any] | None = None
    "Agent runs: case id -> case, whose patterns become each trace's task rule."
    retry_of: str | None = None
    resume_of: str | None = None
    "The attempt whose stream this capture resumes (a second connection of one answer)."
    stop_after_byte: int | None = None
    progress: Callable[[int], None] | None = field(default=None, compare=False)
    "Hears how many bytes of a capture have been decoded (progress bars)."


@dataclass(frozen=True)
class Appended:
    """What one transaction wrote: the store's ``AppendResult`` in plain fields."""

    appended: int
    skipped: int
    positions: tuple[int, ...]
    "The first and last position written (empty when nothing was)."
    decisions_recorded: tuple[int, ...]
    "Positions of the ``release.decided`` (and ``semantic.judged``) written with it."

    @classmethod
    def of(cls, result: AppendResult) -> Appended:
        positions = result.positions
        return cls(result.appended, len(result.skipped_ids),
                   (positions[0], positions[-1]) if positions else (),
                   tuple(result.followed))


@dataclass(frozen=True)
class PlanIngested:
    """One capture or decoded projection recorded as one attempt."""

    attempt_id: str
    trace_id: str
    api: str
    kind: str
    "``capture`` or ``projection``."
    framing: str
    sha256: str
    frames: int
    drain: str | None
    written: Appended
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunsIngested:
    """An agent-run file (seed 001 report or one result): each run its trace and attempt."""

    format: str
    sha256: str
    attempts: tuple[str, ...]
    written: Appended


Ingested = Union[PlanIngested, RunsIngested]


def agent_format(data: bytes, fmt: str = "auto") -> str | None:
    """The agent-run format of ``data`` (``--format`` given, or sniffed), or None for a
    capture / projection.  Raises ``unknown_format`` for a ``--format`` we do not know."""
    if fmt == "capture":
        return None
    from tracestore.ingest.agent import FORMATS, sniff

    if fmt != "auto" and fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not one of auto, capture, "
                         f"{', '.join(FORMATS)}", code="unknown_format")
    return fmt if fmt in FORMATS else sniff(data)


def plan_input(data: bytes, options: IngestOptions) -> IngestPlan:
    """The plan of a capture or projection, with the application's evidence (pure)."""
    from tracestore.ingest.evidence import with_app_evidence
    from tracestore.ingest.planner import plan_ingest
    from tracestore.store.bulk import paused_gc

    with paused_gc():
        plan = plan_ingest(data, filename=options.filename, attempt_id=options.attempt_id,
                           trace_id=options.trace_id, provider=options.provider,
                           chunk_size=options.chunk_size, task=options.task,
                           progress=options.progress, bindings=options.bindings,
                           origin=options.origin)
    return with_app_evidence(plan, retry_of=options.retry_of,
                             stop_after_byte=options.stop_after_byte)


def write_plan(store: EventStore, plan: IngestPlan, options: IngestOptions) -> PlanIngested:
    """Append a planned input (its frames and the decision they imply: one transaction)."""
    from tracestore.ingest.evidence import check_retry_of

    check_retry_of(store, plan.trace_id, options.retry_of)
    written = Appended.of(append_plan(store, plan))
    return PlanIngested(plan.attempt_id, plan.trace_id, plan.api, plan.kind, plan.framing,
                        plan.sha256, plan.frames, plan.drain, written,
                        tuple(provider_warnings(plan, options.provider)))


def write_runs(store: EventStore, data: bytes, fmt: str,
               options: IngestOptions) -> RunsIngested:
    """Plan and append an agent-run file: every run in ONE transaction, or nothing."""
    from tracestore.ingest.agent import plan_agent_ingest

    plan = plan_agent_ingest(data, filename=options.filename, fmt=fmt,
                             trace_prefix=options.trace_id, attempt_id=options.attempt_id,
                             cases=options.cases)
    written = Appended.of(append_runs(store, plan))
    return RunsIngested(plan.format, plan.sha256, tuple(a for a, _, _ in plan.runs), written)


def write_session(store: EventStore, data: bytes, options: IngestOptions) -> RunsIngested:
    """Plan and append a realtime session capture: its trace and one attempt per response
    or turn, with their decisions, in ONE transaction (``tracestore.ingest.session``)."""
    from tracestore.ingest.agent import AgentIngestPlan
    from tracestore.ingest.session import SESSION_FORMAT, plan_session

    bindings = options.bindings
    if (bindings is not None and (bindings.contract is not None or bindings.binding is not None)
            or options.retry_of is not None or options.stop_after_byte is not None):
        raise InputError("a realtime session records its own responses, Stops and drains; "
                         "--contract, --binding, --retry-of and --stop-after-byte do not "
                         "apply to it", code="invalid_option")
    plan = plan_session(data, filename=options.filename, trace_id=options.trace_id,
                        attempt_prefix=options.attempt_id, task=options.task,
                        origin=options.origin,
                        first_turn=_first_turn(store, options.trace_id, data))
    runs = AgentIngestPlan(SESSION_FORMAT, plan.sha256,
                           tuple((a, plan.trace_id, a) for a in plan.attempts),
                           plan.events, plan.blob)
    written = Appended.of(append_runs(store, runs))
    return RunsIngested(SESSION_FORMAT, plan.sha256, plan.attempts, written)


def _first_turn(store: EventStore, trace_id: str | None, data: bytes) -> int:
    """The number of a session's first turn on ``trace_id``: after the attempts the trace
    holds (a continued session), or where this same capture's turns were numbered when it
    was ingested before (so ingesting it again appends nothing)."""
    import hashlib

    if trace_id is None:
        return 1
    sha = hashlib.sha256(data).hexdigest()
    attempts: list[str] = []
    for stored in store.read(trace_id=trace_id):
        event = stored.event
        if event.type == "attempt.started" and event.attempt_id not in attempts:
            attempts.append(event.attempt_id)
        elif event.type == "capture.stored" and event.sha256 == sha:
            return attempts.index(event.attempt_id) + 1
    return len(attempts) + 1


def write_resume(store: EventStore, data: bytes, options: IngestOptions) -> PlanIngested:
    """Plan and append a resumed connection with the attempt it continues, as one new
    attempt of that trace holding both (``tracestore.ingest.resume``), with its decision."""
    from tracestore.errors import NotFound
    from tracestore.events import attempt_stream, trace_stream
    from tracestore.ingest.resume import plan_resume

    assert options.resume_of is not None
    if (options.retry_of is not None or options.stop_after_byte is not None
            or options.task is not None or options.trace_id is not None
            or options.origin is not None or (options.bindings is not None and (
                options.bindings.contract is not None or options.bindings.binding is not None))):
        raise InputError("a resumed connection joins the trace of the attempt it resumes, "
                         "under its rule, origin and bindings; --trace, --task, --origin, "
                         "--contract, --binding, --retry-of and --stop-after-byte do not "
                         "apply to it", code="invalid_option")
    first = store.read(stream=attempt_stream(options.resume_of))
    if not first:
        raise NotFound(f"--resume-of names {options.resume_of!r}, which is not an attempt in "
                       "the log", code="attempt_not_found", attempt_id=options.resume_of)
    opened = store.read(stream=trace_stream(first[0].trace_id or ""), limit=1)
    resumed = plan_resume(opened[0], first, data, resume_of=options.resume_of,
                          filename=options.filename, attempt_id=options.attempt_id,
                          chunk_size=options.chunk_size)
    plan = resumed.plan
    written = Appended.of(append_plan(store, plan))
    return PlanIngested(plan.attempt_id, plan.trace_id, plan.api, plan.kind, plan.framing,
                        plan.sha256, plan.frames, plan.drain, written, resumed.notes)


def har_as_session(data: bytes, fmt: str = "auto") -> bytes:
    """A HAR file's WebSocket messages as a session capture (``tracestore.ingest.har``);
    any other input as it is."""
    from tracestore.ingest.har import har_session, is_har

    return har_session(data) if fmt == "auto" and is_har(data) else data


def is_session_input(data: bytes, fmt: str = "auto") -> bool:
    """Whether ``data`` is to be read as a realtime session capture."""
    from tracestore.ingest.session import SESSION_FORMAT, is_session

    return fmt == SESSION_FORMAT or (fmt == "auto" and is_session(data))


def ingest_input(store: EventStore, data: bytes,
                 options: IngestOptions = IngestOptions()) -> Ingested:
    """Record one input: ``ingest FILE`` and each file of ``ingest-batch``."""
    if options.resume_of is not None:
        return write_resume(store, data, options)
    data = har_as_session(data, options.fmt)
    if is_session_input(data, options.fmt):
        return write_session(store, data, options)
    fmt = agent_format(data, options.fmt)
    if fmt is not None:
        return write_runs(store, data, fmt, options)
    return write_plan(store, plan_input(data, options), options)


# -- the transactions -------------------------------------------------------------------

def append_plan(store: EventStore, plan: IngestPlan, *, decide: bool = True) -> AppendResult:
    """Append an ingest plan in ONE transaction, refusing to mix inputs in one attempt.

    With ``decide`` the release decisions the plan makes final are derived from it while it
    is written and appended in the same transaction (``result.followed`` holds their
    positions): a crash leaves all of it or none of it."""
    from tracestore.events import attempt_stream, trace_stream

    tap = _decisions({plan.trace_id: [plan.attempt_id]}) if decide else None

    def build(view: WriteView) -> tuple[Any, list[bytes]]:  # a lazily planned body, too
        opened = view.read(stream=trace_stream(plan.trace_id), limit=1)
        new_task = plan.events[0].event.task
        if opened and new_task is not None and opened[0].event.task != new_task:
            raise InputError(
                f"trace {plan.trace_id!r} already exists with another task rule; a trace has "
                "one task, so choose another --trace or leave out --task",
                code="trace_conflict", trace_id=plan.trace_id)
        new_origin = plan.events[0].event.origin
        if opened and new_origin is not None and opened[0].event.origin != new_origin:
            raise InputError(
                f"trace {plan.trace_id!r} already exists with origin "
                f"{opened[0].event.origin or 'not stated'!r}; a trace has one origin, so "
                "choose another --trace", code="trace_conflict", trace_id=plan.trace_id)
        _check_bindings(view, plan)
        stream = attempt_stream(plan.attempt_id)
        first = view.read(stream=stream, limit=1)
        # The plan's first attempt event follows trace.opened and any bindings.
        if first and first[0].id != next(e.id for e in plan.events if e.stream == stream):
            raise InputError(
                f"attempt {plan.attempt_id!r} already holds events from another input; a "
                "retry is a fresh attempt, so choose another --attempt",
                code="attempt_exists", attempt_id=plan.attempt_id)
        if tap is not None:
            tap.prepare(view)
        return plan.events, [plan.blob]

    return store.append_with(build, tap=tap)


def _decisions(attempts: Mapping[str, Sequence[str]]) -> Any:
    """The ingest's tap: its release decisions (``PlanDecisions``), and once all is written
    the audit index kept current for the traces written, when it was current before
    (``audit_index.follow_append``): ``audit --json`` right after an ingest reads the
    index instead of judging the new traces again."""
    from tracestore.ingest.decide import PlanDecisions
    from tracestore.review.audit_index import follow_append

    class IndexKeeping(PlanDecisions):
        def settled(self, view: WriteView) -> None:
            follow_append(view, self.attempts)

    return IndexKeeping(attempts)


def _check_bindings(view: WriteView, plan: IngestPlan) -> None:
    """A trace answers one request under one contract: a different one is refused."""
    from tracestore.events import trace_stream
    from tracestore.ingest.plan import check_binding_conflicts

    # Bindings are among the plan's leading trace-stream events; looking no further keeps a
    # lazily planned body of a million frames from being generated (and parsed) twice.
    stream = trace_stream(plan.trace_id)
    lead = list(takewhile(lambda e: e.stream == stream, plan.events))
    if any(e.event.type in ("contract.bound", "request.bound") for e in lead):
        check_binding_conflicts(view.read(stream=stream), lead, plan.trace_id)


def append_runs(store: EventStore, plan: AgentIngestPlan) -> AppendResult:
    """Append an agent-run plan in ONE transaction with each run's final decision; an
    attempt id already holding another input's events is refused (``attempt_exists``)."""
    from tracestore.events import attempt_stream

    first_ids = {e.stream: e.id for e in reversed(plan.events)}  # first event per stream
    runs: dict[str, list[str]] = {}
    for attempt_id, trace_id, _ in plan.runs:
        runs.setdefault(trace_id, []).append(attempt_id)
    tap = _decisions(runs)  # each run's final decision, in the same transaction

    def build(view: WriteView) -> tuple[Iterable[Any], list[bytes]]:
        for attempt_id, _, _ in plan.runs:
            stream = attempt_stream(attempt_id)
            first = view.read(stream=stream, limit=1)
            if first and first[0].id != first_ids[stream]:
                raise InputError(
                    f"attempt {attempt_id!r} already holds events from another input; pass "
                    "--trace PREFIX to record these runs under other ids",
                    code="attempt_exists", attempt_id=attempt_id)
        tap.prepare(view)
        return plan.events, [plan.blob]

    return store.append_with(build, tap=tap)


def provider_warnings(plan: IngestPlan, provider: str) -> list[str]:
    """A named --provider that recognized none of the frames is almost always the wrong one:
    the attempt is stored (its bytes are evidence) but can never be released."""
    if provider == "auto" or plan.frames == 0:
        return []
    # Stop at the first recognized frame: a large projection's events are planned lazily,
    # so counting them all would plan the whole body a second time.
    if any(e.event.type == "frame.received" and set(e.event.kinds) - {"unknown", "raw"}
           for e in plan.events):
        return []
    return [f"--provider {provider} recognized none of the {plan.frames} frames; is this "
            f"capture from another provider? (--provider auto tells them apart)"]


# -- replay: a scenario planned inside its transaction ------------------------------------

class _ScenarioAppend:
    """Plans one scenario inside the write transaction, against the log as it stands, so
    the positions it embeds (``decided_at_position``) are the ones the store assigns."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.planned: list[NewEvent] = []
        self.replayed_before = False

    def __call__(self, view: WriteView) -> tuple[list[NewEvent], list[bytes]]:
        import datetime as dt

        from tracestore.ingest.replay import first_planned_id, plan_replay

        if view.has_event(first_planned_id(self.scenario)):
            self.replayed_before = True
            return [], []
        recorded_at = dt.datetime.fromisoformat(view.recorded_at)
        self.planned[:] = plan_replay(self.scenario, prior=_prior_for(view, self.scenario),
                                      head_position=view.head_position,
                                      recorded_at=recorded_at)
        return self.planned, []

    def check(self, result: Any) -> None:
        if result.skipped_ids and not self.replayed_before:
            # The planner refuses known attempts, so this is a real conflict.
            raise StoreError(f"{len(result.skipped_ids)} planned events were already "
                             "stored; positions in the plan no longer hold",
                             code="replay_conflict")

    @property
    def outcome(self) -> list[NewEvent] | None:
        return None if self.replayed_before else self.planned


def _prior_for(view: WriteView, scenario: Scenario) -> list[Any]:
    """What the planner must see: the trace so far and any stream its attempts would reuse."""
    from tracestore.events import attempt_stream
    from tracestore.ingest.replay import OpenStep

    groups = [view.read(trace_id=scenario.trace)]
    groups += [view.read(stream=attempt_stream(s.attempt))
               for s in scenario.steps if isinstance(s, OpenStep)]
    by_position = {e.position: e for group in groups for e in group}
    return [by_position[p] for p in sorted(by_position)]


def append_scenario(store: EventStore, scenario: Scenario) -> list[NewEvent] | None:
    """Plan and append a scenario in one transaction; None when it was replayed before."""
    step = _ScenarioAppend(scenario)
    step.check(store.append_with(step))
    return step.outcome


def append_scenarios(store: EventStore, scenarios: Sequence[Scenario],
                     ) -> list[list[NewEvent] | None | TracestoreError]:
    """Append many scenarios in ONE transaction, a savepoint each: every scenario is still
    all or nothing (a failing one is rolled back alone and its error takes its place), and
    the log is synced once instead of once per scenario."""
    steps = [_ScenarioAppend(s) for s in scenarios]
    results = store.append_each(steps, check=lambda index, result: steps[index].check(result))
    return [r if isinstance(r, TracestoreError) else step.outcome
            for step, r in zip(steps, results)]


__all__ = [
    "Appended", "IngestOptions", "Ingested", "PlanIngested", "RunsIngested", "agent_format",
    "append_plan", "append_runs", "append_scenario", "append_scenarios", "har_as_session",
    "ingest_input", "is_session_input", "plan_input", "provider_warnings", "write_plan", "write_resume",
    "write_runs", "write_session",
]
