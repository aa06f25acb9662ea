"""The application's evidence from the command line: --retry-of, --stop-after-byte,
destination, task, decisions recorded by ingest, scenario steps over capture bytes."""

from __future__ import annotations

import json
from pathlib import Path

from tracestore.events import FrameReceived
from tracestore.store.log import EventStore

from clihelp import count_events, run
from conftest import FIXTURES

REAL = FIXTURES / "real"
TEXT_BASIC = REAL / "anthropic" / "text-basic.sse"
GPT4O = REAL / "openai-responses" / "text-gpt-4o.sse"
PARIS = FIXTURES / "tasks" / "paris.json"


def events_of(db: Path, **filters: str) -> list:
    with EventStore(f"sqlite:///{db}") as store:
        return store.read(**filters)


def test_stop_after_byte_places_the_stop_between_the_frames_the_app_saw(db_file: Path) -> None:
    code, out, err = run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte",
                         "700", "--json", db=db_file)
    assert code == 0, err
    assert json.loads(out)["decisions_recorded"] == [13]
    body = [e.event for e in events_of(db_file, attempt_id="a")][2:]
    kinds = [(type(e).__name__, getattr(e, "offset", None), getattr(e, "length", None))
             for e in body]
    # Frames ending within the first 700 bytes (0+490, 490+132) come before the Stop; the
    # frame at 622 ends at 658 < 700 too; the next ends after 700.
    assert [k[0] for k in kinds] == (["FrameReceived"] * 3 + ["LocalStopped"]
                                     + ["FrameReceived"] * 4
                                     + ["TransportDrained", "ReleaseDecided"])
    assert all(o + n <= 700 for _, o, n in kinds[:3])
    assert kinds[4][1] + kinds[4][2] > 700
    code, out, _ = run("release", "a", "--json", db=db_file)
    assert (json.loads(out)["status"], json.loads(out)["reasons"]) == (
        "stopped", ["local_stop_before_release"])


def test_the_same_evidence_again_is_a_no_op_and_other_evidence_is_refused(db_file: Path) -> None:
    assert run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte", "700",
               db=db_file)[0] == 0
    before = count_events(db_file)
    code, out, _ = run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte", "700",
                       "--json", db=db_file)
    assert (code, json.loads(out)["appended"], json.loads(out)["decisions_recorded"]) == (
        0, 0, [])
    code, _, err = run("ingest", str(TEXT_BASIC), "--attempt", "a", "--stop-after-byte", "900",
                       db=db_file)
    assert code == 2 and "attempt_exists" in err
    assert count_events(db_file) == before


def test_retry_of_links_the_retry_and_supersedes_nothing_already_final(db_file: Path) -> None:
    assert run("ingest", str(TEXT_BASIC), "--attempt", "old", "--trace", "q",
               "--task", str(PARIS), "--stop-after-byte", "700", db=db_file)[0] == 0
    code, out, err = run("ingest", str(GPT4O), "--attempt", "new", "--trace", "q",
                         "--retry-of", "old", "--json", db=db_file)
    assert code == 0, err
    started = [e.event for e in events_of(db_file, attempt_id="new")][0]
    assert started.retry_of == "old"
    code, out, _ = run("release", "new", "--json", db=db_file)
    assert json.loads(out)["status"] == "released"
    assert "Paris" in json.loads(out)["answer"]
    code, out, _ = run("release", "old", "--json", db=db_file)
    assert json.loads(out)["status"] == "stopped"


def test_retry_of_an_unknown_attempt_is_refused_and_writes_nothing(db_file: Path) -> None:
    code, _, err = run("ingest", str(GPT4O), "--attempt", "new", "--retry-of", "nope",
                       db=db_file)
    assert code == 4
    # issue 20: unknown_attempt merged into attempt_not_found (JSON errors list the old name
    # in "aliases" for one release)
    assert err.startswith("error[attempt_not_found]: --retry-of names 'nope'")
    assert count_events(db_file) == 0


