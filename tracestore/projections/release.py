"""The release decision (seed 003's policy, made executable).

An answer is released only when, at some global position, all of these hold: the attempt
is the active one of its trace and was not locally stopped; its output fits the profile;
it ended by a normal native terminal; the transport drained cleanly with no exceptional
event before; and the answer passed the task's semantic rule.

The decision is judged incrementally, event by event in global position order, and the
FIRST final outcome sticks: once released at position P a later Stop or late exception
does not undo it, and once stopped, a late normal ending cannot release.  Wall-clock
times are never consulted.  ``ReleaseJudge`` is the incremental form (the replay planner
feeds it while it plans); ``decide_release`` is the batch form the CLI uses — both run the
same code, so a recorded ``release.decided`` and a recomputed decision agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracestore.events import (
    AttemptStarted, SemanticJudged, StoredEvent, TaskRevised, TaskRule, TraceOpened,
)
from tracestore.projections import reasons as R
from tracestore.projections.attempt import AttemptFold, AttemptView, start_fold, visible
# The judges of apis that are not provider streams (agent runs), by name: see judges.py.
from tracestore.projections.judges import JUDGES, LAZY_JUDGES, register_judge  # noqa: F401
from tracestore.projections.semantics import Judgement, judge, sha256_text

if TYPE_CHECKING:  # loaded by _structured_outcome, with the first structured reply
    from tracestore.contracts.judge import ReplyVerdict

_DRAIN_REASON = {"eof": R.DRAIN_EOF, "error": R.DRAIN_ERROR, "reset": R.DRAIN_RESET}


@dataclass(frozen=True, slots=True)
class ReleaseDecision:
    attempt_id: str
    trace_id: str
    eligible: bool
    status: str
    reasons: tuple[str, ...]
    decided_at_position: int | None
    "Position of the event that made the outcome final; None while pending."
    answer: str | None
    "The released answer; None unless released."
    answer_sha256: str | None
    notes: tuple[str, ...]
    "Facts that did not change the decision (metadata_absent, stop_after_release …)."
    judgement: Judgement | None = None
    "The semantic verdict, when one was made (released or rejected)."
    policy_version: str = R.POLICY_VERSION
    contract: ContractReport | None = None
    "For a structured answer: the contract verdict, citations, binding state."
    decided_text: str | None = None
    """The candidate as it stood when the outcome became final (text arriving later — a
    late answer after a Stop — is not part of what may be shown)."""
    rule_version: int | None = None
    "The task rule version judged under (1 = the rule trace.opened holds; None: no rule)."

    def to_dict(self) -> dict[str, Any]:
        """The CLI/JSON contract (``tracestore release ATTEMPT --json``)."""
        out = {
            "attempt_id": self.attempt_id, "eligible": self.eligible, "status": self.status,
            "reasons": list(self.reasons), "decided_at_position": self.decided_at_position,
            "answer": self.answer, "answer_sha256": self.answer_sha256,
            "notes": list(self.notes),
        }
        if self.contract is not None:
            out["contract"] = self.contract.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class ContractReport:
    """What the structured-answer judgement found (None fields: not judged, or no evidence)."""

    contract: str | None
    "The bound contract's name; None when no contract is bound."
    verdict: ReplyVerdict | None
    "The reply's verdict; None unless the stream ended normally and drained cleanly."
    binding: str
    "``checked`` (frames and citations compared with the recorded binding), ``unknown``."
    frame_failure: str | None = None
    answer_field: str | None = None
    "The reply field holding the answer text (what the envelope shows)."
    answer_model: dict[str, Any] | None = None
    "Seed 004's internal Answer of an accepted reply (the envelope's ``result``)."
    local_terminal: str | None = None
    "Seed 000's application frames: the kind of the first terminal frame (done, cancel, error)."
    terminal_reason: str | None = None
    """The ``reason`` that cancel or error frame carried, verbatim (seed 000's result
    ``reason``): the decision's reasons keep their stable codes (``controlled_local_cancel``,
    ``controlled_local_error``), so the application's own words are kept here, untrusted."""

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "contract": self.contract, "binding": self.binding,
            "frame_failure": self.frame_failure,
            "code": v.code if v else None, "detail": v.detail if v else None,
            "version": v.version if v else None,
            "problems": [p.to_dict() for p in v.problems] if v else [],
            "citations": [c.to_dict() for c in v.citations] if v else [],
            "citations_checked": bool(v and v.citations_checked),
            "reply": v.reply if v and v.ok else None,
            "local_terminal": self.local_terminal, "terminal_reason": self.terminal_reason,
        }


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: str
    reasons: tuple[str, ...]
    judgement: Judgement | None = None
    verdict: ReplyVerdict | None = None


