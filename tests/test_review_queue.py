"""Issue 21: the queue.  attempts filters with status and review-state columns, reviews by
state with who set what, unknown filter values as typed errors, completion of ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clihelp import run
from tests.test_review_amend import replay_into
from tracestore.store.log import EventStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "queue.db"
    with EventStore(f"sqlite:///{path}") as opened:
        for name in ("t7", "t1", "t8"):
            replay_into(opened, name)
    return path


def ids(db: Path, *args: str) -> list[str]:
    code, out, err = run("attempts", *args, "--json", db=db)
    assert code == 0, err
    return [a["attempt_id"] for a in json.loads(out)["attempts"]]


def test_attempts_show_status_and_review_state_and_filter_on_them(db: Path) -> None:
    code, out, _ = run("attempts", "--json", db=db)
    rows = {a["attempt_id"]: a for a in json.loads(out)["attempts"]}
    assert {k: (v["status"], v["review_state"]) for k, v in rows.items()} == {
        "t7": ("stopped", "unreviewed"), "t1": ("released", "unreviewed"),
        "t8-old": ("stopped", "unreviewed"), "t8-new": ("released", "unreviewed")}
    assert rows["t7"]["first_reason"] == "local_stop_before_release"
    assert ids(db, "--status", "stopped") == ["t7", "t8-old"]
    assert ids(db, "--reason", "local_stop_before_release", "--trace", "t8") == ["t8-old"]
    assert ids(db, "--api", "bedrock-converse-stream", "--status", "released") == [
        "t1", "t8-new"]
    assert ids(db, "--since", "1d") == ["t7", "t1", "t8-old", "t8-new"]
    assert ids(db, "--until", "2000-01-01") == []
    assert ids(db, "--has-violations") == []
    assert ids(db, "--no-violations", "--status", "released") == ["t1", "t8-new"]
    code, out, _ = run("attempts", db=db)
    assert code == 0 and "status" in out and "review" in out and "stopped" in out


def test_review_states_follow_the_records(db: Path) -> None:
    run("review", "t7", "--set", "evidence_gap=abort untested", "--reviewer", "alice", db=db)
    assert ids(db, "--review-state", "in-review") == ["t7"]
    run("review", "t7", "--approve", "--reviewer", "bob", db=db)
    assert ids(db, "--review-state", "approved") == ["t7"]
    run("review", "t7", "--set", "evidence_gap=abort and readback untested", "--reviewer",
        "alice", db=db)
    assert ids(db, "--review-state", "stale") == ["t7"]
    run("review", "t1", "--set", "release_decision=stopped", "--reviewer", "carol", db=db)
    assert ids(db, "--review-state", "conflict") == ["t1"]
    code, out, _ = run("reviews", "--state", "stale", "--json", db=db)
    (stale,) = json.loads(out)["reviews"]
    assert (stale["attempt_id"], stale["template"], stale["state"]) == (
        "t7", "trace-review", "stale")
    assert [(v["field"], v["set_by"]) for v in stale["values"]] == [
        ("evidence_gap", "alice"), ("evidence_gap", "alice")]
    assert [(a["reviewer"], a["stale"]) for a in stale["approvals"]] == [("bob", True)]
    code, out, _ = run("reviews", db=db)
    assert code == 0 and "approved by bob" in out and "STALE" in out


@pytest.mark.parametrize("args, code_name", [
    (["attempts", "--status", "leaked"], "unknown_filter_value"),
    (["attempts", "--review-state", "done"], "unknown_filter_value"),
    (["attempts", "--reason", "no_such_reason"], "unknown_filter_value"),
    (["attempts", "--api", "openai-nope"], "unknown_filter_value"),
    (["attempts", "--since", "yesterday"], "invalid_time"),
    (["reviews", "--state", "unknown-state"], "unknown_filter_value"),
])
def test_unknown_filter_values_are_typed_errors(db: Path, args: list[str],
                                                code_name: str) -> None:
    code, _, err = run(*args, "--json", db=db)
    assert code == 2 and json.loads(err)["error"] == code_name


def test_attempt_and_trace_ids_complete(db: Path) -> None:
    from tracestore.cli.completion import complete_attempt, complete_trace

    class Ctx:
        params = {"db": str(db)}

    assert complete_attempt(Ctx(), "t8") == ["t8-new", "t8-old"]  # type: ignore[arg-type]
    assert complete_trace(Ctx(), "t") == ["t1", "t7", "t8"]  # type: ignore[arg-type]


def test_violation_filter_finds_a_stopped_attempt_that_leaked_into_history(db: Path) -> None:
    leaky = Path(__file__).resolve().parents[1] / "fixtures" / "review" / "t7-leaky-app.json"
    assert run("replay", str(leaky), db=db)[0] == 0
    args = ("--status", "stopped", "--violation", "ineligible_text_in_destination:history",
            "--since", "1d")
    assert ids(db, *args) == ["t7-leak"]
    assert ids(db, "--violation", "ineligible_text_in_destination:ui") == []
    code, out, _ = run("attempts", "--trace", "t7-leaky-app", "--json", db=db)
    (row,) = json.loads(out)["attempts"]
    assert (row["violations"], row["violation_codes"]) == (1, ["ineligible_text_in_destination"])
    code, _, err = run("attempts", "--violation", "ineligible_text_in_destination:attic",
                       "--json", db=db)
    assert code == 2 and json.loads(err)["error"] == "unknown_filter_value"
