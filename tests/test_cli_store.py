"""The store commands as a user runs them: exact outputs, exit codes, nothing half-written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tracestore.cli import app
from tracestore.store.log import EventStore
from clihelp import count_events, run, runner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

S1 = FIXTURES / "projections" / "s1.json"
S2 = FIXTURES / "projections" / "s2.json"
T1 = FIXTURES / "projections" / "t1.json"




def test_ingest_s1_records_each_element_as_one_event(db_file: Path) -> None:
    code, out, _ = run("ingest", str(S1), "--attempt", "s1", "--json", db=db_file)
    assert code == 0
    summary = json.loads(out)
    assert summary | {"sha256": None} == {
        "attempt_id": "s1", "trace_id": "s1", "api": "openai-responses", "kind": "projection",
        "framing": "json-array", "sha256": None, "frames": 6, "drain": "clean",
        "appended": 9, "skipped": 0, "positions": [1, 9],
        # The final decision is an event too, appended after the ingest (issue 8, item 5).
        "decisions_recorded": [10]}
    code, out, _ = run("events", "--attempt", "s1", "--json", db=db_file)
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["type"] for r in rows] == ["attempt.started", "capture.stored"] + \
        ["frame.received"] * 5 + ["transport.drained", "release.decided"]
    natives = [r["payload"]["native"] for r in rows if r["type"] == "frame.received"]
    source = json.loads(S1.read_text())
    assert natives == source[:5]
    assert [list(n) for n in natives] == [list(n) for n in source[:5]]  # key order kept
    assert rows[-2]["payload"]["outcome"] == "clean"
    assert (rows[-1]["payload"]["status"], rows[-1]["payload"]["decided_at_position"]) == (
        "held", 9)
    data = S1.read_bytes()
    first = rows[2]["payload"]
    assert json.loads(data[first["offset"]:first["offset"] + first["length"]]) == source[0]
    with EventStore(f"sqlite:///{db_file}") as store:
        assert store.get_blob(rows[1]["payload"]["sha256"]) == data


def test_reingest_is_a_reported_no_op(db_file: Path) -> None:
    run("ingest", str(T1), "--attempt", "t1", db=db_file)
    code, out, _ = run("ingest", str(T1), "--attempt", "t1", "--json", db=db_file)
    assert code == 0
    assert json.loads(out)["appended"] == 0 and json.loads(out)["skipped"] == 10
    assert count_events(db_file) == 11  # 10 ingested + the recorded decision, once


def test_auto_tells_bedrock_from_openai_and_attempts_lists_counts(db_file: Path) -> None:
    run("ingest", str(S2), "--attempt", "s2", db=db_file)
    run("ingest", str(T1), "--attempt", "t1", "--trace", "desk", db=db_file)
    code, out, _ = run("attempts", "--json", db=db_file)
    assert code == 0
    listing = json.loads(out)["attempts"]
    old = ("attempt_id", "events", "trace_id", "api", "first_position")
    assert [{k: a[k] for k in old} for a in listing] == [
        {"attempt_id": "s2", "events": 8, "trace_id": "s2", "api": "openai-responses",
         "first_position": 2},
        {"attempt_id": "t1", "events": 10, "trace_id": "desk",
         "api": "bedrock-converse-stream", "first_position": 11}]
    # Issue 21: the queue's fields too (S2 failed natively; T1 has no task rule: held).
    assert [(a["status"], a["review_state"], a["violations"]) for a in listing] == [
        ("failed", "unreviewed", 0), (listing[1]["status"], "unreviewed", 0)]


def test_a_second_input_into_the_same_attempt_is_refused(db_file: Path) -> None:
    run("ingest", str(S1), "--attempt", "x", db=db_file)
    code, _, err = run("ingest", str(S2), "--attempt", "x", db=db_file)
    assert code == 2
    assert "attempt_exists" in err
    assert count_events(db_file) == 10


@pytest.mark.parametrize("content, code_name", [
    (b"this is not json", "unknown_framing"),
    (b'[{"type":"response.created"}, 42]', "invalid_shape"),
    (b'[{"type":"response.created"}, {"local":"pause"}]', "unknown_label"),
    (b'[{"messageStart":{}}, {"local":"drain","outcome":"maybe"}]', "unknown_label"),
    (b'[{"type":"response.created"}, {"messageStart":{}}]', "mixed_apis"),
    (b'[{"type":"response.created"}', "truncated_frame"),
    (b'[{"type":"response.created","type":"x"}]', "invalid_json"),
    (b"", "empty_input"),
])
def test_bad_input_is_one_sentence_a_code_and_nothing_written(
        tmp_path: Path, db_file: Path, content: bytes, code_name: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    code, out, err = run("ingest", str(bad), db=db_file)
    assert code == 2
    assert out == ""
    assert err.startswith(f"error[{code_name}]: ")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert count_events(db_file) == 0


def test_missing_file_and_json_error_output(tmp_path: Path, db_file: Path) -> None:
    code, _, err = run("ingest", str(tmp_path / "nope.json"), "--json", db=db_file)
    assert code == 2
    assert json.loads(err) == {"error": "file_not_found",
                               "message": f"{tmp_path / 'nope.json'} does not exist",
                               "path": str(tmp_path / "nope.json")}


def test_a_database_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    code, _, err = run("ingest", str(S1), db=foreign)
    assert code == 3
    assert err.startswith("error[not_our_database]: ")


def test_verify_reports_ok_then_the_tampered_position(db_file: Path) -> None:
    run("ingest", str(T1), "--attempt", "t1", db=db_file)
    code, out, _ = run("verify", db=db_file)
    # The head hash is explained where it is shown (it depends on recording times).
    root = run("verify", "--json", db=db_file)[1]
    assert (code, out) == (0, f"ok 11 events in 1 trace (root {json.loads(root)['tree_root'][:16]})\n"
                              "the root hashes the last event of every trace, which chains its "
                              "trace with the times it was recorded: it names what this store "
                              "holds, and another store holding the same events has another "
                              "one\n")
    conn = sqlite3.connect(db_file)
    conn.execute("DROP TRIGGER ts_events_no_update")
    conn.execute("UPDATE ts_events SET payload = replace(payload, 'Thursday', 'Thursdax') "
                 "WHERE position = 6")
    conn.commit()
    conn.close()
    code, out, err = run("verify", db=db_file)
    assert code == 3
    assert err.startswith("error[chain_broken]: chain broken at position 6: ")
    code, out, _ = run("verify", "--json", db=db_file)
    assert code == 3
    assert json.loads(out)["first_broken_position"] == 6


def _head(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT hash FROM ts_events ORDER BY position DESC").fetchone()[0]
    finally:
        conn.close()


def test_environment_variable_names_the_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "from-env.db"
    monkeypatch.setenv("TRACESTORE_DB", f"sqlite:///{target}")
    result = runner.invoke(app, ["ingest", str(S1), "--attempt", "s1"])
    assert result.exit_code == 0
    assert count_events(target) == 10


def test_default_database_is_a_file_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACESTORE_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["init"]).exit_code == 0
    assert (tmp_path / "tracestore.db").exists()
    assert count_events(tmp_path / "tracestore.db") == 0


def test_every_command_has_help() -> None:
    import typer.main

    group = typer.main.get_command(app)
    assert set(group.commands) >= {"attempts", "events", "ingest", "init", "verify"}
    for name, command in group.commands.items():
        assert command.help, f"{name} has no help"
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.stdout


def test_version_option_prints_the_package_version() -> None:
    from tracestore import __version__

    result = runner.invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"tracestore {__version__}\n")


def test_a_second_task_for_an_existing_trace_is_refused(tmp_path: Path, db_file: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text('{"answer_patterns": ["wednesday"]}')
    second.write_text('{"answer_patterns": ["thursday"]}')
    assert run("ingest", str(T1), "--attempt", "a", "--trace", "desk", "--task", str(first),
               db=db_file)[0] == 0
    before = count_events(db_file)
    code, _, err = run("ingest", str(S1), "--attempt", "b", "--trace", "desk", "--task",
                       str(second), db=db_file)
    assert code == 2 and err.startswith("error[trace_conflict]: ")
    assert count_events(db_file) == before
    # the same task, or none, joins the trace as a newer attempt
    assert run("ingest", str(S1), "--attempt", "b", "--trace", "desk", db=db_file)[0] == 0


def test_events_json_streams_in_batches_and_the_table_pages(
        db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracestore.cli.log_cmds as cmds
    from tracestore.store.log import EventStore as Store

    run("ingest", str(S1), "--attempt", "s1", db=db_file)
    calls: list[int] = []
    original = Store.read

    def counting_read(self: Store, **kw: object) -> list:
        calls.append(1)
        return original(self, **kw)

    monkeypatch.setattr(Store, "read", counting_read)
    monkeypatch.setitem(Store.iter_events.__kwdefaults__, "batch_size", 2)
    code, out, _ = run("events", "--json", db=db_file)
    assert code == 0
    assert [json.loads(line)["position"] for line in out.splitlines()] == list(range(1, 11))
    assert len(calls) == 6  # 2+2+2+2+2+0 events
    code, out, _ = run("events", "--json", "--after", "3", "--limit", "3", db=db_file)
    assert [json.loads(line)["position"] for line in out.splitlines()] == [4, 5, 6]
    monkeypatch.setattr(cmds, "TABLE_MAX_ROWS", 4)
    code, out, _ = run("events", db=db_file)
    assert "4 events (more follow)" in out
    assert "more events follow: --after 4 shows the next ones; --json streams them all" in out


@pytest.mark.parametrize("rule, code_name", [
    ('{"answer_patterns": ["(a+)+$"]}', "unsafe_pattern"),
    ('{"answer_patterns": ["(unclosed"]}', "invalid_pattern"),
    ('{"answer_pattern": ["typo"]}', "invalid_task"),
])
def test_a_bad_task_rule_is_refused_before_anything_is_written(
        tmp_path: Path, db_file: Path, rule: str, code_name: str) -> None:
    task = tmp_path / "task.json"
    task.write_text(rule)
    code, _, err = run("ingest", str(T1), "--task", str(task), db=db_file)
    assert code == 2 and err.startswith(f"error[{code_name}]: ")
    assert count_events(db_file) == 0
