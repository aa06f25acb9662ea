"""Issue 21: "semantic": "reviewer" task rules.  Until a reviewer's verdict is recorded
the decision is pending (awaiting_reviewer_verdict); `tracestore judge` records a signed
semantic.judged and the decision follows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clihelp import app, count_events, run, runner

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"


def scenario(tmp_path: Path, name: str, semantic: str | None) -> Path:
    data = json.loads((SEED / f"{name}.json").read_text(encoding="utf-8"))
    if semantic is not None:
        data["task"]["semantic"] = semantic
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "judge.db"
    code, _, err = run("replay", str(scenario(tmp_path, "t1", "reviewer")), db=path)
    assert code == 0, err
    return path


def release(db: Path, attempt: str) -> dict:
    code, out, _ = run("release", attempt, "--json", db=db)
    assert code == 0
    return json.loads(out)


def test_a_reviewer_rule_is_pending_until_a_person_judges(db: Path) -> None:
    pending = release(db, "t1")
    assert (pending["status"], pending["reasons"]) == ("pending",
                                                       ["awaiting_reviewer_verdict"])
    code, out, _ = run("judge", "t1", "accept", "--reviewer", "dana", "--note",
                       "both days, hours and UTC kept", "--json", db=db)
    assert code == 0 and json.loads(out)["status"] == "released"
    decided = release(db, "t1")
    assert decided["status"] == "released" and "semantic_accepted" in decided["reasons"]
    code, out, _ = run("events", "--attempt", "t1", "--json", db=db)
    judged = [json.loads(line) for line in out.splitlines()][-1]
    assert judged["type"] == "semantic.judged" and judged["payload"]["by"] == "dana"
    assert judged["payload"]["note"] == "both days, hours and UTC kept"


def test_a_person_can_reject_what_the_regex_would_release(tmp_path: Path, db: Path) -> None:
    code, out, _ = run("judge", "t1", "reject", "--reviewer", "dana", "--json", db=db)
    assert code == 0 and json.loads(out)["status"] == "rejected"


def test_judging_is_signed_where_keys_exist(tmp_path: Path, db: Path) -> None:
    key = tmp_path / "dana.key"
    assert runner.invoke(app, ["reviewer", "keygen", str(key)]).exit_code == 0
    assert run("reviewer", "add", "dana", "--public-key", f"{key}.pub", db=db)[0] == 0
    before = count_events(db)
    code, _, err = run("judge", "t1", "accept", "--reviewer", "dana", db=db)
    assert code == 5 and "signature_required" in err and count_events(db) == before
    code, out, _ = run("judge", "t1", "accept", "--key", str(key), "--json", db=db)
    assert code == 0 and json.loads(out)["status"] == "released"
    code, out, _ = run("verify", "--json", db=db)
    assert code == 0 and json.loads(out)["reviews_checked"] == 1


def test_judge_refuses_a_pattern_rule_and_bad_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    run("replay", str(scenario(tmp_path, "t1", None)), db=path)
    code, _, err = run("judge", "t1", "accept", "--reviewer", "dana", db=path)
    assert code == 5 and "semantic_not_by_reviewer" in err
    code, _, err = run("judge", "t1", "maybe", "--reviewer", "dana", db=path)
    assert code == 2 and "invalid_verdict" in err


def test_the_record_says_who_decides_and_who_judged(db: Path) -> None:
    def semantic() -> str:
        code, out, _ = run("review", "t1", "--json", db=db)
        return next(f["value"] for f in json.loads(out)["fields"]
                    if f["name"] == "semantic_rule")

    assert semantic().endswith("acceptance decided by a reviewer's recorded verdict "
                               "(tracestore judge), not by patterns; awaiting a reviewer's "
                               "verdict")
    run("judge", "t1", "accept", "--reviewer", "dana", db=db)
    assert "; verdict accepted at #" in semantic() and semantic().endswith(
        " by dana (unsigned)")
