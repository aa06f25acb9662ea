"""Seed 001's independent checks, computed from tracestore's own re-derivation.

``grade`` mirrors seed 001's ``evaluate.grade``: whether the case's target sources were read,
the answer fixture check (expected sources cited, every answer pattern, no forbidden one; for
a case without targets only an explicit ``model_stopped`` abstention passes, never
exhaustion), the outcome, and the trajectory (queries, refined, within limits).  Status,
reason, answer, citations and usage come from the re-derived admission, not from what the run
recorded; the recorded ``checks`` (``run.graded``) are only compared, check by check.  The
sources read and the trajectory read the observations the re-derivation ADMITTED, as seed
001's evaluator reads the run's own observations list that only successful tool calls
enter: a recorded observation the re-derivation never reached is not "read".

Without a case, the checks that need one are named in ``not_computed`` instead of guessed.
Labels never select actions here either: grading reads a finished run and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracestore.agent.admission import Admission, rederive
from tracestore.agent.run import RunRecord

SCOPE = ("Source targets, answer patterns and explicit abstention on authored fixtures; "
         "human semantic review is separate.")
CASE_CHECKS = ("retrieval_targets_read", "answer_fixture_check", "outcome")
OUTCOMES = ("pass", "fail", "incomplete")


@dataclass(frozen=True, slots=True)
class Grade:
    attempt_id: str
    trial: str
    case_id: str | None
    mode: str
    repeat: int | None
    status: str
    reason: str | None
    model_calls: int
    checks: Mapping[str, Any]
    "The computed checks (case checks only when a case was given)."
    not_computed: tuple[str, ...]
    "Checks that need a case file, named when none (or no matching case) was given."
    recorded: Mapping[str, Any] | None
    mismatches: tuple[str, ...]
    "Computed checks that differ from the recorded ones."
    admission_agrees: bool
    question: str = ""
    "The run's question (the fixed path's one search is the question itself)."

    def to_dict(self) -> dict[str, Any]:
        return {"attempt_id": self.attempt_id, "trial": self.trial, "case_id": self.case_id,
                "mode": self.mode, "repeat": self.repeat, "status": self.status,
                "reason": self.reason, "model_calls": self.model_calls,
                "checks": dict(self.checks), "not_computed": list(self.not_computed),
                "recorded": dict(self.recorded) if self.recorded is not None else None,
                "mismatches": list(self.mismatches),
                "admission_agrees": self.admission_agrees}


def _answer(run: RunRecord, admission: Admission) -> str:
    """The admitted answer's text (only an answered re-derivation has one)."""
    if admission.status != "answered":
        return ""
    index = next(v.index for v in admission.verdicts if v.action == "answer"
                 and v.stage == "admitted")
    return str(next(p.decision["answer"] for p in run.proposals if p.index == index))


def trajectory(run: RunRecord, admission: Admission) -> dict[str, Any]:
    queries = [o.arguments.get("query") for o in admission.observations if o.tool == "search"]
    limits = run.opened.limits
    return {"queries": queries, "refined": len(queries) > 1,
            "within_limits": all(v <= limits.get(k, 0) for k, v in admission.usage.items())}


def case_checks(case: Mapping[str, Any], run: RunRecord, admission: Admission
                ) -> dict[str, Any]:
    read_ids = {o.result.get("source_id") for o in admission.observations if o.tool == "read"}
    expected = set(case.get("sources", ()))
    retrieval = expected <= read_ids if expected else None
    if expected:
        answer = _answer(run, admission)
        cited = {c.get("source_id") for c in admission.citations}
        passed = (admission.status == "answered" and expected <= cited
                  and all(re.search(p, answer, re.I) for p in case.get("answer_patterns", ()))
                  and not any(re.search(p, answer, re.I)
                              for p in case.get("forbidden_patterns", ())))
    else:
        # Only an explicit model abstention passes this fixture, never exhaustion.
        passed = admission.status == "incomplete" and admission.reason == "model_stopped"
    outcome = "pass" if passed else ("incomplete" if admission.status == "incomplete"
                                     else "fail")
    return {"retrieval_targets_read": retrieval, "answer_fixture_check": bool(passed),
            "outcome": outcome}


def grade(run: RunRecord, case: Mapping[str, Any] | None,
          admission: Admission | None = None) -> Grade:
    admission = admission or rederive(run)
    checks: dict[str, Any] = {}
    not_computed: tuple[str, ...] = CASE_CHECKS
    if case is not None:
        checks.update(case_checks(case, run, admission))
        not_computed = ()
    checks["trajectory"] = trajectory(run, admission)
    checks["scope"] = SCOPE
    recorded = run.recorded_checks
    mismatches = tuple(k for k in checks if recorded is not None and k in recorded
                       and recorded[k] != checks[k])
    return Grade(run.attempt_id, run.label, run.opened.case_id, run.mode, run.opened.repeat,
                 admission.status, admission.reason, admission.usage.get("model_calls", 0),
                 checks, not_computed, recorded, mismatches, admission.agrees,
                 run.opened.question)


def summary(grades: Sequence[Grade]) -> dict[str, dict[str, int]]:
    """Outcome counts per path (fixed first, as seed 001 prints them); graded runs only."""
    out: dict[str, dict[str, int]] = {}
    for mode in ("fixed", "agent"):
        mine = [g for g in grades if g.mode == mode and "outcome" in g.checks]
        if mine:
            out[mode] = {o: sum(g.checks["outcome"] == o for g in mine) for o in OUTCOMES}
    return out


def recorded_summary(grades: Sequence[Grade]) -> dict[str, dict[str, int]]:
    """The same counts over the recorded checks (the oracle), for comparison."""
    out: dict[str, dict[str, int]] = {}
    for mode in ("fixed", "agent"):
        mine = [g.recorded for g in grades if g.mode == mode and g.recorded is not None]
        if mine:
            out[mode] = {o: sum(r.get("outcome") == o for r in mine) for o in OUTCOMES}
    return out
