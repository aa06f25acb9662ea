"""``replay FOLDER``: one transaction with a savepoint per scenario file.

Each file stays all or nothing and idempotent, as when it is replayed alone; the log is
committed (and synced) once for the whole folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tracestore.errors import StoreError
from tracestore.events import LocalStopped, NewEvent
from tracestore.store.log import AppendResult, EventStore
from clihelp import count_events, run

SEED003 = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"


def _events_by_trace(db: Path) -> dict[str, int]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT trace_id, count(*) FROM ts_events GROUP BY trace_id"))
    finally:
        conn.close()


def test_a_folder_is_appended_in_one_transaction_with_a_savepoint_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = EventStore.append_each

    def counting(self: EventStore, builds: Any, **kw: Any) -> Any:
        calls.append(len(builds))
        return original(self, builds, **kw)

    monkeypatch.setattr(EventStore, "append_each", counting)
    monkeypatch.setattr(EventStore, "append_with", lambda *a, **k: pytest.fail("append_with"))
    code, out, err = run("replay", str(SEED003), "--json", db=tmp_path / "r.db")
    assert code == 0, err
    assert calls == [len(list(SEED003.glob("*.json")))]


def test_a_bad_scenario_in_the_middle_leaves_the_others_recorded_and_itself_absent(
        tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    shutil.copy(SEED003 / "t7.json", folder / "a.json")
    # b is another scenario reusing t7's attempt: once a is in the transaction, b's planner
    # refuses it (attempt_exists), as when the two are replayed one after the other.
    bad = json.loads((SEED003 / "t7.json").read_text(encoding="utf-8"))
    bad["steps"] = bad["steps"][:3]
    (folder / "b.json").write_text(json.dumps(bad), encoding="utf-8")
    shutil.copy(SEED003 / "t8.json", folder / "c.json")
    db = tmp_path / "r.db"
    code, out, err = run("replay", str(folder), "--json", db=db)
    assert code == 2
    report = json.loads(out)
    assert report["failed"] == [{"file": str(folder / "b.json"), "error": "attempt_exists",
                                 "message": report["failed"][0]["message"]}]
    assert [a["attempt_id"] for a in report["attempts"]] == ["t7", "t8-old", "t8-new"]
    assert err.strip().endswith(f"b.json: error[attempt_exists]: "
                                f"{report['failed'][0]['message']}")
    alone = tmp_path / "alone.db"
    assert run("replay", str(SEED003 / "t7.json"), db=alone)[0] == 0
    assert run("replay", str(SEED003 / "t8.json"), db=alone)[0] == 0
    assert _events_by_trace(db) == _events_by_trace(alone)  # a and c whole, b absent
    with EventStore(f"sqlite:///{db}") as store:
        assert store.verify().ok
    before = count_events(db)
    code, again, _ = run("replay", str(folder), "--json", db=db)  # a and c: no-ops
    assert code == 2 and count_events(db) == before
    assert json.loads(again)["attempts"] == report["attempts"]


def _stop(attempt: str, n: int) -> NewEvent:
    return NewEvent(f"attempt:{attempt}", LocalStopped(attempt_id=attempt), id=f"{attempt}-{n}")


def test_a_builder_rejected_after_its_rows_were_written_leaves_nothing(tmp_path: Path) -> None:
    with EventStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        builds = [lambda view, a=a: ([_stop(a, 1), _stop(a, 2)], [a.encode() * 3])
                  for a in ("x", "y", "z")]

        def check(index: int, result: AppendResult) -> None:
            assert result.appended == 2  # y's rows are in its savepoint when it is refused
            if index == 1:
                raise StoreError("refused", code="test_refusal")

        outcomes = store.append_each(builds, check=check)
        assert [type(o).__name__ for o in outcomes] == ["AppendResult", "StoreError",
                                                        "AppendResult"]
        assert (outcomes[0].positions, outcomes[2].positions) == ((1, 2), (3, 4))
        assert [e.stream for e in store.read()] == ["attempt:x"] * 2 + ["attempt:z"] * 2
        assert store.get_blob(__import__("hashlib").sha256(b"yyy").hexdigest()) is None
        assert store.verify().ok
        again = store.append_each(builds)
        assert [len(o.skipped_ids) for o in again] == [2, 0, 2]  # y now goes in, once
        assert again[1].positions == (5, 6)
