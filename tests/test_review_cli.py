"""``tracestore review`` and ``tracestore templates`` as a reviewer runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tracestore
from tracestore.cli import app
from tracestore.cli.review_cmds import write_atomically
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.review import fill_record, load_template, render_markdown

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
runner = CliRunner()


def run(*args: str, db: Path | None = None) -> tuple[int, str, str]:
    argv = [*args, "--db", str(db)] if db is not None else list(args)
    result = runner.invoke(app, argv)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def t7_db(db_file: Path) -> Path:
    code, _, err = run("replay", str(SEED / "t7.json"), "--json", db=db_file)
    assert code == 0, err
    return db_file


def expected_t7_markdown() -> str:
    events = preview_replay(parse_scenario(json.loads((SEED / "t7.json").read_text("utf-8"))))[1]
    return render_markdown(fill_record(load_template("trace-review"), events, "t7",
                                       version=tracestore.__version__))


def test_two_commands_from_replayed_t7_to_a_complete_cited_record(
        db_file: Path, tmp_path: Path) -> None:
    """The README walkthrough: replay, then review --out."""
    out = tmp_path / "t7-review.md"
    assert run("replay", str(SEED / "t7.json"), db=db_file)[0] == 0
    code, stdout, stderr = run("review", "t7", "--out", str(out), db=db_file)
    assert code == 0 and stdout == "" and f"wrote {out}" in stderr
    text = out.read_text(encoding="utf-8")
    assert text == expected_t7_markdown()
    assert "| Release decision | Ineligible: stopped at #6 (local_stop_before_release)" in text
    assert "UNKNOWN: 1 of 13 fields (Remote cancellation)." in text
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp left


def test_markdown_to_the_terminal_is_the_same_document(t7_db: Path) -> None:
    code, stdout, _ = run("review", "t7", db=t7_db)
    assert code == 0 and stdout == expected_t7_markdown()


def test_json_for_scripts(t7_db: Path) -> None:
    for flag in (["--format", "json"], ["--json"]):
        code, stdout, _ = run("review", "t7", *flag, db=t7_db)
        doc = json.loads(stdout)
        assert code == 0 and doc["attempt_id"] == "t7" and doc["template"] == "trace-review"
        assert doc["unknown"] == ["remote_cancellation"]
        assert [f["source"] for f in doc["fields"]].count("derived") == 12


def test_set_history_approve_through_the_cli(t7_db: Path) -> None:
    code, stdout, stderr = run("review", "t7", "--set", "release_decision=released",
                               "--set", "evidence_gap=abort=propagation", "--reviewer", "alice",
                               "--json", db=t7_db)
    assert code == 0 and "recorded 2 review event(s) at #13, #14" in stderr
    doc = json.loads(stdout)
    fields = {f["name"]: f for f in doc["fields"]}
    assert fields["evidence_gap"]["value"] == "abort=propagation"  # split on the first '='
    assert fields["release_decision"]["conflict"] is True and doc["conflicts"] == [
        "release_decision"]
    code, _, stderr = run("review", "t7", "--approve", "--reviewer", "alice", db=t7_db)
    assert code == 5 and "reviewer_not_independent" in stderr
    # Issue 21: approval is refused while a CONFLICT stands, unless the approver says why.
    code, _, stderr = run("review", "t7", "--approve", "--reviewer", "bob", db=t7_db)
    assert code == 5 and "conflict_unresolved" in stderr
    code, stdout, _ = run("review", "t7", "--approve", "--reviewer", "bob", "--override-reason",
                          "the claim is the reviewer's test value", db=t7_db)
    assert code == 0 and "Approvals: bob at " in stdout and (
        "(#15; overrode a CONFLICT: the claim is the reviewer's test value).") in stdout
    code, stdout, _ = run("review", "t7", "--history", "--json", db=t7_db)
    history = json.loads(stdout)
    assert [(h["name"], h["value"], h["set_by"], h["position"]) for h in history["history"]] == [
        ("release_decision", "released", "alice", 13),
        ("evidence_gap", "abort=propagation", "alice", 14)]
    assert [a["reviewer"] for a in history["approvals"]] == ["bob"]
    code, stdout, _ = run("review", "t7", "--history", db=t7_db)
    assert "| Release decision | released | alice | " in stdout and "| #13 | — |" in stdout


def test_hostile_reviewer_text_in_the_terminal_byte_for_byte(t7_db: Path) -> None:
    value = "a|b\n<script>x</script>\x1b[31m[bold]x[/bold]\x00"
    code, stdout, _ = run("review", "t7", "--set", f"evidence_gap={value}", "--reviewer",
                          "[red]eve|x", db=t7_db)
    assert code == 0
    at = json.loads(run("review", "t7", "--json", db=t7_db)[1])["fields"][11]["set_at"]
    row = next(line for line in stdout.splitlines() if line.startswith("| Evidence gap |"))
    assert row == ("| Evidence gap | a\\|b<br>&lt;script&gt;x&lt;/script&gt;\\x1b\\[31m\\[bold\\]"
                   "x\\[/bold\\]\\x00<br>derived: Not in the log: application destination "
                   "readback (only replay-harness writes); raw capture bytes (synthetic "
                   "projection); a provider receipt for the local Stop at #6 (client abort "
                   f"propagation unproven) | reviewer \\[red\\]eve\\|x, {at} | #13; derived: "
                   "#1, #6 |")
    assert not any(c in stdout for c in "\x1b\x00\r")
    code, stdout, _ = run("review", "t7", "--json", db=t7_db)
    assert "\x1b" not in stdout and "\x00" not in stdout
    assert json.loads(stdout)["fields"][11]["value"] == value


@pytest.mark.parametrize("args, code, error", [
    (["review", "ghost"], 4, "attempt_not_found"),
    (["review", "ghost", "--approve", "--reviewer", "bob"], 4, "attempt_not_found"),
    (["review", "t7", "--set", "release_decision=x"], 2, "reviewer_required"),
    (["review", "t7", "--approve"], 2, "reviewer_required"),
    (["review", "t7", "--set", "nofield=x", "--reviewer", "a"], 2, "unknown_field"),
    (["review", "t7", "--set", "novalue", "--reviewer", "a"], 2, "invalid_set"),
    (["review", "t7", "--set", "evidence_gap=", "--reviewer", "a"], 2, "empty_value"),
    (["review", "t7", "--template", "nope"], 4, "unknown_template"),
    (["review", "t7", "--template", "../x"], 2, "invalid_template_name"),
    (["review", "t7", "--blank"], 2, "blank_takes_no_attempt"),
    (["review"], 2, "attempt_required"),
])
def test_errors_are_one_code_and_an_exit_status(
        t7_db: Path, args: list[str], code: int, error: str) -> None:
    got, stdout, stderr = run(*args, "--json", db=t7_db)
    assert got == code and stdout == ""
    assert json.loads(stderr)["error"] == error
    assert "Traceback" not in stderr


def test_blank_needs_no_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, stdout, _ = run("review", "--blank", "--template", "application-record")
    assert code == 0 and stdout.startswith("# Application review record (blank)\n")
    assert "UNKNOWN: 18 of 18 fields (" in stdout and stdout.count("| UNKNOWN | unknown |") == 18
    assert not (tmp_path / "tracestore.db").exists()
    doc = json.loads(run("review", "--blank", "--json")[1])
    assert doc["attempt_id"] is None and len(doc["unknown"]) == 13


def test_out_into_a_missing_directory_fails_cleanly(t7_db: Path, tmp_path: Path) -> None:
    code, _, stderr = run("review", "t7", "--out", str(tmp_path / "no" / "x.md"), "--json",
                          db=t7_db)
    assert code == 2 and json.loads(stderr)["error"] == "file_error"


def test_write_atomically_never_leaves_a_half_written_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "record.md"
    target.write_text("old complete record\n", encoding="utf-8")

    def crash(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_atomically(target, "new record\n" * 1000)
    assert target.read_text(encoding="utf-8") == "old complete record\n"
    assert [p.name for p in tmp_path.iterdir()] == ["record.md"]  # temp file removed
    monkeypatch.undo()
    write_atomically(target, "new record\n")
    assert target.read_text(encoding="utf-8") == "new record\n"
    assert [p.name for p in tmp_path.iterdir()] == ["record.md"]


def test_templates_command_lists_fields_and_derivers() -> None:
    code, stdout, _ = run("templates", "--json")
    doc = json.loads(stdout)
    assert code == 0 and [t["name"] for t in doc["templates"]] == ["application-record",
                                                                   "trace-review"]
    assert len(doc["templates"][1]["fields"]) == 13
    code, stdout, _ = run("templates")
    assert code == 0 and "release_decision" in stdout and "reviewer only" in stdout


def test_review_commands_have_help() -> None:
    for name in ("review", "templates"):
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.stdout


def test_docs_sample_record_is_what_the_command_prints() -> None:
    """docs/review.md shows the T7 record as ``review t7`` writes it (version normalised)."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "review.md").read_text("utf-8")
    sample = doc.split("```markdown\n", 1)[1].split("```", 1)[0]
    actual = expected_t7_markdown().replace(f"tracestore {tracestore.__version__}",
                                            "tracestore 0.1.0")
    assert sample == actual
    assert "$ tracestore replay fixtures/seed003/t7.json\n$ tracestore review t7 --out" in doc


def test_review_of_an_ingested_real_capture(db_file: Path) -> None:
    capture = SEED.parents[1] / "fixtures" / "real" / "bedrock" / "claude-tool-use.bin"
    assert run("ingest", str(capture), "--attempt", "b1", db=db_file)[0] == 0
    code, stdout, _ = run("review", "b1", "--json", db=db_file)
    fields = {f["name"]: f for f in json.loads(stdout)["fields"]}
    assert code == 0
    assert fields["authority"]["value"] == (
        "Profile bedrock-converse-text configures no tools; tool use observed and held, never "
        "dispatched: get_weather at #5, #6, #7 … #12 (8 times), tool_use at #13; no model "
        "decision proposed, admitted or refused")
    assert fields["release_decision"]["value"].startswith(
        "Ineligible: held at #5 (tool_use_not_allowed)")
    assert fields["candidate"]["value"] == "No text candidate in 11 frames; nothing to release"
    assert fields["accepted_destinations"]["value"] == (
        "Expected absent (held); actual UI/history/export/copy NOT EXECUTED (no application "
        "write recorded); audit: no violations")
