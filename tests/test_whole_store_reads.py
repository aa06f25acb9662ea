"""Whole-store reads: one set-based query for ``attempts``, streamed ``audit --json``.

The fast forms must say exactly what the per-row forms said; these tests compare them on
stores with many traces, retries and violations.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from clihelp import run

from tracestore.cli.release_cmds import audit_all, write_audit_json
from tracestore.review.escape import json_text
from tracestore.store.log import EventStore

ROOT = Path(__file__).resolve().parents[1]
SEED003 = ROOT / "fixtures" / "seed003"
PROJECTIONS = ROOT / "fixtures" / "projections"


def _fill(db: Path) -> None:
    for name in ("t7.json", "t7-leaky-app.json", "t8.json", "t8-buggy-app.json", "s1.json"):
        assert run("replay", str(SEED003 / name), "--json", db=db)[0] == 0
    for name in ("s1.json", "t1.json"):
        assert run("ingest", str(PROJECTIONS / name), "--json", db=db)[0] == 0


def test_streamed_audit_json_is_the_whole_report_byte_for_byte(db_file: Path) -> None:
    _fill(db_file)
    with EventStore(f"sqlite:///{db_file}") as store:
        expected = json_text(audit_all(store).to_dict(), indent=None, default=str) + "\n"
        out = io.StringIO()
        violations = write_audit_json(store, out.write)
    assert out.getvalue() == expected
    report = json.loads(expected)
    assert violations == len(report["violations"]) > 0
    assert len(report["attempts"]) >= 8


def test_audit_json_strict_exits_1_on_violations(db_file: Path) -> None:
    _fill(db_file)
    code, out, _ = run("audit", "--json", "--strict", db=db_file)
    assert code == 1 and json.loads(out)["violations"]


def test_attempts_listing_from_one_query_matches_the_events(db_file: Path) -> None:
    _fill(db_file)
    code, out, _ = run("attempts", "--json", db=db_file)
    listing = json.loads(out)["attempts"]
    with EventStore(f"sqlite:///{db_file}") as store:
        expected = []
        for stream, count in store.streams("attempt:"):
            first = store.read(stream=stream, limit=1)[0]
            expected.append({"attempt_id": stream.split(":", 1)[1], "events": count,
                             "trace_id": getattr(first.event, "trace_id", None),
                             "api": getattr(first.event, "api", None),
                             "first_position": first.position})
    assert code == 0 and listing == expected and len(listing) >= 8
