"""Release of agent answers composes with seed 003: answered + citation contract + agreeing
admission + semantic rule; stop, limit and failure return no answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenthelp import AGENT, REPORT, events_of, report, trial
from clihelp import run
from tracestore.ingest.agent import simulate
from tracestore.events import AttemptStarted, LocalStopped, NewEvent, attempt_stream
from tracestore.projections import decide_release
from tracestore.projections import reasons as R
from tracestore.projections.destinations import audit
from tracestore.store.log import EventStore

MUTATIONS = AGENT / "mutations"

OVERWRITE = "In Python 3.12, Path.write_text overwrites an existing file."
RELEASED = (R.CITATION_CONTRACT_PASSED, R.ADMISSION_AGREES, R.SEMANTIC_ACCEPTED)
EXPECTED = {
    "overwrite-fixed-1": (R.RELEASED, RELEASED),
    "overwrite-agent-1": (R.RELEASED, RELEASED),
    "serialize-and-save-fixed-1": (R.RELEASED, RELEASED),
    "serialize-and-save-agent-1": (R.RELEASED, RELEASED),
    "newline-version-fixed-1": (R.INCOMPLETE, (R.MODEL_STOPPED,)),
    "newline-version-agent-1": (R.FAILED, (R.RUN_FAILED, "duplicate_query")),
    "unsupported-fixed-1": (R.HELD, (R.NO_SEMANTIC_RULE,)),
    "unsupported-agent-1": (R.HELD, (R.NO_SEMANTIC_RULE,)),
    "overwrite-fixed-2": (R.RELEASED, RELEASED),
    "overwrite-agent-2": (R.RELEASED, RELEASED),
    "serialize-and-save-fixed-2": (R.RELEASED, RELEASED),
    "serialize-and-save-agent-2": (R.RELEASED, RELEASED),
    "newline-version-fixed-2": (R.INCOMPLETE, (R.MODEL_STOPPED,)),
    "newline-version-agent-2": (R.INCOMPLETE, (R.MODEL_STOPPED,)),
    "unsupported-fixed-2": (R.HELD, (R.NO_SEMANTIC_RULE,)),
    "unsupported-agent-2": (R.HELD, (R.NO_SEMANTIC_RULE,)),
}


@pytest.fixture(scope="module")
def all_events() -> list:
    return events_of(report())


@pytest.mark.parametrize("trial_id", list(EXPECTED))
def test_each_recorded_trial_release(all_events: list, trial_id: str) -> None:
    d = decide_release(all_events, trial_id)
    status, reasons = EXPECTED[trial_id]
    assert (d.status, d.reasons) == (status, reasons)
    finished = next(e.position for e in all_events
                    if e.type == "run.finished" and e.attempt_id == trial_id)
    assert d.decided_at_position == finished
    if status == R.RELEASED:
        assert d.answer == trial(trial_id)["result"]["answer"]
    else:
        assert d.answer is None and not d.eligible


def test_the_whole_report_audits_clean(all_events: list) -> None:
    assert audit(all_events).violations == ()


def test_without_cases_no_answer_is_accepted() -> None:
    events = events_of(trial("overwrite-agent-1"), with_cases=False)
    d = decide_release(events, "overwrite-agent-1")
    assert (d.status, d.reasons, d.answer) == (R.HELD, (R.NO_SEMANTIC_RULE,), None)


def test_pending_until_the_run_finishes() -> None:
    events = events_of(trial("overwrite-agent-1"))
    finished = next(e.position for e in events if e.type == "run.finished")
    d = decide_release(events, "overwrite-agent-1", upto=finished - 1)
    assert (d.status, d.reasons, d.decided_at_position) == (
        R.PENDING, (R.AWAITING_RUN_FINISH,), None)
    assert decide_release(events, "overwrite-agent-1", upto=finished).answer == OVERWRITE


def _with(events: list, extra: object, before_type: str) -> list:
    """The run's planned events with one more inserted before the first ``before_type``."""
    news = [NewEvent(e.stream, e.event, id=e.id, trace_id=e.trace_id) for e in events]
    at = next(i for i, e in enumerate(events) if e.type == before_type)
    stream = attempt_stream(getattr(extra, "attempt_id", "x"))
    news.insert(at, NewEvent(stream, extra, trace_id=events[0].trace_id))
    return simulate(news)


def test_a_local_stop_before_the_finish_stops_it() -> None:
    events = _with(events_of(trial("overwrite-agent-1")),
                   LocalStopped(attempt_id="overwrite-agent-1", by="user"), "run.finished")
    d = decide_release(events, "overwrite-agent-1")
    assert (d.status, d.reasons, d.answer) == (R.STOPPED, (R.LOCAL_STOP_BEFORE_RELEASE,), None)