# -- destination, readback, audit ------------------------------------------------------------

def _released_gpt4o(db: Path) -> str:
    assert run("ingest", str(GPT4O), "--attempt", "g", "--task", str(PARIS), db=db)[0] == 0
    return json.loads(run("release", "g", "--json", db=db)[1])["answer"]


def test_destination_writes_and_readbacks_are_audited_against_the_decision(
        db_file: Path, tmp_path: Path) -> None:
    answer = _released_gpt4o(db_file)
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(answer, encoding="utf-8")
    bad.write_text(answer + " (edited)", encoding="utf-8")
    code, out, err = run("destination", "g", "ui", "--text-file", str(good), db=db_file)
    assert code == 0, err
    assert out.startswith(f"recorded: {len(answer)} characters written to ui for attempt g ")
    code, out, _ = run("audit", "--trace", "g", "--json", db=db_file)
    assert json.loads(out)["violations"] == []
    code, out, _ = run("destination", "g", "history", "--text-file", str(bad), "--readback",
                       "--json", db=db_file)
    assert code == 0 and json.loads(out)["readback"] is True
    code, out, _ = run("audit", "--trace", "g", "--json", db=db_file)
    assert [(v["code"], v["destination"], v["position"]) for v in
            json.loads(out)["violations"]] == [("readback_mismatch", "history",
                                                json.loads(out)["violations"][0]["position"])]
    assert json.loads(out)["violations"][0]["position"] == count_events(db_file)


def test_destination_bad_input_is_refused_and_writes_nothing(db_file: Path, tmp_path: Path) -> None:
    _released_gpt4o(db_file)
    text = tmp_path / "t.txt"
    text.write_text("x", encoding="utf-8")
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9")
    before = count_events(db_file)
    cases = [(["g", "clipboard", "--text-file", str(text)], 2, "unknown_destination"),
             (["nope", "ui", "--text-file", str(text)], 4, "attempt_not_found"),
             (["g", "ui", "--text-file", str(latin)], 2, "invalid_utf8")]
    for args, exit_code, error in cases:
        code, _, err = run("destination", *args, db=db_file)
        assert (code, err.split("]")[0]) == (exit_code, f"error[{error}"), err
    assert count_events(db_file) == before


# -- task rule versions ---------------------------------------------------------------------

def test_a_new_task_version_judges_again_and_older_decisions_stay(db_file: Path,
                                                                  tmp_path: Path) -> None:
    assert run("ingest", str(GPT4O), "--attempt", "g", db=db_file)[0] == 0
    held = json.loads(run("release", "g", "--json", db=db_file)[1])
    assert (held["status"], held["reasons"]) == ("held", ["no_semantic_rule"])
    code, out, err = run("task", "g", "--task", str(PARIS), "--json", db=db_file)
    assert code == 0, err
    result = json.loads(out)
    assert (result["rule_version"], [(d["attempt_id"], d["status"], d["rule_version"])
                                     for d in result["decisions"]]) == (
        2, [("g", "released", 2)])
    decided = [e.event for e in events_of(db_file, attempt_id="g")
               if e.type == "release.decided"]
    assert [(d.status, d.rule_version) for d in decided] == [("held", None), ("released", 2)]
    assert json.loads(run("release", "g", "--json", db=db_file)[1])["status"] == "released"
    code, out, _ = run("task", "g", "--task", str(PARIS), db=db_file)
    assert (code, out.strip()) == (0, "trace g: this rule is already version 2; nothing appended")
    bad = tmp_path / "bad.json"
    bad.write_text('{"answer_patterns": ["(a+)+$"]}')
    before = count_events(db_file)
    assert run("task", "g", "--task", str(bad), db=db_file)[0] == 2
    assert run("task", "nope", "--task", str(PARIS), db=db_file)[0] == 4
    assert count_events(db_file) == before


