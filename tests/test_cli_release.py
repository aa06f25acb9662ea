"""release / replay / audit as a user runs them: exact JSON contracts, exit codes, atomicity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.cli import app
from tracestore.store.log import EventStore
from clihelp import count_events, run, runner

SEED003 = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
SHA = "53f9380d078e5af77a7ebe7cf105028efe1c32fecefb7c72062f367615e358cd"
PROGRESS_SHA = "b22c9719f7974e13e10a7f8c4a7d911a8ba704e95b41c4ac76c04b1bd845f4af"





def decision(attempt: str, status: str, reasons: list[str], at: int | None,
             notes: list[str], answer: str | None = None) -> dict[str, Any]:
    return {"attempt_id": attempt, "eligible": status == "released", "status": status,
            "reasons": reasons, "decided_at_position": at, "answer": answer,
            "answer_sha256": SHA if answer else None, "notes": notes}


def with_envelope(d: dict[str, Any], state: str | None = None, text: str = "",
                  code: str = "ok", retryable: bool = False) -> dict[str, Any]:
    """``release --json`` adds the seed 004 envelope (null while pending or superseded)."""
    envelope = None if state is None else {"schema_version": 2, "state": state, "text": text,
                                           "code": code, "retryable": retryable,
                                           "result": None}
    return {**d, "envelope": envelope}


T7 = decision("t7", "stopped", ["local_stop_before_release"], 6, ["frames_after_decision"])
T8_OLD = decision("t8-old", "stopped", ["local_stop_before_release"], 6,
                  ["superseded_after_decision", "frames_after_decision"])
T8_NEW = decision("t8-new", "released", ["normal_native_ending", "clean_drain",
                                         "semantic_accepted"], 17, [], ANSWER)


def test_replay_t7_json_contract(db_file: Path) -> None:
    code, out, err = run("replay", str(SEED003 / "t7.json"), "--json", db=db_file)
    assert (code, err) == (0, "")
    assert json.loads(out) == {"attempts": [T7], "violations": []}
    code, out, _ = run("release", "t7", "--json", db=db_file)
    # The envelope shows the text as of the Stop (marked partial), never the late answer.
    assert code == 0 and json.loads(out) == with_envelope(
        T7, "partial", "The public desk opens Wednesday from 09:00 to 17:00 UTC. ", "stopped",
        True)


def test_replay_t8_json_contract_and_release_at(db_file: Path) -> None:
    code, out, _ = run("replay", str(SEED003 / "t8.json"), "--json", db=db_file)
    assert code == 0
    assert json.loads(out) == {"attempts": [T8_OLD, T8_NEW], "violations": []}
    assert json.loads(run("release", "t8-new", "--json", db=db_file)[1]) == with_envelope(
        T8_NEW, "ok", ANSWER)
    old = json.loads(run("release", "t8-old", "--json", db=db_file)[1])
    assert {**old, "envelope": None} == with_envelope(T8_OLD)
    assert (old["envelope"]["state"], old["envelope"]["code"]) == ("partial", "stopped")
    code, out, _ = run("release", "t8-new", "--at", "16", "--json", db=db_file)
    assert json.loads(out) == with_envelope(
        decision("t8-new", "pending", ["awaiting_drain"], None, []))
    code, out, _ = run("release", "t8-old", "--at", "5", "--json", db=db_file)
    assert json.loads(out) == with_envelope(decision("t8-old", "pending", [
        "awaiting_native_terminal", "awaiting_drain"], None, []))


def _entry(text: str, sha: str, position: int) -> dict[str, Any]:
    return {"text": text, "sha256": sha, "position": position, "source": "harness"}


def test_audit_t8_json_contract(db_file: Path) -> None:
    run("replay", str(SEED003 / "t8.json"), db=db_file)
    code, out, _ = run("audit", "--trace", "t8", "--json", db=db_file)
    assert code == 0
    empty: dict[str, list[Any]] = {"ui": [], "history": [], "export": [], "copy": []}
    assert json.loads(out) == {"attempts": [
        {"attempt_id": "t8-old", "trace_id": "t8", "status": "stopped", "destinations": empty,
         "progress": [_entry("Generating answer…", PROGRESS_SHA, 3)]},
        {"attempt_id": "t8-new", "trace_id": "t8", "status": "released",
         "destinations": {"ui": [_entry(ANSWER, SHA, 20)], "history": [_entry(ANSWER, SHA, 21)],
                          "export": [_entry(ANSWER, SHA, 22)], "copy": [_entry(ANSWER, SHA, 23)]},
         "progress": [_entry("Generating answer…", PROGRESS_SHA, 9)]},
    ], "violations": []}


def test_audit_reports_a_buggy_application(db_file: Path) -> None:
    run("replay", str(SEED003 / "t8-buggy-app.json"), db=db_file)
    run("replay", str(SEED003 / "t1.json"), db=db_file)
    code, out, _ = run("audit", "--json", db=db_file)
    assert code == 0
    report = json.loads(out)
    assert [a["attempt_id"] for a in report["attempts"]] == ["t8b-old", "t8b-new", "t1"]
    assert [(v["code"], v["attempt_id"], v["destination"], v["position"])
            for v in report["violations"]] == [
        ("answer_mismatch", "t8b-new", "ui", 20),
        ("old_attempt_text_in_answer", "t8b-new", "ui", 20),
        ("duplicate_history_entry", "t8b-new", "history", 22)]


def test_every_fixture_replays_into_one_database(db_file: Path) -> None:
    for path in sorted(SEED003.glob("*.json")):
        code, out, err = run("replay", str(path), "--json", db=db_file)
        assert code == 0, (path.name, err)
        expected = json.loads(path.read_text())["expected"]
        got = {a["attempt_id"]: a["status"] for a in json.loads(out)["attempts"]}
        assert got == {k: v["status"] for k, v in expected["attempts"].items()}, path.name
    with EventStore(f"sqlite:///{db_file}") as store:
        assert store.verify().ok


@pytest.mark.parametrize("content, code_name", [
    ('{"trace": "x", "steps": [{"reader": "r", "event": {}}]}', "invalid_scenario"),
    ('{"trace": "x", "steps": [{"open": "r", "attempt": "a", "api": "bedrock-converse-stream"},'
     ' {"reader": "r", "teleport": true}]}', "invalid_scenario"),
    ("{not json", "invalid_json"),
    ('{"trace": "x", "task": {"answer_patterns": ["("]}, "steps": []}', "invalid_pattern"),
])
def test_bad_scenario_exit_2_no_events(db_file: Path, tmp_path: Path, content: str,
                                       code_name: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code, out, err = run("replay", str(bad), "--json", db=db_file)
    assert code == 2 and out == ""
    assert json.loads(err)["error"] == code_name
    assert count_events(db_file) == 0


def test_bad_step_names_its_index(db_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"trace": "x", "steps": [{"open": "r", "attempt": "a", '
                   '"api": "bedrock-converse-stream"}, {"reader": "r", "teleport": true}]}')
    code, _, err = run("replay", str(bad), "--json", db=db_file)
    assert code == 2 and json.loads(err)["step"] == 1


def test_replaying_the_same_scenario_again_is_a_reported_no_op(db_file: Path) -> None:
    code, first, _ = run("replay", str(SEED003 / "t7.json"), "--json", db=db_file)
    assert code == 0
    before = count_events(db_file)
    code, again, _ = run("replay", str(SEED003 / "t7.json"), "--json", db=db_file)
    assert code == 0 and json.loads(again) == json.loads(first)
    assert count_events(db_file) == before
    code, out, _ = run("replay", str(SEED003 / "t7.json"), db=db_file)
    assert out.startswith("t7.json: already replayed (trace t7), nothing appended\n")


def test_another_scenario_reusing_an_attempt_is_refused_and_writes_nothing(
        db_file: Path, tmp_path: Path) -> None:
    assert run("replay", str(SEED003 / "t7.json"), db=db_file)[0] == 0
    before = count_events(db_file)
    changed = json.loads((SEED003 / "t7.json").read_text())
    changed["steps"] = changed["steps"][:3]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(changed))
    code, _, err = run("replay", str(other), "--json", db=db_file)
    assert code == 2 and json.loads(err)["error"] == "attempt_exists"
    assert count_events(db_file) == before


def test_a_directory_replays_every_scenario_in_it(db_file: Path) -> None:
    code, out, _ = run("replay", str(SEED003), "--json", db=db_file)
    assert code == 0
    report = json.loads(out)
    files = sorted(SEED003.glob("*.json"))
    expected_ids = [a for f in files for a in json.loads(f.read_text())["expected"]["attempts"]]
    assert [a["attempt_id"] for a in report["attempts"]] == expected_ids


def test_replay_is_one_transaction(db_file: Path) -> None:
    run("init", db=db_file)
    with EventStore(f"sqlite:///{db_file}") as store:
        calls: list[int] = []
        original = store.append_with

        def counting(build: Any, **kw: Any) -> Any:
            calls.append(1)
            return original(build, **kw)

        from tracestore.cli.release_cmds import read_scenario
        from tracestore.ingest.pipeline import append_scenario
        store.append_with = counting  # type: ignore[method-assign]
        planned = append_scenario(store, read_scenario(SEED003 / "t8.json"))
    assert calls == [1] and count_events(db_file) == len(planned) == 24


def test_unknown_attempt_and_trace(db_file: Path) -> None:
    run("init", db=db_file)  # an existing store (a missing one is no_store: test_verify_reach)
    code, _, err = run("release", "nope", "--json", db=db_file)
    assert code == 4 and json.loads(err)["error"] == "attempt_not_found"
    code, _, err = run("audit", "--trace", "nope", "--json", db=db_file)
    assert code == 4 and json.loads(err)["error"] == "trace_not_found"


def test_tables_escape_model_text(db_file: Path, tmp_path: Path) -> None:
    scenario = json.loads((SEED003 / "t1.json").read_text())
    scenario["trace"] = "esc"
    scenario["steps"][0]["attempt"] = "esc-1"
    scenario["steps"][2]["event"]["contentBlockDelta"]["delta"]["text"] = \
        "\x1b[31m[bold]evil[/bold]\x07 "
    path = tmp_path / "esc.json"
    path.write_text(json.dumps(scenario))
    result = runner.invoke(app, ["replay", str(path), "--db", str(db_file)],
                           env={"COLUMNS": "250"})
    out = result.stdout
    assert result.exit_code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "\\u001b[31m[bold]evil[/bold]\\u0007" in out  # literal, markup not applied
    result = runner.invoke(app, ["audit", "--trace", "esc", "--db", str(db_file)],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 0 and "\x1b" not in result.stdout


def test_human_output_shows_timeline_and_decisions(db_file: Path) -> None:
    result = runner.invoke(app, ["replay", str(SEED003 / "t8.json"), "--db", str(db_file)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "released" in result.stdout
    result = runner.invoke(app, ["audit", "--trace", "t8", "--db", str(db_file)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "timeline of trace t8" in result.stdout and "■ STOP" in result.stdout
    assert "no violations" in result.stdout
    result = runner.invoke(app, ["release", "t7", "--db", str(db_file)])
    assert result.exit_code == 4


@pytest.mark.parametrize("command", ["release", "replay", "audit"])
def test_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.stdout


def test_audit_strict_exits_1_only_when_there_are_violations(db_file: Path) -> None:
    run("replay", str(SEED003 / "t8.json"), db=db_file)
    assert run("audit", "--strict", db=db_file)[0] == 0
    run("replay", str(SEED003 / "t8-buggy-app.json"), db=db_file)
    code, out, _ = run("audit", "--strict", "--json", db=db_file)
    assert code == 1
    assert sorted({v["code"] for v in json.loads(out)["violations"]}) == [
        "answer_mismatch", "duplicate_history_entry", "old_attempt_text_in_answer"]
    assert run("audit", "--trace", "t8", "--strict", db=db_file)[0] == 0


def test_auditing_trace_by_trace_equals_auditing_the_whole_log(db_file: Path) -> None:
    from tracestore.cli.release_cmds import audit_all
    from tracestore.projections import audit as audit_events

    run("replay", str(SEED003), db=db_file)
    with EventStore(f"sqlite:///{db_file}") as store:
        whole = audit_events(store.read()).to_dict()
        by_trace = audit_all(store).to_dict()
    key = lambda a: a["attempt_id"]  # noqa: E731
    assert sorted(by_trace["attempts"], key=key) == sorted(whole["attempts"], key=key)
    assert by_trace["violations"] == sorted(whole["violations"], key=lambda v: v["position"])
    assert len(by_trace["violations"]) == 8