def test_a_newer_attempt_supersedes_it() -> None:
    newer = AttemptStarted(attempt_id="retry", trace_id="overwrite-agent-1", api="agent-run")
    events = _with(events_of(trial("overwrite-agent-1")), newer, "run.finished")
    d = decide_release(events, "overwrite-agent-1")
    assert (d.status, d.reasons) == (R.SUPERSEDED, (R.SUPERSEDED_BY_NEWER_ATTEMPT,))


def test_a_rule_that_rejects_the_answer() -> None:
    value = trial("overwrite-agent-1")
    value["case_id"] = "serialize-and-save"  # judged by another case's patterns
    d = decide_release(events_of(value), "overwrite-agent-1")
    assert (d.status, d.reasons, d.answer) == (R.REJECTED, (R.SEMANTIC_REJECTED,), None)


def test_a_revised_task_rule_applies_to_agent_runs() -> None:
    from tracestore.events import TaskRevised, TaskRule, trace_stream

    events = events_of(trial("overwrite-agent-1"), with_cases=False)
    news = [NewEvent(e.stream, e.event, id=e.id, trace_id=e.trace_id) for e in events]
    revised = TaskRevised(trace_id="overwrite-agent-1", version=2,
                          task=TaskRule(answer_patterns=("overwrit",)))
    news.insert(1, NewEvent(trace_stream("overwrite-agent-1"), revised,
                            trace_id="overwrite-agent-1"))
    d = decide_release(simulate(news), "overwrite-agent-1")
    assert (d.status, d.rule_version, d.answer) == (R.RELEASED, 2, OVERWRITE)


def test_a_rule_revised_after_the_run_finished_judges_it_again() -> None:
    """A ``task.revised`` after ``run.finished``: the judge takes the newest rule visible,
    and the decision as of the finish (before the revision) keeps the older rule."""
    from tracestore.events import TaskRevised, TaskRule, trace_stream

    events = events_of(trial("overwrite-agent-1"), with_cases=False)
    news = [NewEvent(e.stream, e.event, id=e.id, trace_id=e.trace_id) for e in events]
    for version, rule in ((2, TaskRule(answer_patterns=("overwrit",))),
                          (3, TaskRule(answer_patterns=("overwrit",),
                                       forbidden_patterns=("Path\\.write_text",)))):
        news.append(NewEvent(trace_stream("overwrite-agent-1"),
                             TaskRevised(trace_id="overwrite-agent-1", version=version,
                                         task=rule), trace_id="overwrite-agent-1"))
    stored = simulate(news)
    finished = next(e.position for e in stored if e.type == "run.finished")
    v2, v3 = (e.position for e in stored if e.type == "task.revised")
    as_of = {at: decide_release(stored, "overwrite-agent-1", upto=at)
             for at in (finished, v2, v3)}
    assert [(d.status, d.reasons, d.rule_version, d.decided_at_position, d.answer)
            for d in as_of.values()] == [
        (R.HELD, (R.NO_SEMANTIC_RULE,), None, finished, None),
        (R.RELEASED, RELEASED, 2, finished, OVERWRITE),
        (R.REJECTED, (R.SEMANTIC_REJECTED,), 3, finished, None)]
    assert as_of[v3].judgement.failed_patterns == ("Path\\.write_text",)


def test_cli_task_revision_judges_agent_runs_again(db_file: Path, tmp_path: Path) -> None:
    """``tracestore task`` on agent traces: a new rule version records a decision under it
    (older decisions stay); a rule never releases a run that stopped or whose admission
    disagrees."""
    rule = tmp_path / "rule.json"
    rule.write_text('{"answer_patterns": ["overwrit"]}')
    assert run("ingest", str(REPORT), db=db_file)[0] == 0
    assert run("ingest", str(MUTATIONS / "unissued-read.json"), db=db_file)[0] == 0
    expected = {
        "overwrite-agent-1": ("released", list(RELEASED)),
        "newline-version-agent-2": ("incomplete", [R.MODEL_STOPPED]),
        "overwrite-agent-1--unissued-read": ("held", [R.ADMISSION_DISAGREEMENT]),
    }
    for attempt, (status, reasons) in expected.items():
        code, out, err = run("task", attempt, "--task", str(rule), "--json", db=db_file)
        assert code == 0, err
        result = json.loads(out)
        assert (result["rule_version"], result["decisions"]) == (2, [{
            "attempt_id": attempt, "status": status, "reasons": reasons,
            "decided_at_position": result["decisions"][0]["decided_at_position"],
            "rule_version": 2}])
        shown = json.loads(run("release", attempt, "--json", db=db_file)[1])
        assert (shown["status"], shown["reasons"]) == (status, reasons)
    with EventStore(f"sqlite:///{db_file}") as store:
        decided = [e.event for e in store.read(attempt_id="overwrite-agent-1")
                   if e.type == "release.decided"]
    assert [(d.status, d.reasons, d.rule_version) for d in decided] == [
        ("held", (R.NO_SEMANTIC_RULE,), None), ("released", RELEASED, 2)]