def test_a_recorded_decision_that_disagrees_is_shown_and_kept(db_file: Path) -> None:
    from tracestore.events import NewEvent, ReleaseDecided, attempt_stream

    assert run("ingest", str(GPT4O), "--attempt", "g", "--task", str(PARIS), db=db_file)[0] == 0
    with EventStore(f"sqlite:///{db_file}") as store:  # as an older policy might have said
        store.append([NewEvent(attempt_stream("g"), ReleaseDecided(
            attempt_id="g", eligible=False, status="held", reasons=("unknown_stop_reason",),
            policy_version="seed003-v0", decided_at_position=30, rule_version=1),
            trace_id="g")])
    before = count_events(db_file)
    code, out, _ = run("release", "g", "--json", db=db_file)
    shown = json.loads(out)
    assert shown["status"] == "released"
    assert [(d["policy_version"], d["recorded"]["status"]) for d in
            shown["recorded_disagreements"]] == [("seed003-v0", "held")]
    code, out, _ = run("release", "g", db=db_file)
    assert "says held (unknown_stop_reason); recomputed now: released. The recorded event " \
           "stays as it is." in " ".join(out.split())
    assert count_events(db_file) == before


# -- scenarios over capture bytes, and the published schema -----------------------------------

def _scenario(tmp_path: Path, steps: list) -> Path:
    path = tmp_path / "app.json"
    path.write_text(json.dumps({"trace": "app", "task": {"answer_patterns": ["paris"]},
                                "steps": steps}))
    return path


def _beside(tmp_path: Path, capture: Path) -> str:
    """A copy of ``capture`` beside the scenario, named relatively: capture paths may not
    leave the scenario's folder (issue 26)."""
    import shutil

    shutil.copy(capture, tmp_path / capture.name)
    return capture.name


def test_capture_steps_replay_an_interleaving_over_real_bytes(db_file: Path, tmp_path: Path) -> None:
    old, new = _beside(tmp_path, TEXT_BASIC), _beside(tmp_path, GPT4O)
    path = _scenario(tmp_path, [
        {"open": "r1", "attempt": "old", "api": "anthropic-messages"},
        {"reader": "r1", "capture": old, "until_byte": 700},
        {"reader": "r1", "local": "stop"},
        {"open": "r2", "attempt": "new", "api": "openai-responses", "retry_of": "old"},
        {"reader": "r2", "capture": new, "until_byte": 2500},
        {"reader": "r1", "capture": old},                      # the old reader's late bytes
        {"reader": "r1", "local": "drain", "outcome": "clean"},
        {"reader": "r2", "capture": new},
        {"reader": "r2", "local": "drain", "outcome": "clean"}])
    code, out, err = run("replay", str(path), "--json", db=db_file)
    assert code == 0, err
    report = json.loads(out)
    assert [(a["attempt_id"], a["status"]) for a in report["attempts"]] == [
        ("old", "stopped"), ("new", "released")]
    assert report["attempts"][1]["answer"] == "The capital of France is Paris."
    frames = [e.event for e in events_of(db_file, trace_id="app")
              if isinstance(e.event, FrameReceived)]
    ingested_old = [f for f in frames if f.attempt_id == "old"]
    assert len(ingested_old) == 7 and len([f for f in frames if f.attempt_id == "new"]) == 15
    assert [f.index for f in ingested_old] == list(range(7))


def test_scenarios_are_checked_against_the_published_schema(db_file: Path, tmp_path: Path) -> None:
    from clihelp import runner
    from tracestore.cli import app

    schema = json.loads(runner.invoke(app, ["scenario-schema"]).stdout)
    assert schema == json.loads((FIXTURES.parent / "docs" / "scenario.schema.json").read_text())
    import jsonschema

    for fixture in sorted((FIXTURES / "seed003").glob("*.json")):
        jsonschema.validate(json.loads(fixture.read_text()), schema)
    bad = _scenario(tmp_path, [{"open": "r1", "attempt": "a", "api": "openai-responses"},
                               {"reader": "r1", "local": "drain", "outcome": "maybe"}])
    code, _, err = run("replay", str(bad), db=db_file)
    assert code == 2
    assert " ".join(err.split()) == (
        f"error[invalid_scenario]: {bad}: steps/1: drain step: outcome: 'maybe' is not one "
        "of ['clean', 'eof', 'error', 'reset']")
    missing = _scenario(tmp_path, [{"open": "r1", "attempt": "a", "api": "openai-responses"},
                                   {"reader": "r1", "capture": "no/such.sse"}])
    code, _, err = run("replay", str(missing), db=db_file)
    assert code == 2 and "file_not_found" in err
    assert count_events(db_file) == 0


