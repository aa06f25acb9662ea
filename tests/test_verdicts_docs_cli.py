"""What docs/release-policy.md and README say about replay and audit, checked against the
CLI: replaying the same file twice, a conflicting scenario, and audit's exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.clihelp import count_events, run

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "fixtures" / "seed003"
POLICY = (ROOT / "docs" / "release-policy.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
GATE_CI = (ROOT / "docs" / "how-to" / "gate-ci.md").read_text(encoding="utf-8")


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_replaying_the_same_file_twice_appends_nothing(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    code, first, _ = run("replay", str(SEED / "t7.json"), "--json", db=db)
    assert code == 0
    stored = count_events(db)
    code, second, _ = run("replay", str(SEED / "t7.json"), "--json", db=db)
    assert (code, count_events(db), json.loads(second)) == (0, stored, json.loads(first))
    code, text, _ = run("replay", str(SEED / "t7.json"), db=db)
    assert code == 0 and "t7.json: already replayed (trace t7), nothing appended" in flat(text)
    assert ("prints `FILE: already replayed (trace ID), nothing appended` (with `--json`, the "
            "same decisions and violations as the first run) and exits 0") in flat(POLICY)


def test_a_different_scenario_with_a_known_attempt_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    assert run("replay", str(SEED / "t7.json"), db=db)[0] == 0
    stored = count_events(db)
    other = json.loads((SEED / "t7.json").read_text(encoding="utf-8"))
    other["trace"] = "another-trace"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other), encoding="utf-8")
    code, _, err = run("replay", str(path), db=db)
    assert (code, count_events(db)) == (2, stored) and "attempt_exists" in err
    assert "(`attempt_exists`, exit 2)" in flat(POLICY)


def test_audit_exits_0_with_violations_and_1_with_strict(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    assert run("replay", str(SEED / "t8-buggy-app.json"), db=db)[0] == 0
    code, out, _ = run("audit", "--json", db=db)
    assert code == 0 and json.loads(out)["violations"]
    assert run("audit", "--strict", db=db)[0] == 1
    clean = tmp_path / "clean.db"
    assert run("replay", str(SEED / "t1.json"), db=clean)[0] == 0
    assert run("audit", "--strict", db=clean)[0] == 0
    assert ("the exit code is 0 whether or not there are violations; with `--strict` it is 1 "
            "when there is at least one violation (for CI gates) and 0 when there is none"
            ) in flat(POLICY)
    assert "`audit` exits 0 whether or not it finds violations; `audit --strict` exits 1" \
        in flat(GATE_CI)
