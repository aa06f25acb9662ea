"""Mutated trials (one fact changed each) are caught with the right code, never released,
and audited with positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_mutations import MUTATIONS, OUT, build
from agenthelp import events_of, report, run_of
from clihelp import run
from tracestore.projections import decide_release
from tracestore.projections import reasons as R
from tracestore.projections.destinations import audit

NAMES = list(MUTATIONS)


def _load(name: str) -> dict:
    return json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_each_fixture_is_its_trial_with_the_stated_change(name: str) -> None:
    assert _load(name) == build(report())[name]


@pytest.mark.parametrize("name", NAMES)
def test_rederivation_reaches_the_stated_outcome(name: str) -> None:
    value = _load(name)
    expected = value["mutation"]["expected"]
    recorded, admission = run_of(value)
    assert recorded.finished.status == json.loads(
        Path(OUT / f"{name}.json").read_text())["result"]["status"]
    assert (admission.status, admission.reason) == (expected["status"], expected["reason"])
    assert [[v.index, v.code] for v in admission.verdicts if v.stage == "refused"] == \
        expected["refused"]
    assert [f.code for f in admission.findings] == expected["findings"]
    assert all(f.position is not None for f in admission.findings)


@pytest.mark.parametrize("name", NAMES)
def test_a_disagreeing_run_is_never_released_and_audited(name: str) -> None:
    value = _load(name)
    events = events_of(value)
    decision = decide_release(events, value["id"])
    assert (decision.status, decision.reasons, decision.eligible, decision.answer) == (
        R.HELD, (R.ADMISSION_DISAGREEMENT,), False, None)
    finished = next(e.position for e in events if e.type == "run.finished")
    assert decision.decided_at_position == finished
    violations = audit(events).violations
    findings = run_of(value)[1].findings
    assert [(v.code, v.position) for v in violations] == sorted(
        ((f.code, f.position) for f in findings), key=lambda cp: cp[1])
    assert sorted(v.code for v in violations) == sorted(value["mutation"]["expected"]["findings"])
    assert {v.destination for v in violations} == {"admission"}


def test_cli_audit_reports_the_unissued_read_with_positions(db_file: Path) -> None:
    assert run("ingest", str(OUT / "unissued-read.json"), db=db_file)[0] == 0
    code, out, _ = run("audit", "--json", db=db_file)
    violations = json.loads(out)["violations"]
    assert code == 0
    assert [(v["code"], v["position"]) for v in violations] == [
        ("admission_disagreement", 11), ("unadmitted_observation", 12),
        ("admission_disagreement", 15), ("outcome_disagreement", 16),
        ("usage_disagreement", 16)]
    assert violations[0]["message"] == (
        "decision 1 (read) recorded admitted; re-derived refused unissued_source")
    assert run("audit", "--strict", db=db_file)[0] == 1
    code, out, _ = run("release", "overwrite-agent-1--unissued-read", "--json", db=db_file)
    assert json.loads(out)["status"] == "held"


@pytest.mark.parametrize("columns", [80, 200])
def test_audit_of_a_long_run_id_reads_at_any_width(tmp_path: Path, columns: int) -> None:
    """A mutated run's id is long (32 characters): at 80 columns the violations become one
    block each instead of a table whose message column has no room left; every line fits,
    every code, id and message is shown whole."""
    import os
    import re
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": str(columns), "TRACESTORE_DB": str(tmp_path / "s.db")}

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "tracestore", *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    # the store is written in-process; the audit under test runs in a real process
    from clihelp import run

    assert run("ingest", str(OUT / "unissued-read.json"), db=tmp_path / "s.db")[0] == 0
    out = cli("audit")
    assert all(len(line) <= columns for line in out.splitlines())
    flat = " ".join(re.sub(r"[│┃]", " ", out).split())
    findings = run_of(_load("unissued-read"))[1].findings
    assert len(findings) == 5
    for f in findings:
        assert f.message in flat, f.message
    tokens = re.findall(r"[#a-z0-9_-]+", out)
    assert tokens.count("overwrite-agent-1--unissued-read") >= 5
    if columns == 80:
        assert [t for t in tokens if t.startswith("#")] == [
            "#11", "#12", "#15", "#16", "#16"]
        assert "#11 admission_disagreement (overwrite-agent-1--unissued-read, admission)" \
            in out.splitlines()


# Where each finding points, written by hand from each change: the verdict of decision N
# (which the re-derivation does not share), the observation N no admitted decision asked
# for, or the run's finish (outcome, usage).  Audit positions must name exactly these events.
AT = {
    "altered-quote": [("admission_disagreement", "verdict 2"),
                      ("outcome_disagreement", "finish")],
    "unissued-read": [("admission_disagreement", "verdict 1"),
                      ("unadmitted_observation", "observation 1"),
                      ("admission_disagreement", "verdict 2"),
                      ("outcome_disagreement", "finish"), ("usage_disagreement", "finish")],
    "duplicate-query": [("admission_disagreement", "verdict 3"),
                        ("unadmitted_observation", "observation 3"),
                        ("admission_disagreement", "verdict 4"),
                        ("unadmitted_observation", "observation 4"),
                        ("admission_disagreement", "verdict 5"),
                        ("outcome_disagreement", "finish"), ("usage_disagreement", "finish")],
    "search-limit": [("admission_disagreement", "verdict 3"),
                     ("unadmitted_observation", "observation 3"),
                     ("admission_disagreement", "verdict 4"),
                     ("outcome_disagreement", "finish"), ("usage_disagreement", "finish")],
    "unknown-action": [("admission_disagreement", "verdict 0"),
                       ("admission_disagreement", "verdict 1"),
                       ("admission_disagreement", "verdict 2"),
                       ("unadmitted_observation", "observation 0"),
                       ("unadmitted_observation", "observation 1"),
                       ("outcome_disagreement", "finish"), ("usage_disagreement", "finish")],
    "answer-without-citations": [("admission_disagreement", "verdict 2"),
                                 ("outcome_disagreement", "finish")],
    "deadline-passed": [("admission_disagreement", "verdict 2"),
                        ("outcome_disagreement", "finish")],
    "changed-read": [("admission_disagreement", "verdict 2"),
                     ("outcome_disagreement", "finish"), ("usage_disagreement", "finish")],
    "fourth-search": [("admission_disagreement", "verdict 4"),
                      ("unadmitted_observation", "observation 4"),
                      ("outcome_disagreement", "finish")],
    "shell-only": [("admission_disagreement", "verdict 0"),
                   ("admission_disagreement", "verdict 1"),
                   ("admission_disagreement", "verdict 2"),
                   ("unadmitted_observation", "observation 0"),
                   ("unadmitted_observation", "observation 1"),
                   ("outcome_disagreement", "finish"), ("usage_disagreement", "finish")],
}


def _what(stored: object) -> str:
    event = stored.event  # type: ignore[attr-defined]
    if stored.type == "model.decision" and event.stage != "proposed":  # type: ignore[attr-defined]
        return f"verdict {event.index}"
    if stored.type == "tool.observed":  # type: ignore[attr-defined]
        return f"observation {event.index}"
    if stored.type == "run.finished":  # type: ignore[attr-defined]
        return "finish"
    return stored.type  # type: ignore[attr-defined]


def test_every_mutation_has_a_stated_position() -> None:
    assert sorted(AT) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_audit_positions_name_the_changed_facts(name: str) -> None:
    events = events_of(_load(name))
    at = {e.position: e for e in events}
    assert [(v.code, _what(at[v.position])) for v in audit(events).violations] == AT[name]
