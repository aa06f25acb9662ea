"""Release of agent answers, composed with seed 003's release decision.

An agent run's attempt is a tracestore attempt, so seed 003's rules that do not depend on a
provider stream still apply unchanged (a local Stop before release stops it; a newer attempt
of the trace supersedes it; the first final outcome sticks).  In place of the stream
conditions (profile, native ending, drain) an agent answer is released only when:

* the run finished ``answered`` with reason ``citation_contract_passed``;
* the re-derived admission agrees with everything the run recorded;
* the trace's semantic rule accepts the answer.

A stop, limit or failure returns no answer.  The decision is made at the ``run.finished``
event, judged incrementally like every other attempt.

The judge registers itself for the ``agent-run`` api (``register_judge``), so
``ReleaseJudge.for_attempt`` picks it without importing this module; the package's
``__init__`` imports it, so it is registered whenever any projection is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracestore.agent.admission import Admission, rederive
from tracestore.agent.run import gather_run
from tracestore.events import RunFinished, StoredEvent
from tracestore.projections import reasons as R
from tracestore.agent.codes import AGENT_API
from tracestore.projections.release import (ReleaseDecision, ReleaseJudge, _Outcome,
                                            LAZY_JUDGES, register_judge)
from tracestore.projections.semantics import judge, sha256_text

if TYPE_CHECKING:
    from tracestore.events import TraceOpened
    from tracestore.projections.attempt import AttemptFold
    from tracestore.projections.release import RuleInForce

_RUN_TYPES = frozenset({"run.opened", "model.called", "model.decision", "tool.observed",
                        "run.finished", "run.graded"})


@dataclass(frozen=True, slots=True)
class AgentViolation:
    """A finding as an audit violation (same fields as ``destinations.Violation``)."""

    code: str
    attempt_id: str
    destination: str
    position: int
    message: str

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "attempt_id": self.attempt_id,
                "destination": self.destination, "position": self.position,
                "message": self.message}


class AgentReleaseJudge(ReleaseJudge):
    """``ReleaseJudge`` for an ``agent-run`` attempt: same interface, agent conditions."""

    def __init__(self, fold: AttemptFold, trace: TraceOpened | None,
                 task: RuleInForce | None = None) -> None:
        self.mine: list[StoredEvent] = [fold.start]
        self.admission: Admission | None = None
        self.answer: str | None = None
        super().__init__(fold, trace, task)

    def feed(self, stored: StoredEvent) -> None:
        if stored.position <= self.fold.start.position:
            return
        concerned = self.fold.apply(stored)
        if stored.type in _RUN_TYPES and stored.attempt_id == self.fold.started.attempt_id:
            self.mine.append(stored)
            concerned = True
        if concerned and self.outcome is None:
            self._judge(stored.position)

    def _judge(self, position: int) -> None:
        self.outcome = self._evaluate()
        if self.outcome is not None:
            self.decided_at = position
            finished = next((e.event for e in self.mine if isinstance(e.event, RunFinished)),
                            None)
            self.decided_text = finished.answer if finished is not None else ""

    def _evaluate(self) -> _Outcome | None:
        fold = self.fold
        if fold.stop_position is not None:
            return _Outcome(R.STOPPED, (R.LOCAL_STOP_BEFORE_RELEASE,))
        if fold.superseded_at is not None:
            return _Outcome(R.SUPERSEDED, (R.SUPERSEDED_BY_NEWER_ATTEMPT,))
        finished = next((e.event for e in self.mine if isinstance(e.event, RunFinished)), None)
        if finished is None:
            return None
        run = gather_run(self.mine, fold.started.attempt_id)
        if run is None:  # a finish without run.opened: nothing to re-derive from
            return _Outcome(R.HELD, (R.ADMISSION_DISAGREEMENT,))
        self.admission = rederive(run)
        if not self.admission.agrees:
            return _Outcome(R.HELD, (R.ADMISSION_DISAGREEMENT,))
        if finished.status == "incomplete":
            return _Outcome(R.INCOMPLETE, (finished.reason,))
        if finished.status == "failed":
            return _Outcome(R.FAILED, (R.RUN_FAILED, finished.reason))
        if self.rule is None or not (self.rule.answer_patterns or self.rule.forbidden_patterns):
            return _Outcome(R.HELD, (R.NO_SEMANTIC_RULE,))
        verdict = judge(self.rule, finished.answer)
        if verdict.verdict != "accepted":
            return _Outcome(R.REJECTED, (R.SEMANTIC_REJECTED,), verdict)
        self.answer = finished.answer
        return _Outcome(R.RELEASED, (R.CITATION_CONTRACT_PASSED, R.ADMISSION_AGREES,
                                     R.SEMANTIC_ACCEPTED), verdict)

    def decision(self) -> ReleaseDecision:
        view = self.fold.view()
        out = self.outcome or _Outcome(R.PENDING, (R.AWAITING_RUN_FINISH,))
        released = out.status == R.RELEASED
        answer = self.answer if released else None
        notes = (R.STOP_AFTER_RELEASE,) if released and view.stop_position is not None else ()
        return ReleaseDecision(
            attempt_id=view.attempt_id, trace_id=view.trace_id, eligible=released,
            status=out.status, reasons=out.reasons, decided_at_position=self.decided_at,
            answer=answer, answer_sha256=sha256_text(answer) if answer is not None else None,
            notes=notes, judgement=out.judgement, decided_text=self.decided_text,
            rule_version=self.rule_version)

    def findings(self) -> tuple[AgentViolation, ...]:
        """Every disagreement between the recorded run and its re-derivation, by position."""
        if self.admission is None:
            run = gather_run(self.mine, self.fold.started.attempt_id)
            if run is None or run.finished is None:
                return ()
            self.admission = rederive(run)
        attempt = self.fold.started.attempt_id
        return tuple(AgentViolation(f.code, attempt, "admission",
                                    f.position if f.position is not None
                                    else self.fold.start.position, f.message)
                     for f in self.admission.findings)


register_judge(AGENT_API, AgentReleaseJudge)
# ``release.JUDGES`` imports this module when an ``agent-run`` attempt is first judged.
assert LAZY_JUDGES.get(AGENT_API) == __name__, "name this module in release.LAZY_JUDGES"