def _named(fold: AttemptFold, out: _Outcome | None) -> _Outcome | None:
    """The outcome with reasons in the profile's own vocabulary (seed 000's names)."""
    if out is None or fold.profile is None or not fold.profile.reason_names:
        return out
    return _Outcome(out.status, tuple(fold.profile.reason(r) for r in out.reasons),
                    out.judgement, out.verdict)


def _evaluate(fold: AttemptFold, rule: TaskRule | None,
              person: SemanticJudged | None = None) -> _Outcome | None:
    """The outcome if the facts folded so far make it final, else None.

    Only the newest event can make it final (earlier states were not), so the order of
    checks matters only for a single native event carrying several facts.
    """
    if fold.stop_position is not None:
        return _Outcome(R.STOPPED, (R.LOCAL_STOP_BEFORE_RELEASE,))
    if fold.superseded_at is not None:
        return _Outcome(R.SUPERSEDED, (R.SUPERSEDED_BY_NEWER_ATTEMPT,))
    if fold.profile is None:
        return _Outcome(R.HELD, (R.NO_PROFILE,))
    if fold.frame_failure is not None:
        return _Outcome(R.HELD, (fold.frame_failure.code,))
    if any(a.code == R.EVENT_AFTER_TERMINAL for a in fold.anomalies):
        # seed 004: nothing after the terminal; it holds the decision itself, whatever the
        # late event says (an error after done is not an exception of the answer).
        return _Outcome(R.HELD, tuple(dict.fromkeys(a.code for a in fold.anomalies)))
    if any(t.outcome == "failed" for t in fold.terminals):
        return _Outcome(R.FAILED, (R.NATIVE_FAILURE,))
    if fold.errors:
        return _exception_outcome(fold)
    if fold.anomalies:
        return _Outcome(R.HELD, tuple(dict.fromkeys(a.code for a in fold.anomalies)))
    if fold.terminals and fold.terminals[0].outcome == "limited":
        return _Outcome(R.LIMITED, (R.NATIVE_LIMIT_REACHED,))
    if fold.terminals and fold.terminals[0].outcome == "refused":
        return _Outcome(R.REFUSED, (fold.terminals[0].reason or R.NATIVE_REFUSAL,))
    if fold.terminals and fold.terminals[0].outcome == "cancelled":
        return _Outcome(R.STOPPED, (R.CONTROLLED_LOCAL_CANCEL,))
    if fold.drain is None:
        return None
    return _drained_outcome(fold, rule, person)


def _exception_outcome(fold: AttemptFold) -> _Outcome:
    if any(e.classification == "unknown" for e in fold.errors):
        return _Outcome(R.HELD, (R.UNKNOWN_EXCEPTION,))
    if fold.normal_ending:  # the answer looked complete, but the stream did not end cleanly
        return _Outcome(R.HELD, (R.EXCEPTION_BEFORE_DRAIN,))
    if any(e.classification == "failed" for e in fold.errors):
        return _Outcome(R.FAILED, (R.NATIVE_FAILURE,))
    return _Outcome(R.INTERRUPTED, (R.NATIVE_EXCEPTION,))


def by_reviewer(rule: TaskRule | None) -> bool:
    """The rule leaves semantic acceptance to a reviewer's recorded verdict."""
    return rule is not None and rule.semantic == "reviewer"


def _person_outcome(fold: AttemptFold, person: SemanticJudged | None) -> _Outcome | None:
    """A reviewer's verdict on exactly this answer, or None (pending: awaited)."""
    text = fold.text()
    if person is None or person.answer_sha256 != sha256_text(text):
        return None
    judged = Judgement(person.verdict, (), person.answer_sha256)
    if person.verdict == "accepted":
        return _Outcome(R.RELEASED, (R.NORMAL_NATIVE_ENDING, R.CLEAN_DRAIN,
                                     R.SEMANTIC_ACCEPTED), judged)
    return _Outcome(R.REJECTED, (R.SEMANTIC_REJECTED,), judged)


