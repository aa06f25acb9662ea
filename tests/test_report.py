"""``tracestore report``: the report model over the projections, and its HTML (no browser).

The browser tests (``test_report_browser.py``) check what a reader sees; these check the
data behind it and the markup contract, fast.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

import tracestore
from tracestore.errors import InputError, NotFound
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.report.html import render_html
from tracestore.report.model import build_report
from tracestore.review import load_template

from clihelp import run

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
HOSTILE = REPO / "fixtures" / "report" / "hostile-html.json"


def scenario_events(path: Path) -> list:
    return preview_replay(parse_scenario(json.loads(path.read_text("utf-8"))))[1]


def t8_report():
    return build_report(scenario_events(SEED / "t8.json"), "t8",
                        template=load_template("trace-review"), version="test")


def test_t8_lanes_follow_the_projections() -> None:
    report = t8_report()
    assert [lane.attempt_id for lane in report.lanes] == ["t8-old", "t8-new"]
    old, new = report.lanes
    assert (old.decision.status, old.decision.decided_at_position, old.stop_position) == (
        "stopped", 6, 6)
    assert old.decision.reasons == ("local_stop_before_release",)
    assert (new.decision.status, new.decision.decided_at_position, new.drain_position,
            new.terminal_position) == ("released", 17, 17, 15)
    assert new.retry_of == "t8-old"
    assert report.violations == ()
    assert [f.name for f in old.record.unknown] == ["remote_cancellation"]


def test_t8_every_event_has_one_row_at_its_position_in_its_lane() -> None:
    report = t8_report()
    assert [row.position for row in report.rows] == list(range(1, 25))
    lane_of = {row.position: row.lane for row in report.rows}
    kind_of = {row.position: row.kind for row in report.rows}
    assert lane_of[1] == 0 and kind_of[1] == "trace"
    assert (lane_of[6], kind_of[6]) == (1, "stop")
    assert (lane_of[7], kind_of[7]) == (1, "decision")
    assert (lane_of[15], kind_of[15]) == (2, "terminal")
    assert (lane_of[17], kind_of[17]) == (2, "drain")
    assert [(p, kind_of[p]) for p in range(20, 24)] == [(p, "write") for p in range(20, 24)]
    late = {row.position: row for row in report.rows if "late" in row.marks}
    # The old reader's delta after its Stop, and its native end: in the old lane, late.
    assert sorted(late) == [10, 24]
    assert late[10].lane == 1 and late[10].text == "It is closed Thursday."
    assert late[24].kind == "terminal" and late[24].label == "native end: end_turn"


def test_buggy_app_violations_mark_their_rows() -> None:
    events = scenario_events(SEED / "t8-buggy-app.json")
    report = build_report(events, "t8-buggy-app", version="test")
    flagged = {row.position: sorted(v.code for v in row.violations)
               for row in report.rows if row.violations}
    assert flagged == {20: ["answer_mismatch", "old_attempt_text_in_answer"],
                       22: ["duplicate_history_entry"]}
    writes = [row for row in report.rows if row.kind == "write"]
    assert all("application" in row.marks for row in writes)
    assert report.lanes[0].record is None  # no template asked for


def test_attempt_filter_and_unknown_names() -> None:
    events = scenario_events(SEED / "t8.json")
    report = build_report(events, "t8", attempts=["t8-new"], version="test")
    assert [lane.attempt_id for lane in report.lanes] == ["t8-new"]
    assert {row.lane for row in report.rows} == {0, 1}
    assert 10 not in {row.position for row in report.rows}  # the old lane's events left out
    with pytest.raises(InputError) as err:
        build_report(events, "t8", attempts=["t7"], version="test")
    assert err.value.code == "attempt_not_in_trace"
    with pytest.raises(NotFound):
        build_report(events, "nope", version="test")


def test_html_escapes_model_text_and_loads_nothing() -> None:
    events = scenario_events(HOSTILE)
    page = render_html(build_report(events, "hostile-html",
                                    template=load_template("trace-review"), version="test"),
                       version="test")
    assert "<script" not in page.lower()
    assert "<img" not in page and "<link" not in page and "onerror=\"" not in page
    assert "&lt;script&gt;document.title=" in page
    # Nothing to fetch: no src/href other than in-page anchors.
    assert re.findall(r'(?:src|href)="(?!#)[^"]*"', page) == []
    assert "default-src 'none'" in page


def test_evidence_positions_link_to_event_anchors() -> None:
    page = render_html(t8_report(), version="test")
    anchors = set(re.findall(r'id="e(\d+)"', page))
    links = set(re.findall(r'href="#e(\d+)"', page))
    assert anchors == {str(p) for p in range(1, 25)}
    assert links <= anchors and {"6", "10", "15", "17"} <= links


def test_report_command_writes_the_page(db_file: Path, tmp_path: Path) -> None:
    assert run("replay", str(SEED / "t8-buggy-app.json"), "--json", db=db_file)[0] == 0
    out = tmp_path / "t8b.html"
    code, stdout, stderr = run("report", "t8-buggy-app", "--html", str(out), "--json",
                               db=db_file)
    assert code == 0, stderr
    # issue 20: the counts are attempt_count / violation_count ("attempts" and "violations"
    # are lists elsewhere); the old integer keys stay for one release (docs/json.md)
    assert json.loads(stdout) == {"trace_id": "t8-buggy-app", "html": str(out),
                                  "attempt_count": 2, "events": 25, "violation_count": 3,
                                  "attempts": 2, "violations": 3}
    page = out.read_text("utf-8")
    assert page.count('class="row ') == 25 and "duplicate_history_entry" in page
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    code, stdout, _ = run("report", "--attempt", "t8b-new", "--html", "-", db=db_file)
    assert code == 0 and stdout.startswith("<!DOCTYPE html>")
    assert 'data-attempt="t8b-new"' in stdout and 'data-attempt="t8b-old"' not in stdout


def test_report_command_errors(db_file: Path, tmp_path: Path) -> None:
    assert run("replay", str(SEED / "t7.json"), "--json", db=db_file)[0] == 0
    code, _, stderr = run("report", "nope", "--html", str(tmp_path / "x.html"), "--json",
                          db=db_file)
    assert code == 4 and json.loads(stderr)["error"] == "trace_not_found"
    code, _, stderr = run("report", "t7", "--json", db=db_file)
    assert code == 2 and json.loads(stderr)["error"] == "missing_option"
    missing = tmp_path / "no-such-folder" / "x.html"
    code, _, stderr = run("report", "t7", "--html", str(missing), "--json", db=db_file)
    assert code == 2 and "no-such-folder" in json.loads(stderr)["message"]
    assert not missing.parent.exists()


def test_version_is_in_the_page() -> None:
    page = render_html(t8_report(), version=tracestore.__version__)
    assert f'content="tracestore {tracestore.__version__}"' in page
