"""Issue 21: batch amend/approve every record matching a filter, each record its own events,
with a dry run listing what would change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clihelp import count_events, run
from tests.test_review_amend import replay_into
from tracestore.store.log import EventStore

GAP = "evidence_gap=client abort propagation untested"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "batch.db"
    with EventStore(f"sqlite:///{path}") as opened:
        for name in ("t7", "t1", "t8"):
            replay_into(opened, name)
    return path


def batch(db: Path, *args: str) -> tuple[int, dict]:
    code, out, err = run("review-batch", *args, "--json", db=db)
    return code, json.loads(out) if out.strip() else {"stderr": err}


def test_dry_run_lists_what_would_change_and_appends_nothing(db: Path) -> None:
    before = count_events(db)
    code, doc = batch(db, "--status", "stopped", "--set", GAP, "--reviewer", "alice",
                      "--dry-run")
    assert code == 0 and doc["dry_run"] is True and doc["matched"] == 2
    assert doc["records"] == [
        {"attempt_id": a, "would_append": [{"type": "review.field_set",
                                             "field": "evidence_gap",
                                             "value": "client abort propagation untested"}]}
        for a in ("t7", "t8-old")]
    assert count_events(db) == before


def test_each_matching_record_gets_its_own_events(db: Path) -> None:
    code, doc = batch(db, "--status", "stopped", "--set", GAP, "--reviewer", "alice")
    assert code == 0 and [r["attempt_id"] for r in doc["records"]] == ["t7", "t8-old"]
    first, second = (r["appended"] for r in doc["records"])
    assert len(first) == len(second) == 1 and first != second
    code, out, _ = run("attempts", "--review-state", "in-review", "--json", db=db)
    assert [a["attempt_id"] for a in json.loads(out)["attempts"]] == ["t7", "t8-old"]
    # alice set them: her batch approval is refused for every record (exit 5)...
    code, doc = batch(db, "--status", "stopped", "--approve", "--reviewer", "alice")
    assert code == 5 and {r["refused"] for r in doc["records"]} == {"reviewer_not_independent"}
    # ...bob's stands for each, even where one record refuses him.
    run("review", "t7", "--approve", "--reviewer", "bob", db=db)
    code, doc = batch(db, "--status", "stopped", "--approve", "--reviewer", "bob")
    assert code == 0 and doc["records"][0]["refused"] == "already_approved"
    assert "appended" in doc["records"][1]
    code, out, _ = run("reviews", "--state", "approved", "--json", db=db)
    assert [r["attempt_id"] for r in json.loads(out)["reviews"]] == ["t7", "t8-old"]


def test_a_batch_needs_a_filter_and_an_action(db: Path) -> None:
    code, _, err = run("review-batch", "--set", GAP, "--reviewer", "a", "--json", db=db)
    assert code == 2 and json.loads(err)["error"] == "filter_required"
    code, _, err = run("review-batch", "--status", "stopped", "--json", db=db)
    assert code == 2 and json.loads(err)["error"] == "action_required"
    code, _, err = run("review-batch", "--status", "gone", "--approve", "--reviewer", "b",
                       "--json", db=db)
    assert code == 2 and json.loads(err)["error"] == "unknown_filter_value"