def _drained_outcome(fold: AttemptFold, rule: TaskRule | None,
                     person: SemanticJudged | None = None) -> _Outcome | None:
    assert fold.drain is not None and fold.profile is not None
    missing = () if fold.terminals else (R.NO_NATIVE_TERMINAL,)
    if fold.drain.outcome != "clean":
        status = fold.profile.drain_error_status if fold.drain.outcome == "error" \
            else R.INTERRUPTED
        return _Outcome(status, missing + (_DRAIN_REASON[fold.drain.outcome],))
    if missing:
        return _Outcome(R.INTERRUPTED, missing)
    if fold.profile.metadata_required and fold.usage is None:
        return _Outcome(R.HELD, (R.METADATA_MISSING,))
    if not fold.text().strip():
        # The text profile asks for one text block; a normal ending with nothing in it is
        # seed 004's ``empty`` state, not an answer, whatever the task rule would accept.
        return _Outcome(R.HELD, (R.EMPTY_ANSWER,))
    bound = fold.profile.max_text_chars
    if bound is not None and len(fold.text()) > bound:
        # seed 004's stream bound: over it the answer is rejected, never cut
        return _Outcome(R.REJECTED, (R.TOO_LARGE,))
    if fold.structured:
        return _structured_outcome(fold, rule)
    if by_reviewer(rule):
        return _person_outcome(fold, person)
    if rule is None or not (rule.answer_patterns or rule.forbidden_patterns):
        return _Outcome(R.HELD, (R.NO_SEMANTIC_RULE,))
    verdict = judge(rule, fold.text())
    if verdict.timed_out:  # a pattern ran past its bound: no verdict, held
        return _Outcome(R.HELD, (R.RULE_TIMEOUT,), verdict)
    if verdict.verdict == "accepted":
        return _Outcome(R.RELEASED, (R.NORMAL_NATIVE_ENDING, R.CLEAN_DRAIN, R.SEMANTIC_ACCEPTED),
                        verdict)
    return _Outcome(R.REJECTED, (R.SEMANTIC_REJECTED,), verdict)


def _structured_outcome(fold: AttemptFold, rule: TaskRule | None) -> _Outcome:
    """A structured reply, parsed only now (normal ending, clean drain): the contract
    judges it, then the task rule (if any) judges its answer field."""
    contract = fold.bindings.contract
    text = fold.structured_text(contract)
    if not text.strip():
        return _Outcome(R.HELD, (R.EMPTY_ANSWER,))  # seed 004's ``empty`` state
    if contract is None:
        return _Outcome(R.HELD, (R.NO_CONTRACT,))
    # The contract judge loads with the first structured reply (a text attempt never does).
    from tracestore.contracts.binding import context_of, inconsistency
    from tracestore.contracts.judge import judge_reply

    binding = fold.bindings.binding
    problem = inconsistency(binding) if binding is not None else None
    if problem is not None:  # seed 000: a binding is checked before use
        return _Outcome(R.HELD, (problem[0],))
    verdict = judge_reply(contract, text, context_of(binding) if binding is not None else None)
    if not verdict.ok:
        return _Outcome(R.REJECTED, verdict.reasons(), verdict=verdict)
    if contract.doc.citation_field and not verdict.citations_checked:
        return _Outcome(R.HELD, (R.NO_REQUEST_BINDING,), verdict=verdict)
    released = (R.NORMAL_NATIVE_ENDING, R.CLEAN_DRAIN, R.CONTRACT_ACCEPTED)
    if rule is None or not (rule.answer_patterns or rule.forbidden_patterns):
        return _Outcome(R.RELEASED, released, verdict=verdict)
    answer = verdict.reply.get(contract.doc.answer_field) if verdict.reply else None
    judged = judge(rule, answer if isinstance(answer, str) else "")
    if judged.timed_out:
        return _Outcome(R.HELD, (R.RULE_TIMEOUT,), judged, verdict)
    if judged.verdict == "accepted":
        return _Outcome(R.RELEASED, released + (R.SEMANTIC_ACCEPTED,), judged, verdict)
    return _Outcome(R.REJECTED, (R.SEMANTIC_REJECTED,), judged, verdict)