def test_capture_steps_that_would_replay_as_something_else_are_refused(
        db_file: Path, tmp_path: Path) -> None:
    old = _beside(tmp_path, TEXT_BASIC)
    size = TEXT_BASIC.stat().st_size
    opened = {"open": "r1", "attempt": "a", "api": "anthropic-messages"}
    cases = [
        ([{**opened, "api": "openai-responses"}, {"reader": "r1", "capture": old}],
         f"steps/1: capture {old} holds anthropic-messages events, but reader 'r1' was "
         "opened for openai-responses"),
        ([opened, {"reader": "r2", "capture": old}],
         "steps/1: reader 'r2' is used before it is opened"),
        ([opened, {"reader": "r1", "capture": old, "until_byte": size + 1}],
         f"steps/1: until_byte {size + 1} is past the end of capture {old} ({size} bytes)"),
        ([opened, {"reader": "r1", "capture": old, "until_byte": 900},
          {"reader": "r1", "capture": old, "until_byte": 300}],
         f"steps/2: until_byte 300 goes back: reader 'r1' already played capture {old} up "
         "to byte 900"),
        ([opened, {"reader": "r1", "capture": old},
          {"reader": "r1", "capture": old, "until_byte": 10}],
         f"steps/2: until_byte 10 goes back: reader 'r1' already played capture {old} up "
         f"to byte {size}"),
        # An error found after the capture steps were expanded names the author's step 2,
        # not the position among the 10 event steps the capture became.
        ([opened, {"reader": "r1", "capture": old}, {"open": "r1", "attempt": "b",
                                                     "api": "anthropic-messages"}],
         "step 2: reader 'r1' is opened twice"),
    ]
    for steps, message in cases:
        code, _, err = run("replay", str(_scenario(tmp_path, steps)), db=db_file)
        assert (code, " ".join(err.split())) == (2, f"error[invalid_scenario]: {message}")
    assert count_events(db_file) == 0


def test_capture_paths_may_not_leave_the_scenarios_folder(db_file: Path, tmp_path: Path) -> None:
    """Issue 26 item 11: absolute, ``../`` and symlinked capture paths are refused, and
    nothing of the file they name is stored."""
    folder = tmp_path / "scenario"
    folder.mkdir()
    outside = tmp_path / "secret.sse"
    outside.write_bytes(TEXT_BASIC.read_bytes())
    (folder / "link.sse").symlink_to(outside)
    (folder / "inner").mkdir()
    (folder / "inner" / "ok.sse").write_bytes(TEXT_BASIC.read_bytes())
    opened = {"open": "r1", "attempt": "a", "api": "anthropic-messages"}
    for name in (str(outside), "../secret.sse", "inner/../../secret.sse", "link.sse"):
        path = _scenario(folder, [opened, {"reader": "r1", "capture": name}])
        code, _, err = run("replay", str(path), "--json", db=db_file)
        assert (code, json.loads(err)["error"]) == (2, "capture_path_escapes"), (name, err)
        assert count_events(db_file) == 0
    path = _scenario(folder, [opened, {"reader": "r1", "capture": "inner/ok.sse"},
                              {"reader": "r1", "local": "drain", "outcome": "clean"}])
    code, _, err = run("replay", str(path), "--json", db=db_file)
    assert code == 0, err