# -- honest runs that end without an answer: the reason is seed 001's, the answer is none ----

def _ended(trial_id: str, *, limits: dict | None = None, decisions: int, observations: int,
           status: str, reason: str, usage: dict, elapsed: float | None = None) -> dict:
    """A recorded trial cut where seed 001's controller would have stopped under ``limits``:
    what its ``finish`` returns then (no answer, no citations), nothing else changed."""
    value = trial(trial_id)
    result = value["result"]
    result["limits"].update(limits or {})
    result["decisions"] = result["decisions"][:decisions]
    result["observations"] = result["observations"][:observations]
    result.update(status=status, reason=reason, answer="", citations=[], usage=usage)
    if elapsed is not None:
        value["elapsed_seconds"] = elapsed
    del value["checks"]  # the recorded checks were the original run's
    return value


ENDED = {
    # The third search is over an allowance of 2.
    R.SEARCH_LIMIT: _ended(
        "newline-version-agent-2", limits={"searches": 2}, decisions=4, observations=3,
        status="incomplete", reason="search_limit",
        usage={"model_calls": 4, "searches": 2, "reads": 1, "source_bytes": 174}),
    # The third read is over an allowance of 2 reads.
    R.READ_OR_BYTE_LIMIT: _ended(
        "serialize-and-save-agent-1", limits={"reads": 2}, decisions=5, observations=4,
        status="incomplete", reason="read_or_byte_limit",
        usage={"model_calls": 5, "searches": 2, "reads": 2, "source_bytes": 353}),
    # The answer arrived after the 180 s deadline.
    R.DEADLINE: _ended(
        "overwrite-agent-1", decisions=3, observations=2, status="incomplete",
        reason="deadline", elapsed=181.0,
        usage={"model_calls": 3, "searches": 1, "reads": 1, "source_bytes": 224}),
    # Two model calls allowed, both spent on tools.
    R.MODEL_CALL_LIMIT: _ended(
        "newline-version-agent-2", limits={"model_calls": 2}, decisions=2, observations=2,
        status="incomplete", reason="model_call_limit",
        usage={"model_calls": 2, "searches": 1, "reads": 1, "source_bytes": 174}),
}


@pytest.mark.parametrize("reason", list(ENDED))
def test_a_limit_or_deadline_returns_no_answer(reason: str) -> None:
    value = ENDED[reason]
    events = events_of(value)
    d = decide_release(events, value["id"])
    assert (d.status, d.reasons, d.answer, d.eligible) == (R.INCOMPLETE, (reason,), None, False)
    assert audit(events).violations == ()  # an honest recording: the re-derivation agrees


def test_a_refused_action_fails_the_run_without_answer() -> None:
    value = trial("overwrite-agent-1")
    result = value["result"]
    result["decisions"] = [{**result["decisions"][0], "action": "shell"}]
    result.update(observations=[], status="failed", reason="unknown_action", answer="",
                  citations=[], usage={"model_calls": 1, "searches": 0, "reads": 0,
                                       "source_bytes": 0})
    del value["checks"]
    events = events_of(value)
    d = decide_release(events, "overwrite-agent-1")
    assert (d.status, d.reasons, d.answer) == (R.FAILED, (R.RUN_FAILED, "unknown_action"), None)
    assert audit(events).violations == ()


def test_destinations_of_agent_runs_are_audited(db_file: Path, tmp_path: Path) -> None:
    """An agent run's attempt takes destination writes like any attempt: the released answer
    may go to ui and history; text of a held run, or other text, is a violation."""
    answer, other = tmp_path / "answer.txt", tmp_path / "other.txt"
    answer.write_text(OVERWRITE, encoding="utf-8")
    other.write_text("Backups are kept for 7 days.", encoding="utf-8")
    assert run("ingest", str(REPORT), "--cases", str(AGENT / "cases.json"), db=db_file)[0] == 0
    for attempt, name, path in (("overwrite-agent-1", "ui", answer),
                                ("overwrite-agent-1", "history", answer),
                                ("unsupported-agent-1", "ui", other),
                                ("overwrite-agent-2", "ui", other)):
        assert run("destination", attempt, name, "--text-file", str(path), db=db_file)[0] == 0
    code, out, _ = run("audit", "--json", db=db_file)
    violations = [(v["code"], v["attempt_id"], v["destination"])
                  for v in json.loads(out)["violations"]]
    assert violations == [("ineligible_text_in_destination", "unsupported-agent-1", "ui"),
                          ("answer_mismatch", "overwrite-agent-2", "ui")]