def _pending_reasons(fold: AttemptFold, rule: TaskRule | None = None) -> tuple[str, ...]:
    reasons: tuple[str, ...] = () if fold.terminals else (R.AWAITING_NATIVE_TERMINAL,)
    reasons += (R.AWAITING_DRAIN,) if fold.drain is None else ()
    return reasons + ((R.AWAITING_REVIEWER_VERDICT,) if by_reviewer(rule) else ())


@dataclass(frozen=True, slots=True)
class RuleInForce:
    rule: TaskRule | None
    version: int | None


def rule_in_force(events: Sequence[StoredEvent], trace_id: str) -> RuleInForce:
    """The trace's newest task rule in ``events``: ``trace.opened``'s is version 1, each
    ``task.revised`` names the next.  A decision is judged under the newest rule visible;
    decisions recorded under an older version stay in the log as they were."""
    rule: TaskRule | None = None
    version: int | None = None
    for stored in events:
        event = stored.event
        if isinstance(event, TraceOpened) and event.trace_id == trace_id and version is None:
            rule, version = event.task, (1 if event.task is not None else None)
        elif isinstance(event, TaskRevised) and event.trace_id == trace_id:
            rule, version = event.task, event.version
    return RuleInForce(rule, version)


class ReleaseJudge:
    """Incremental release decision for one attempt: ``feed`` events in position order."""

    def __init__(self, fold: AttemptFold, trace: TraceOpened | None,
                 task: RuleInForce | None = None) -> None:
        self.fold = fold
        if task is None:
            task = RuleInForce(trace.task if trace else None,
                               1 if trace is not None and trace.task is not None else None)
        self.rule, self.rule_version = task.rule, task.version
        self.outcome: _Outcome | None = None
        self.decided_at: int | None = None
        self.decided_text: str | None = None
        self.person: SemanticJudged | None = None
        "The latest reviewer verdict on this attempt (a rule with semantic=reviewer)."
        # The start event itself may already decide (no profile): judge it once.
        self._judge(fold.start.position)

    @classmethod
    def for_attempt(cls, events: Sequence[StoredEvent], attempt_id: str,
                    rule: RuleInForce | None = None) -> ReleaseJudge:
        """The judge for an attempt: ``events`` must hold its start (and its trace's
        opening); ``rule`` is the task rule in force when the caller already knows it."""
        fold, trace = start_fold(events, attempt_id)
        task = rule if rule is not None else rule_in_force(events, fold.started.trace_id)
        return JUDGES.get(fold.started.api, cls)(fold, trace, task)

    def findings(self) -> tuple[Any, ...]:
        """Audit violations the judge itself found (agent runs: admission disagreements)."""
        return ()

    @property
    def decided(self) -> bool:
        return self.outcome is not None

    def feed(self, stored: StoredEvent) -> None:
        if stored.position <= self.fold.start.position:
            return
        event = stored.event
        if (event.__class__ is SemanticJudged and event.by != "rule"
                and event.attempt_id == self.fold.started.attempt_id):
            if self.outcome is None and by_reviewer(self.rule):
                self.person = event
                self._judge(stored.position)
            return
        if self.fold.apply(stored) and self.outcome is None:
            self._judge(stored.position)

    def feed_observed(self, position: int, native: Any,
                      observations: Sequence[Any]) -> None:
        """``feed`` of one of this attempt's frames with its observations already made (see
        ``AttemptFold.frame_observed``; only when ``fold.folds_observed``).

        A frame that adds no anomaly, terminal or error before any drain leaves every fact
        ``_evaluate`` reads as it was when it last answered "not final", so it is not asked
        again (a text delta, nearly every frame of an answer)."""
        fold = self.fold
        if self.outcome is not None:
            fold.frame_observed(position, native, observations)
            return
        before = len(fold.anomalies), len(fold.terminals), len(fold.errors)
        fold.frame_observed(position, native, observations)
        if fold.drain is not None or before != (len(fold.anomalies), len(fold.terminals),
                                                len(fold.errors)):
            self._judge(position)

    def _judge(self, position: int) -> None:
        self.outcome = _named(self.fold, _evaluate(self.fold, self.rule, self.person))
        if self.outcome is not None:
            self.decided_at = position
            self.decided_text = self.fold.text()

    def decision(self) -> ReleaseDecision:
        view = self.fold.view()
        out = self.outcome or _Outcome(R.PENDING, _pending_reasons(self.fold, self.rule))
        released = out.status == R.RELEASED
        answer = view.text if released else None
        report = None
        if view.structured:
            contract = self.fold.bindings.contract
            local_terminal, terminal_reason = _local_terminal(self.fold)
            report = ContractReport(
                contract.name if contract is not None else None, out.verdict,
                "checked" if view.binding_sha256 is not None else "unknown",
                view.frame_failure.code if view.frame_failure is not None else None,
                contract.doc.answer_field if contract is not None else None,
                contract.internal_answer(out.verdict.reply) if contract is not None
                and out.verdict is not None and out.verdict.ok and isinstance(
                    out.verdict.reply, dict) else None,
                local_terminal, terminal_reason)
        return ReleaseDecision(
            attempt_id=view.attempt_id, trace_id=view.trace_id, eligible=released,
            status=out.status, reasons=out.reasons, decided_at_position=self.decided_at,
            answer=answer, answer_sha256=sha256_text(answer) if answer is not None else None,
            notes=_notes(view, out.status, self.decided_at), judgement=out.judgement,
            contract=report, decided_text=self.decided_text,
            rule_version=self.rule_version)

    def view(self) -> AttemptView:
        return self.fold.view()


