"""Issue 21: reviewers by key.  Ed25519-signed amendments and approvals, a registry of
reviewer keys (appended events), independence by key, verify checks every signature, and
unsigned reviews only where the store accepts them (shown as unsigned)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clihelp import app, count_events, run, runner
from tests.test_review_amend import replay_into
from tracestore.events import NewEvent, ReviewFieldSet, review_stream
from tracestore.review.signing import load_key, sign
from tracestore.store.log import EventStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "signed.db"
    with EventStore(f"sqlite:///{path}") as opened:
        replay_into(opened, "t7")
    return path


def keys(tmp_path: Path, db: Path, *names: str) -> dict[str, Path]:
    """The store's owner registers first (the root of trust); each reviewer's registration
    is then signed by the owner's key."""
    made = {}
    owner = tmp_path / "owner.key"
    if not owner.exists():
        assert runner.invoke(app, ["reviewer", "keygen", str(owner)]).exit_code == 0
        assert run("reviewer", "add", "owner", "--public-key", f"{owner}.pub", db=db)[0] == 0
    for name in names:
        key = tmp_path / f"{name}.key"
        assert runner.invoke(app, ["reviewer", "keygen", str(key)]).exit_code == 0
        code, out, _ = run("reviewer", "add", name, "--public-key", f"{key}.pub",
                           "--by-key", str(owner), "--json", db=db)
        assert code == 0 and json.loads(out)["name"] == name
        made[name] = key
    return made


def test_a_store_without_keys_accepts_unsigned_reviews_and_shows_them(db: Path) -> None:
    code, out, _ = run("review", "t7", "--approve", "--reviewer", "bob", db=db)
    assert code == 0 and "Review state: approved · UNSIGNED reviews at #13 ·" in out
    code, out, _ = run("review", "t7", "--json", db=db)
    assert json.loads(out)["approvals"][0]["signed_by_key"] is None


def test_signed_review_then_independent_signed_approval(tmp_path: Path, db: Path) -> None:
    made = keys(tmp_path, db, "alice", "bob")
    before = count_events(db)
    code, _, err = run("review", "t7", "--set", "evidence_gap=abort untested", "--reviewer",
                       "alice", db=db)
    assert code == 5 and "signature_required" in err and count_events(db) == before
    code, out, _ = run("review", "t7", "--set", "evidence_gap=abort untested", "--key",
                       str(made["alice"]), "--json", db=db)
    doc = json.loads(out)
    gap = next(f for f in doc["fields"] if f["name"] == "evidence_gap")
    assert code == 0 and gap["set_by"] == "alice"  # the key's registered name
    # Independence by key: alice's key cannot approve what alice's key amended.
    code, _, err = run("review", "t7", "--approve", "--key", str(made["alice"]), db=db)
    assert code == 5 and "reviewer_not_independent" in err
    code, out, _ = run("review", "t7", "--approve", "--key", str(made["bob"]), "--json", db=db)
    doc = json.loads(out)
    assert code == 0 and doc["review_state"] == "approved"
    assert doc["approvals"][0]["reviewer"] == "bob" and doc["approvals"][0]["signed_by_key"]
    code, out, _ = run("verify", "--json", db=db)
    assert code == 0 and json.loads(out)["reviews_checked"] == 2


def test_keys_that_do_not_match_are_refused_and_nothing_is_appended(
        tmp_path: Path, db: Path) -> None:
    made = keys(tmp_path, db, "alice", "bob")
    stranger = tmp_path / "mallory.key"
    assert runner.invoke(app, ["reviewer", "keygen", str(stranger)]).exit_code == 0
    before = count_events(db)
    code, _, err = run("review", "t7", "--approve", "--reviewer", "alice", "--key",
                       str(made["bob"]), db=db)
    assert code == 5 and "reviewer_key_mismatch" in err
    code, _, err = run("review", "t7", "--approve", "--key", str(stranger), db=db)
    assert code == 5 and "reviewer_key_unknown" in err
    code, _, err = run("reviewer", "add", "carol", "--public-key", f"{made['bob']}.pub", db=db)
    assert code == 5 and "key_already_registered" in err
    assert count_events(db) == before


def test_verify_names_the_first_review_whose_signature_is_over_other_content(
        tmp_path: Path, db: Path) -> None:
    made = keys(tmp_path, db, "alice")
    key = load_key(made["alice"].read_bytes())
    honest = sign(ReviewFieldSet(attempt_id="t7", template="trace-review",
                                 field="evidence_gap", value="abort untested",
                                 reviewer="alice"), key)
    forged = honest.model_copy(update={"value": "nothing missing"})  # same signature
    with EventStore(f"sqlite:///{db}") as store:
        stream = review_stream("trace-review", "t7")
        (good,) = store.append([NewEvent(stream, honest, trace_id="t7")]).positions
        (bad,) = store.append([NewEvent(stream, forged, trace_id="t7")]).positions
    code, out, _ = run("verify", "--json", db=db)
    doc = json.loads(out)
    assert code == 3 and doc["ok"] is False and doc["first_bad_review_position"] == bad
    assert doc["review_reason"] == "the signature does not match the event's content"
    code, _, err = run("verify", db=db)
    assert code == 3 and "review_signature_invalid" in err and f"position {bad}" in err
    assert good < bad


def test_unsigned_reviews_need_the_store_setting_once_keys_exist(
        tmp_path: Path, db: Path) -> None:
    keys(tmp_path, db, "alice")
    code, _, err = run("review", "t7", "--approve", "--reviewer", "bob", db=db)
    assert code == 5 and "signature_required" in err
    code, out, _ = run("reviewer", "unsigned", "allow", "--by", "lead", "--reason",
                       "migration week", "--json", db=db)
    assert code == 0 and json.loads(out)["unsigned_reviews"] == "allowed"
    code, out, _ = run("review", "t7", "--approve", "--reviewer", "bob", db=db)
    assert code == 0 and "UNSIGNED reviews at" in out
    code, out, _ = run("reviewer", "list", "--json", db=db)
    assert json.loads(out)["unsigned_reviews"] == "allowed"
    assert run("verify", db=db)[0] == 0
