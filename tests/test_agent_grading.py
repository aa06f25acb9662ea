"""Grading re-derived from tracestore's own admission; the recorded checks are the oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_mutations import OUT
from agenthelp import CASES, REPORT, cases, events_of, report, run_of, trial
from clihelp import run
from tracestore.agent.grading import SCOPE, grade, summary
from tracestore.agent.run import agent_runs

# Seed 001's table: expected sources read, answer fixture (outcome).
TABLE = {
    "overwrite-fixed-1": (True, "pass"), "overwrite-agent-1": (True, "pass"),
    "serialize-and-save-fixed-1": (True, "pass"), "serialize-and-save-agent-1": (True, "pass"),
    "newline-version-fixed-1": (True, "incomplete"), "newline-version-agent-1": (True, "fail"),
    "unsupported-fixed-1": (None, "fail"), "unsupported-agent-1": (None, "fail"),
    "overwrite-fixed-2": (True, "pass"), "overwrite-agent-2": (True, "pass"),
    "serialize-and-save-fixed-2": (True, "pass"), "serialize-and-save-agent-2": (True, "pass"),
    "newline-version-fixed-2": (True, "incomplete"), "newline-version-agent-2": (True, "incomplete"),
    "unsupported-fixed-2": (None, "fail"), "unsupported-agent-2": (None, "fail"),
}


@pytest.mark.parametrize("trial_id", list(TABLE))
def test_each_trial_grades_to_its_recorded_checks(trial_id: str) -> None:
    value = trial(trial_id)
    recorded, admission = run_of(value)
    g = grade(recorded, cases()[value["case_id"]], admission)
    retrieval, outcome = TABLE[trial_id]
    assert (g.checks["retrieval_targets_read"], g.checks["outcome"]) == (retrieval, outcome)
    assert g.checks["answer_fixture_check"] == (outcome == "pass")
    assert dict(g.checks) == value["checks"]  # the oracle, every check including trajectory
    assert g.mismatches == () and g.not_computed == ()


def test_summary_is_seed_001s() -> None:
    runs = agent_runs(events_of(report()))
    grades = [grade(r, cases()[r.opened.case_id]) for r in runs]
    assert summary(grades) == {"fixed": {"pass": 4, "fail": 2, "incomplete": 2},
                               "agent": {"pass": 4, "fail": 3, "incomplete": 1}}


def test_without_a_case_the_case_checks_are_named_not_guessed() -> None:
    recorded, _ = run_of(trial("newline-version-agent-2"))
    g = grade(recorded, None)
    assert g.not_computed == ("retrieval_targets_read", "answer_fixture_check", "outcome")
    assert dict(g.checks) == {"trajectory": {
        "queries": ["Path.read_text newline encoding",
                    "Path.read_text newline controls encoding utf-8",
                    "read_text newline open encoding"],
        "refined": True, "within_limits": True}, "scope": SCOPE}
    assert g.mismatches == ()


def test_no_target_passes_only_on_explicit_abstention() -> None:
    value = trial("newline-version-fixed-1")  # a model_stopped run, judged as unsupported
    recorded, admission = run_of(value)
    unsupported = cases()["unsupported"]
    assert grade(recorded, unsupported, admission).checks["outcome"] == "pass"
    value = trial("newline-version-agent-2")  # exhaustion, not abstention
    result = value["result"]
    result["limits"]["model_calls"] = 2
    result["decisions"], result["observations"] = result["decisions"][:2], result["observations"][:2]
    result.update(status="incomplete", reason="model_call_limit",
                  usage={"model_calls": 2, "searches": 1, "reads": 1, "source_bytes": 174})
    recorded, admission = run_of(value)
    assert (admission.status, admission.reason, admission.agrees) == (
        "incomplete", "model_call_limit", True)
    assert grade(recorded, unsupported, admission).checks["outcome"] == "incomplete"


def test_a_mutated_trial_grades_from_the_rederivation() -> None:
    value = json.loads((OUT / "altered-quote.json").read_text(encoding="utf-8"))
    recorded, admission = run_of(value)
    g = grade(recorded, cases()["overwrite"], admission)
    assert (g.status, g.reason, g.checks["outcome"]) == (
        "failed", "unread_or_changed_citation", "fail")
    assert g.mismatches == ("answer_fixture_check", "outcome")
    assert not g.admission_agrees


def test_cli_grade_prints_the_summary(db_file: Path) -> None:
    assert run("ingest", str(REPORT), db=db_file)[0] == 0
    code, out, _ = run("grade", "--cases", str(CASES), db=db_file)
    assert code == 0
    lines = out.splitlines()
    assert "fixed: 4 pass, 2 fail, 2 incomplete (recorded: same)" in lines
    assert "agent: 4 pass, 3 fail, 1 incomplete (recorded: same)" in lines
    code, out, _ = run("grade", "--json", "--cases", str(CASES), db=db_file)
    result = json.loads(out)
    assert [r["checks"]["outcome"] for r in result["runs"]] == [o for _, o in TABLE.values()]
    assert all(r["mismatches"] == [] for r in result["runs"])


def test_cli_grade_without_cases_and_one_run(db_file: Path) -> None:
    assert run("ingest", str(REPORT), db=db_file)[0] == 0
    code, out, _ = run("grade", "overwrite-agent-1", db=db_file)
    assert code == 0
    assert ("not computed: answer_fixture_check, outcome, retrieval_targets_read (no --cases "
            "file was given); the trajectory checks need no case") in " ".join(out.split())
    code, _, err = run("grade", "nope", "--json", db=db_file)
    # issue 20: not_found merged into attempt_not_found (the old name stays in "aliases")
    doc = json.loads(err)
    assert (code, doc["error"], doc["aliases"]) == (
        4, "attempt_not_found", ["unknown_attempt", "not_found"])


# Seed 001's table as the seed prints it (case / repeat, path, expected sources read, answer
# fixture, stop reason, model calls), copied from its text.
SEED_TABLE = """\
overwrite / 1\tfixed\ttrue\tpass\tcitation_contract_passed\t1
overwrite / 1\tagent\ttrue\tpass\tcitation_contract_passed\t3
serialize-and-save / 1\tfixed\ttrue\tpass\tcitation_contract_passed\t1
serialize-and-save / 1\tagent\ttrue\tpass\tcitation_contract_passed\t6
newline-version / 1\tfixed\ttrue\tincomplete\tmodel_stopped\t1
newline-version / 1\tagent\ttrue\tfail\tduplicate_query\t3
unsupported / 1\tfixed\tNo target\tfail\tcitation_contract_passed\t1
unsupported / 1\tagent\tNo target\tfail\tcitation_contract_passed\t3
overwrite / 2\tfixed\ttrue\tpass\tcitation_contract_passed\t1
overwrite / 2\tagent\ttrue\tpass\tcitation_contract_passed\t3
serialize-and-save / 2\tfixed\ttrue\tpass\tcitation_contract_passed\t1
serialize-and-save / 2\tagent\ttrue\tpass\tcitation_contract_passed\t6
newline-version / 2\tfixed\ttrue\tincomplete\tmodel_stopped\t1
newline-version / 2\tagent\ttrue\tincomplete\tmodel_stopped\t5
unsupported / 2\tfixed\tNo target\tfail\tcitation_contract_passed\t1
unsupported / 2\tagent\tNo target\tfail\tcitation_contract_passed\t3
"""


@pytest.mark.parametrize("columns", [80, 200])
def test_grade_prints_seed_001s_table_at_any_width(tmp_path: Path, columns: int) -> None:
    """From a fresh store, through the installed entry point: ingest the recorded comparison,
    grade it, and read seed 001's rows back, every code and case id whole on its line."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": str(columns), "TRACESTORE_DB": str(tmp_path / "s.db")}

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "tracestore", *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("ingest", str(REPORT))
    out = cli("grade", "--cases", str(CASES))
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines)
    graded, trajectories = out.split("trajectories", 1)
    rows = [line.split() for line in graded.splitlines()]
    traj = [line.split() for line in trajectories.splitlines()]
    for seed_row in SEED_TABLE.splitlines():
        case_repeat, path, read, answer, reason, calls = seed_row.split("\t")
        case, repeat = case_repeat.split(" / ")
        assert rows.count([case, repeat, path, *read.split(), answer, reason]) == 1, seed_row
        matching = [r for r in traj if r[:3] == [case, repeat, path]]
        assert len(matching) == 1 and matching[0][3] == calls, seed_row
    assert lines[-2:] == ["fixed: 4 pass, 2 fail, 2 incomplete (recorded: same)",
                          "agent: 4 pass, 3 fail, 1 incomplete (recorded: same)"]


@pytest.mark.parametrize("trial_id", ["overwrite-agent-1", "overwrite-fixed-1"])
def test_a_read_whose_text_fails_its_hash_is_not_a_target_read(trial_id: str) -> None:
    """Seed 001 validates a read before it enters the run's observations, so a passage
    whose text no longer matches its ``text_sha256`` was never read: the run fails
    ``changed_read`` and the retrieval target does not count as read."""
    value = trial(trial_id)
    reads = [o for o in value["result"]["observations"] if o["tool"] == "read"
             and o["arguments"]["source_id"] == "path-write"]
    assert reads
    reads[0]["result"]["text"] += " Backups are kept for 7 days."
    recorded, admission = run_of(value)
    assert (admission.status, admission.reason) == ("failed", "changed_read")
    assert all(o.result.get("source_id") != "path-write" or o.tool != "read"
               for o in admission.observations)
    g = grade(recorded, cases()["overwrite"], admission)
    assert (g.checks["retrieval_targets_read"], g.checks["outcome"]) == (False, "fail")
    assert "retrieval_targets_read" in g.mismatches