def _local_terminal(fold: AttemptFold) -> tuple[str | None, str | None]:
    """Seed 000's ``local_terminal`` and its frame's own ``reason`` (None, None when the
    profile does not read application frames or no terminal frame arrived yet).

    A ``cancel`` frame is a terminal carrying its reason as the stop reason; an ``error``
    frame is an error event named ``error`` carrying it as its code (app_frames.py)."""
    if fold.profile is None or not fold.profile.frame_rules:
        return None, None
    terminal = fold.terminals[0] if fold.terminals else None
    error = next((e for e in fold.errors if e.name == "error"), None)
    if error is not None and (terminal is None or error.position < terminal.position):
        return "error", error.error_code
    if terminal is not None:
        return terminal.status, terminal.stop_reason
    return None, None


def _notes(view: AttemptView, status: str, decided_at: int | None) -> tuple[str, ...]:
    notes: list[str] = []
    # Accounting is judged as of the decision: a late terminal after a Stop is not the
    # ending the decision rested on, so its missing metadata is not worth a note.
    terminal = view.terminal
    if (terminal is not None and terminal.outcome == "normal" and view.usage is None
            and (decided_at is None or terminal.position <= decided_at)):
        notes.append(R.METADATA_ABSENT)
    if view.grapheme_splits:
        notes.append(R.GRAPHEME_SPLIT)
    if decided_at is not None:
        if status == R.RELEASED and view.stop_position is not None:
            notes.append(R.STOP_AFTER_RELEASE)
        if status != R.SUPERSEDED and view.superseded_at is not None:
            notes.append(R.SUPERSEDED_AFTER_DECISION)
        if view.last_frame_position is not None and view.last_frame_position > decided_at:
            notes.append(R.FRAMES_AFTER_DECISION)
    return tuple(notes)


def decide_release(events: Sequence[StoredEvent], attempt_id: str, *,
                   upto: int | None = None) -> ReleaseDecision:
    """The decision for ``attempt_id`` as of global position ``upto`` (default: the end)."""
    return decide_with_view(events, attempt_id, upto=upto)[0]


def decide_with_view(events: Sequence[StoredEvent], attempt_id: str, *,
                     upto: int | None = None) -> tuple[ReleaseDecision, AttemptView]:
    """The decision and the attempt view it was judged on, from one fold."""
    events = visible(events, upto)
    judge_ = ReleaseJudge.for_attempt(events, attempt_id)
    for stored in events:
        judge_.feed(stored)
    return judge_.decision(), judge_.view()


def trace_attempts(events: Sequence[StoredEvent], trace_id: str | None = None) -> list[str]:
    """Attempt ids (of one trace, or all) in the order they were started."""
    return [e.event.attempt_id for e in events if isinstance(e.event, AttemptStarted)
            and (trace_id is None or e.event.trace_id == trace_id)]


def decide_all(events: Sequence[StoredEvent], trace_id: str | None = None, *,
               upto: int | None = None) -> list[ReleaseDecision]:
    events = visible(events, upto)
    return [decide_release(events, a) for a in trace_attempts(events, trace_id)]
