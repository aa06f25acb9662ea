"""An agent run as the log holds it: one attempt's run events gathered with their positions.

``gather_run`` is the only place that reads agent events out of a ``StoredEvent`` sequence;
the admission re-derivation, the release judge, grading and review all take the resulting
``RunRecord`` (plain data, positions kept so every finding can cite its evidence).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracestore.events import (
    AttemptStarted, ModelCalled, ModelDecision, RunFinished, RunGraded, RunOpened, StoredEvent,
    ToolObserved, TraceOpened,
)

LIMIT_NAMES = ("model_calls", "searches", "reads", "source_bytes", "seconds")
USAGE_NAMES = ("model_calls", "searches", "reads", "source_bytes")


@dataclass(frozen=True, slots=True)
class Proposal:
    """A proposed decision and the verdict the application recorded for it (if any)."""

    index: int
    decision: Mapping[str, Any]
    position: int
    verdict: str | None = None
    "admitted / refused as recorded (None: no verdict recorded)."
    verdict_code: str | None = None
    verdict_position: int | None = None
    implied: bool = False

    @property
    def action(self) -> Any:
        return self.decision.get("action")


@dataclass(frozen=True, slots=True)
class Observed:
    index: int
    tool: str
    arguments: Mapping[str, Any]
    result: Mapping[str, Any]
    position: int


@dataclass(frozen=True, slots=True)
class Call:
    index: int
    usage: Mapping[str, Any] | None
    request_sha256: str | None
    position: int


@dataclass(frozen=True, slots=True)
class RunRecord:
    attempt_id: str
    trace_id: str
    opened: RunOpened
    opened_position: int
    calls: tuple[Call, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    observations: tuple[Observed, ...] = ()
    finished: RunFinished | None = None
    finished_position: int | None = None
    recorded_checks: Mapping[str, Any] | None = None
    graded_position: int | None = None
    trace: TraceOpened | None = None

    @property
    def mode(self) -> str:
        return self.opened.mode

    @property
    def label(self) -> str:
        return self.opened.trial_id or self.attempt_id


def gather_run(events: Sequence[StoredEvent], attempt_id: str) -> RunRecord | None:
    """The run recorded for ``attempt_id`` (None when the attempt holds no ``run.opened``)."""
    opened: tuple[RunOpened, int] | None = None
    trace_id = ""
    calls: list[Call] = []
    proposals: dict[int, Proposal] = {}
    order: list[int] = []
    observed: list[Observed] = []
    finished: tuple[RunFinished, int] | None = None
    graded: tuple[RunGraded, int] | None = None
    for stored in events:
        ev = stored.event
        if getattr(ev, "attempt_id", None) != attempt_id:
            continue
        pos = stored.position
        if isinstance(ev, AttemptStarted):
            trace_id = ev.trace_id
        elif isinstance(ev, RunOpened) and opened is None:
            opened = (ev, pos)
        elif isinstance(ev, ModelCalled):
            calls.append(Call(ev.index, ev.usage, ev.request_sha256, pos))
        elif isinstance(ev, ModelDecision):
            _add_decision(proposals, order, ev, pos)
        elif isinstance(ev, ToolObserved):
            observed.append(Observed(ev.index, ev.tool, ev.arguments, ev.result, pos))
        elif isinstance(ev, RunFinished) and finished is None:
            finished = (ev, pos)
        elif isinstance(ev, RunGraded) and graded is None:
            graded = (ev, pos)
    if opened is None:
        return None
    trace = next((s.event for s in events if isinstance(s.event, TraceOpened)
                  and s.event.trace_id == trace_id), None)
    return RunRecord(
        attempt_id=attempt_id, trace_id=trace_id, opened=opened[0], opened_position=opened[1],
        calls=tuple(calls), proposals=tuple(proposals[i] for i in order),
        observations=tuple(observed),
        finished=finished[0] if finished else None,
        finished_position=finished[1] if finished else None,
        recorded_checks=graded[0].checks if graded else None,
        graded_position=graded[1] if graded else None, trace=trace)


def _add_decision(proposals: dict[int, Proposal], order: list[int], ev: ModelDecision,
                  pos: int) -> None:
    # Without an index, each proposal is the next one and a verdict belongs to the latest.
    index = ev.index if ev.index is not None else (
        len(order) if ev.stage == "proposed" else (order[-1] if order else 0))
    if ev.stage == "proposed":
        if index not in proposals:
            proposals[index] = Proposal(index, ev.decision, pos)
            order.append(index)
        return
    current = proposals.get(index)
    if current is None:  # a verdict with no proposal: keep it visible as its own proposal
        current = Proposal(index, ev.decision, pos)
        order.append(index)
    if current.verdict is None:
        proposals[index] = Proposal(current.index, current.decision, current.position,
                                    ev.stage, ev.reason, pos, ev.implied)


def agent_runs(events: Sequence[StoredEvent]) -> list[RunRecord]:
    """Every agent run recorded in ``events``, in the order the attempts were started."""
    from tracestore.agent.codes import AGENT_API

    ids = [e.event.attempt_id for e in events
           if isinstance(e.event, AttemptStarted) and e.event.api == AGENT_API]
    return [run for run in (gather_run(events, a) for a in ids) if run is not None]
