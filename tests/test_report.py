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


# -- issue 22: a trace page that scales ------------------------------------------------------

def test_a_long_run_of_deltas_is_one_row_with_its_frames() -> None:
    from serve_scenarios import ANSWER, long_attempt

    events = preview_replay(parse_scenario(long_attempt(frames=300)))[1]
    report = build_report(events, "t10k", version="test")
    folded = [row for row in report.rows if row.members]
    assert len(folded) == 1
    run_row = folded[0]
    assert (run_row.kind, run_row.label, run_row.count) == ("delta", "text delta ×296", 296)
    assert run_row.text.endswith(ANSWER)
    assert [m.position for m in run_row.members] == list(
        range(run_row.position, run_row.last_position + 1))
    assert len(report.rows) == len(events) - 295  # 296 rows became one
    page = render_html(report, version="test")
    assert 'data-count="296"' in page and "text delta ×296" in page
    shown = {int(p) for p in re.findall(r'<li id="e(\d+)"', page)}
    assert len(shown) == 100  # the first and last 50, with their native JSON
    assert "196 more (<code>tracestore events --attempt t10k-a</code> shows each)" in page
    assert len(page) < 200_000


def test_short_runs_stay_one_row_per_delta_and_quiet_runs_fold() -> None:
    from tracestore.report.layout import fold_rows
    from tracestore.report.model import Row

    def row(position: int, kind: str, label: str = "x", lane: int = 1) -> Row:
        return Row(position, lane, kind, label, "t", block=0)

    rows = [row(1, "delta", "text delta"), row(2, "delta", "text delta"),
            row(3, "segment"), row(4, "keepalive"), row(5, "segment"), row(6, "stop"),
            row(7, "segment"), row(8, "delta", "text delta"), row(9, "delta", "text delta"),
            row(10, "delta", "text delta", lane=2)]
    folded = list(fold_rows(rows))
    assert [(r.position, r.kind, r.count) for r in folded] == [
        (1, "delta", 1), (2, "delta", 1), (3, "fold", 4), (6, "stop", 1), (8, "delta", 1),
        (9, "delta", 1), (10, "delta", 1)]
    assert folded[2].label == "3 capture segments · 1 keepalive"
    assert [m.position for m in folded[2].members] == [3, 4, 5, 7]


def test_every_frame_has_its_native_json_and_attempts_have_human_labels() -> None:
    report = t8_report()
    page = render_html(report, version="test")
    frames = [row for row in report.rows if row.native is not None]
    assert [r.position for r in frames] == [4, 5, 10, 11, 12, 13, 14, 15, 16, 24]
    assert len(frames) == 10 and page.count('<details class="native">') == 10
    assert "&#34;contentBlockDelta&#34;" in page or "&quot;contentBlockDelta&quot;" in page
    assert [lane.label for lane in report.lanes] == ["attempt 1", "attempt 2 (retry of 1)"]
    only_new = build_report(scenario_events(SEED / "t8.json"), "t8", attempts=["t8-new"])
    assert only_new.lanes[0].label == "attempt 2 (retry of 1)"  # numbered within the trace


def test_bad_writes_show_a_word_diff_against_the_released_answer() -> None:
    report = build_report(scenario_events(SEED / "t8-buggy-app.json"), "t8-buggy-app",
                          version="test")
    assert report.diffs == {20: [
        ("same", "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed "),
        ("ins", "Thursday.It is closed "), ("same", "Thursday.")]}
    page = render_html(report, version="test")
    assert "<ins>Thursday.It is closed </ins>" in page


def test_header_facts_come_from_the_recording() -> None:
    from serve_scenarios import many_attempts

    events = preview_replay(parse_scenario(many_attempts(attempts=3)))[1]
    first, _, last = (lane.facts for lane in build_report(events, "t25").lanes)
    assert first.model == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert ("inferenceConfig.temperature", "0.2") in first.request
    assert (first.first_token_ms, first.duration_ms, first.usage) == (160.0, 280.0, ())
    assert last.usage == (("inputTokens", "30"), ("outputTokens", "20"), ("totalTokens", "50"))
    t8 = t8_report().lanes[0].facts
    assert (t8.model, t8.first_token_ms, t8.duration_ms) == (None, None, None)
    assert "not recorded" in render_html(t8_report(), version="test")


def test_the_model_named_by_the_frames(tmp_path: Path) -> None:
    from tracestore.ingest import plan_ingest
    from tracestore.store.log import EventStore

    capture = REPO / "fixtures" / "real" / "openai-chat" / "text-usage-moderation-gpt-5.sse"
    plan = plan_ingest(capture.read_bytes(), filename=capture.name, attempt_id="a1",
                       trace_id="tr1")
    with EventStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.append(plan.events, blob_data=plan.blobs if hasattr(plan, "blobs") else [])
        events = store.read(trace_id="tr1")
    facts = build_report(events, "tr1").lanes[0].facts
    assert facts.model is not None and facts.model.startswith("gpt-5")
    assert dict(facts.usage).get("completion_tokens") is not None


def test_capture_segments_leave_the_timeline_and_deltas_between_them_fold() -> None:
    """A live recording writes a segment before each chunk's frames: seg, d, d, seg, d ..."""
    from tracestore.report.layout import fold_rows
    from tracestore.report.model import Row

    def row(position: int, kind: str) -> Row:
        return Row(position, 1, kind, "text delta" if kind == "delta" else kind, "w", block=0)

    kinds = ["segment", "delta", "delta", "segment", "delta", "keepalive", "segment",
             "delta", "segment", "terminal"]
    folded = list(fold_rows(row(p, k) for p, k in enumerate(kinds, start=1)))
    assert [(r.position, r.kind, r.count) for r in folded] == [
        (1, "fold", 5), (2, "delta", 4), (10, "terminal", 1)]
    assert folded[0].label == "4 capture segments · 1 keepalive"
    assert [m.position for m in folded[1].members] == [2, 3, 5, 8]
    assert folded[1].text == "wwww" and folded[1].last_position == 8


def test_a_live_recording_reads_without_its_segments(tmp_path: Path) -> None:
    from tracestore.recording.recorder import Recorder

    data = (REPO / "fixtures" / "real" / "anthropic" / "stop-sequence.sse").read_bytes()
    with Recorder(f"sqlite:///{tmp_path / 'live.db'}") as rec:
        attempt = rec.trace("live").attempt("live-a")
        for i in range(0, len(data), 64):  # a chunk at a time, as a transport delivers
            attempt.feed(data[i:i + 64])
        attempt.close()
        events = rec.store.read(trace_id="live")
    report = build_report(events, "live")
    kinds = [row.kind for row in report.rows]
    assert sum(e.type == "capture.segment" for e in events) == 11
    assert kinds.count("segment") == 0 and kinds.count("fold") == 1
    fold = next(row for row in report.rows if row.kind == "fold")
    assert fold.label == "11 capture segments · 1 keepalive" and fold.count == 12
    deltas = [row for row in report.rows if row.kind == "delta"]
    assert [(d.label, d.count) for d in deltas] == [("text delta ×4", 4)]
    assert sum(row.count for row in report.rows) == len(events)  # every event, once
    page = render_html(report, version="test")  # every position still has its anchor
    assert set(re.findall(r'id="e(\d+)"', page)) >= {str(e.position) for e in events
                                                      if e.attempt_id is not None}
