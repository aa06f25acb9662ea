"""Small things a new user trips over: a record's evidence gap with nothing missing, values
cut in the reviews table."""

from __future__ import annotations

import json
from pathlib import Path

from clihelp import run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def test_an_attempt_with_every_kind_of_evidence_says_so(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    # anthropic/text-basic.sse: simonw/llm-anthropic, tests/cassettes (fixtures/real/PROVENANCE.md)
    assert run("ingest", str(REAL / "anthropic" / "text-basic.sse"), "--attempt", "a1",
               db=db)[0] == 0
    written = tmp_path / "written.txt"
    written.write_text("what the app saved", encoding="utf-8")
    assert run("destination", "a1", "history", "--text-file", str(written), db=db)[0] == 0
    code, out, _ = run("review", "a1", "--json", db=db)
    assert code == 0
    gap = next(f for f in json.loads(out)["fields"] if f["name"] == "evidence_gap")
    assert gap["value"] == ("None the log can show: application destination writes, raw "
                            "capture bytes, the end of the transport and usage are recorded")


def test_the_reviews_table_marks_a_cut_value() -> None:
    from tracestore.cli.queue_cmds import VALUE_CHARS, _who

    record = {"values": [{"field": "evidence_gap", "value": "x" * 100, "set_by": "alice",
                          "set_at": "2026-12-04T10:00:00.000000+00:00", "position": 7,
                          "signed_by_key": True}], "approvals": []}
    shown = _who(record)
    assert shown == (f"evidence_gap={'x' * (VALUE_CHARS - 1)}… by alice at "
                     "2026-12-04T10:00:00 (#7)")
    record["values"][0]["value"] = "short"
    assert _who(record).startswith("evidence_gap=short by alice")
