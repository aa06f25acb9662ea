"""Ingesting agent runs: seed 001's report and single results; bad input writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agenthelp import REPORT, run_of, trial
from clihelp import count_events, run
from tracestore.agent import codes as C
from tracestore.ingest.agent import plan_agent_ingest, sniff


def test_report_ingests_16_runs_once(db_file: Path) -> None:
    code, out, _ = run("ingest", str(REPORT), "--json", db=db_file)
    assert code == 0
    summary = json.loads(out)
    assert (summary["format"], summary["runs"], summary["appended"]) == ("agent-report", 16, 262)
    assert summary["attempts"][:2] == ["overwrite-fixed-1", "overwrite-agent-1"]
    assert summary["decisions_recorded"] == list(range(263, 279))  # one per run, after them
    code, out, _ = run("ingest", str(REPORT), "--json", db=db_file)
    assert (code, json.loads(out)["appended"], json.loads(out)["skipped"]) == (0, 0, 262)
    code, out, _ = run("events", "--attempt", "newline-version-agent-1", "--json", db=db_file)
    types = [json.loads(line)["type"] for line in out.splitlines()]
    assert types == ["attempt.started", "capture.stored", "run.opened",
                     "model.called", "model.decision", "model.decision", "tool.observed",
                     "model.called", "model.decision", "model.decision", "tool.observed",
                     "model.called", "model.decision", "model.decision",
                     "run.finished", "run.graded", "release.decided"]
    last = [json.loads(line)["payload"] for line in out.splitlines()][13]
    assert (last["stage"], last["reason"], last["index"], last["implied"]) == (
        "refused", "duplicate_query", 2, True)


def test_usage_is_kept_as_reported_absent_is_none() -> None:
    value = trial("unsupported-agent-1")
    value["provider_usage"] = value["provider_usage"][:1]
    plan = plan_agent_ingest(json.dumps(value).encode(), filename="one.json")
    usages = [e.event.usage for e in plan.events if e.event.type == "model.called"]
    assert usages[0] == trial("unsupported-agent-1")["provider_usage"][0]
    assert usages[1:] == [None, None]


def test_single_result_bare_and_with_format(tmp_path: Path, db_file: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(trial("overwrite-agent-2")["result"]), encoding="utf-8")
    assert sniff(path.read_bytes()) == "agent-result"
    code, out, _ = run("ingest", str(path), "--format", "agent-result", "--attempt", "r1",
                       "--json", db=db_file)
    assert code == 0 and json.loads(out)["attempts"] == ["r1"]
    code, out, _ = run("ingest", str(path), "--format", "agent-result", "--attempt", "r1",
                       db=db_file)
    # trace, attempt, capture, run opened, 3 x (call, proposal, verdict), 2 tool results, finish
    assert (code, out.strip()) == (
        0, "already ingested: 1 agent run of result.json (16 events present, nothing added)")


def test_a_capture_is_not_taken_for_an_agent_file() -> None:
    assert sniff(b'{"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}\n') is None
    assert sniff(b"data: {}\n\n") is None


def _bad(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _broken(mutate: Any) -> dict[str, Any]:
    value = json.loads(REPORT.read_text(encoding="utf-8"))
    mutate(value["trials"][15]["result"])  # the last trial: earlier ones must not be written
    return value


@pytest.mark.parametrize("mutate, code, sentence", [
    (lambda r: r["decisions"].__setitem__(1, "read path-write"), "non_object_decision",
     "trial unsupported-agent-2: decision 1 is a str, not an object"),
    (lambda r: r.pop("observations"), "unknown_run_shape",
     "trial unsupported-agent-2 is not a run result"),
    (lambda r: r["limits"].__setitem__("searches", 9), "invalid_limits",
     "trial unsupported-agent-2: limit searches=9 is outside 1..4"),
    (lambda r: r.__setitem__("status", "done"), "invalid_run",
     "trial unsupported-agent-2: status 'done' is not one of answered, incomplete, failed"),
    (lambda r: r["observations"][1]["result"].pop("text_sha256"), "invalid_observation",
     "trial unsupported-agent-2: read observation 1 lacks source_id, text, url or text_sha256"),
])
def test_bad_runs_are_refused_and_nothing_is_written(tmp_path: Path, db_file: Path,
                                                     mutate: Any, code: str,
                                                     sentence: str) -> None:
    exit_code, _, err = run("ingest", str(_bad(tmp_path, _broken(mutate))), "--json",
                            db=db_file)
    error = json.loads(err)
    assert (exit_code, error["error"]) == (2, code)
    assert error["message"].startswith(sentence)
    assert count_events(db_file) == 0


def test_unknown_shape_with_forced_format(tmp_path: Path, db_file: Path) -> None:
    exit_code, _, err = run("ingest", str(_bad(tmp_path, {"hello": 1})), "--format",
                            "agent-result", "--json", db=db_file)
    assert (exit_code, json.loads(err)["error"]) == (2, "unknown_run_shape")
    exit_code, _, err = run("ingest", str(_bad(tmp_path, {"hello": 1})), "--format",
                            "agent-shell", "--json", db=db_file)
    assert (exit_code, json.loads(err)["error"]) == (2, "unknown_format")


def test_a_read_whose_text_does_not_match_its_hash_is_recorded_and_caught() -> None:
    value = trial("overwrite-agent-1")
    read = value["result"]["observations"][1]["result"]
    read["text"] = read["text"].replace("overwritten", "kept as a backup")
    assert hashlib.sha256(read["text"].encode()).hexdigest() != read["text_sha256"]
    recorded, admission = run_of(value)
    assert recorded.observations[1].result["text"] == read["text"]
    assert (admission.status, admission.reason) == ("failed", C.CHANGED_READ)
    # The answer after it could not have been asked for: a third model call never happens.
    assert [(f.code, f.position) for f in admission.findings] == [
        (C.ADMISSION_DISAGREEMENT, recorded.proposals[2].verdict_position),
        (C.OUTCOME_DISAGREEMENT, recorded.finished_position),
        (C.USAGE_DISAGREEMENT, recorded.finished_position)]


def test_deeply_nested_json_is_a_typed_error(tmp_path: Path, db_file: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b'{"decisions": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    exit_code, _, err = run("ingest", str(path), "--format", "agent-result", "--json",
                            db=db_file)
    assert (exit_code, json.loads(err)["error"]) == (2, "invalid_json")
    assert count_events(db_file) == 0


def test_the_audit_timeline_shows_verdicts(db_file: Path) -> None:
    assert run("ingest", str(REPORT), db=db_file)[0] == 0
    from clihelp import runner
    from tracestore.cli import app

    result = runner.invoke(app, ["audit", "--trace", "newline-version-agent-1", "--db",
                                 str(db_file)], env={"COLUMNS": "200"})
    lines = result.stdout
    assert "proposes search 'Path read_text newline encoding'" in lines
    assert "✖ refused search 'Path.read_text newline encoding': duplica…" in lines  # cell cut
    assert "■ run failed (duplicate_query)" in lines
    assert "model call 2 (837 tokens)" in lines


def test_non_string_ids_fall_back_to_the_file_name() -> None:
    value = {"id": 7, "case_id": {"x": 1}, "result": trial("overwrite-agent-1")["result"]}
    data = json.dumps(value).encode()
    plan = plan_agent_ingest(data, filename="odd.json")
    sha = hashlib.sha256(data).hexdigest()
    assert plan.runs == ((f"odd-{sha[:8]}", f"odd-{sha[:8]}", f"odd-{sha[:8]}"),)
    opened = next(e.event for e in plan.events if e.event.type == "run.opened")
    assert (opened.trial_id, opened.case_id) == (None, None)
