"""A root of trust for reviewer keys: nobody approves their own record under a second name
they registered themselves.  The store's first key is its owner's; every later
registration is signed by an admin; ``verify`` walks the registrations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.clihelp import app, count_events, run, runner
from tests.test_review_amend import replay_into
from tracestore.events import NewEvent, ReviewerAdded
from tracestore.review.registration import sign_registration
from tracestore.review.signing import REVIEWERS_STREAM, key_id, load_key, public_pem
from tracestore.store.log import EventStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "trust.db"
    with EventStore(f"sqlite:///{path}") as opened:
        replay_into(opened, "t7")
    return path


def _keygen(tmp_path: Path, name: str) -> Path:
    key = tmp_path / f"{name}.key"
    assert runner.invoke(app, ["reviewer", "keygen", str(key)]).exit_code == 0
    return key


def _add(db: Path, name: str, key: Path, *extra: str) -> tuple[int, str, str]:
    return run("reviewer", "add", name, "--public-key", f"{key}.pub", *extra, db=db)


@pytest.fixture
def team(tmp_path: Path, db: Path) -> dict[str, Path]:
    keys = {name: _keygen(tmp_path, name) for name in ("owner", "alice", "bob", "mallory")}
    assert _add(db, "owner", keys["owner"])[0] == 0
    for name in ("alice", "bob"):
        assert _add(db, name, keys[name], "--by-key", str(keys["owner"]))[0] == 0
    return keys


def test_a_self_registered_second_name_cannot_approve(db: Path, team: dict[str, Path]) -> None:
    assert run("review", "t7", "--set", "evidence_gap=gap", "--key", str(team["alice"]),
               db=db)[0] == 0
    before = count_events(db)
    code, _, err = _add(db, "mallory", team["mallory"])
    assert code == 5 and "error[registration_signature_required]" in err
    code, _, err = _add(db, "mallory", team["mallory"], "--by-key", str(team["alice"]))
    assert code == 5 and "error[registration_not_authorized]" in err
    assert "registered to alice, not an admin" in err
    assert count_events(db) == before
    code, _, err = run("review", "t7", "--approve", "--key", str(team["mallory"]), db=db)
    assert code == 5 and "reviewer_key_unknown" in err
    assert count_events(db) == before
    # bob, whom the owner vouched for, approves.
    code, out, _ = run("review", "t7", "--approve", "--key", str(team["bob"]), "--json", db=db)
    assert code == 0 and json.loads(out)["review_state"] == "approved"
    assert run("verify", db=db)[0] == 0


def test_an_admin_may_register_others_and_the_list_says_who_vouched(
        tmp_path: Path, db: Path, team: dict[str, Path]) -> None:
    carol, dave = _keygen(tmp_path, "carol"), _keygen(tmp_path, "dave")
    code, out, _ = run("reviewer", "add", "carol", "--public-key", f"{carol}.pub", "--admin",
                       "--by-key", str(team["owner"]), "--json", db=db)
    owner_id = key_id(load_key(team["owner"].read_bytes()))
    assert code == 0 and json.loads(out)["admin"] is True
    assert json.loads(out)["signed_by"] == owner_id
    assert _add(db, "dave", dave, "--by-key", str(carol))[0] == 0
    code, out, _ = run("reviewer", "list", "--json", db=db)
    rows = {r["name"]: r for r in json.loads(out)["reviewers"]}
    assert [n for n, r in rows.items() if r["admin"]] == ["owner", "carol"]
    assert rows["owner"]["signed_by"] is None and rows["alice"]["signed_by"] == owner_id
    assert rows["dave"]["signed_by"] == key_id(load_key(carol.read_bytes()))
    code, out, _ = run("reviewer", "list", db=db)
    assert "owner  key" in out and "(admin, the store's first key: its owner)" in out
    assert f"dave  key {key_id(load_key(dave.read_bytes()))}  (registered by carol" in out
    assert run("verify", db=db)[0] == 0


def _append(db: Path, event: ReviewerAdded) -> int:
    with EventStore(f"sqlite:///{db}") as store:
        (position,) = store.append([NewEvent(REVIEWERS_STREAM, event)]).positions
    return position


def _registration(key: Path, name: str, **fields: object) -> ReviewerAdded:
    public = load_key(Path(f"{key}.pub").read_bytes())
    return ReviewerAdded(name=name, key_id=key_id(public), public_key=public_pem(public),
                         **fields)


@pytest.mark.parametrize("case", ["unsigned", "edited", "non-admin"])
def test_verify_names_a_registration_no_admin_signed(db: Path, team: dict[str, Path],
                                                    case: str) -> None:
    """Written past the CLI (straight into the store): verify still finds it."""
    owner, alice = (load_key(team[n].read_bytes()) for n in ("owner", "alice"))
    event = _registration(team["mallory"], "mallory")
    if case == "edited":  # signed for one name, then renamed
        event = sign_registration(event, owner).model_copy(update={"name": "mal"})
    elif case == "non-admin":
        event = sign_registration(event, alice)
    position = _append(db, event)
    code, out, _ = run("verify", "--json", db=db)
    doc = json.loads(out)
    assert code == 3 and doc["ok"] is False and doc["first_bad_review_position"] == position
    assert doc["review_problem"] == "registration"
    code, _, err = run("verify", db=db)
    assert code == 3 and err.startswith("error[reviewer_registration_invalid]: reviewer "
                                        f"registration not vouched for at position {position}")
    expected = {
        "unsigned": "is not signed by an admin, in a store that signs its registrations",
        "edited": "the registration of mal does not match its admin's signature",
        "non-admin": "which was not a registered admin's before it"}[case]
    assert expected in json.dumps(doc)


def test_a_store_registered_before_signing_keeps_verifying(tmp_path: Path, db: Path) -> None:
    first, second = _keygen(tmp_path, "first"), _keygen(tmp_path, "second")
    _append(db, _registration(first, "first"))
    _append(db, _registration(second, "second"))  # as older tracestore versions wrote it
    assert run("verify", db=db)[0] == 0
    code, out, _ = run("reviewer", "list", db=db)
    assert "second  key" in out and "unsigned: registered before this store signed" in out
    # From the first signed registration on, the store signs them all.
    third = _keygen(tmp_path, "third")
    assert _add(db, "third", third, "--by-key", str(first))[0] == 0
    assert _add(db, "fourth", _keygen(tmp_path, "fourth"))[0] == 5
    assert run("verify", db=db)[0] == 0


def test_the_desk_shows_who_registered_whom(tmp_path: Path, db: Path,
                                             team: dict[str, Path]) -> None:
    from starlette.testclient import TestClient

    from tracestore.serve.app import DeskConfig, desk_app

    with EventStore(f"sqlite:///{db}", create=False) as store:
        app = desk_app(DeskConfig(db=str(db), port=8765), store)
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            page = client.get("/reviewers")
            assert page.status_code == 200
            assert 'href="/reviewers"' in client.get("/").text
    owner_id = key_id(load_key(team["owner"].read_bytes()))
    rows = dict(re.findall(r'<tr data-reviewer="(\w+)">.*?<td data-col="registered-by">'
                           r'(.*?)</td>', page.text, flags=re.S))
    assert rows == {"owner": "the store&#39;s first key: its owner",
                    "alice": f"owner (key {owner_id})", "bob": f"owner (key {owner_id})"}
    assert "Unsigned reviews: <strong>refused</strong>" in page.text
