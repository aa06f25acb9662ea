"""Rendering: the Markdown table, the summary line, JSON, and hostile text byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracestore
from tracestore.cli.common import safe_text
from tracestore.events import StoredEvent
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.review import (
    blank_record, fill_record, load_template, render_json, render_markdown,
)
from tracestore.review.context import Derived
from tracestore.review.escape import json_text, md_cell
from tracestore.review.record import FieldValue, ReviewRecord

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
V = tracestore.__version__

#: Every kind of hostile text at once: table syntax, HTML, ANSI, Rich markup, Markdown
#: inline syntax, NUL, a lone CR, a bidi override, a C1 CSI, an entity, a backslash.
HOSTILE = ("a|b\nc<script>alert(1)</script>\x1b[31mred\x1b[0m [bold]x[/bold] `c` *e* _u_ "
           "end_turn ~~s~~ $m$ \x00\r\u202eend\\ &lt; \r\n\t\x9b!")
HOSTILE_MD = ("a\\|b<br>c&lt;script&gt;alert(1)&lt;/script&gt;\\x1b\\[31mred\\x1b\\[0m "
              "\\[bold\\]x\\[/bold\\] \\`c\\` \\*e\\* \\_u\\_ end_turn \\~\\~s\\~\\~ \\$m\\$ "
              "\\x00\\x0d\\u202eend\\\\ &amp;lt; <br>\\x09\\x9b!")


def scenario(name: str) -> dict[str, Any]:
    return json.loads((SEED / f"{name}.json").read_text(encoding="utf-8"))


def replayed(data: dict[str, Any]) -> list[StoredEvent]:
    return preview_replay(parse_scenario(data))[1]


def test_md_cell_escapes_every_hostile_construct() -> None:
    assert md_cell(HOSTILE) == HOSTILE_MD


@pytest.mark.parametrize("text, cell", [
    ("plain text 09:00", "plain text 09:00"),
    ("a | b", "a \\| b"),
    ("x\\|y", "x\\\\\\|y"),  # a typed backslash cannot un-escape the pipe
    ("line1\r\nline2\nline3", "line1<br>line2<br>line3"),
    ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
    ("![t](http://evil/x.png)", "!\\[t\\](http://evil/x.png)"),
    ("snake_case _emph_", "snake_case \\_emph\\_"),
    ("# not a heading", "# not a heading"),
    ("\u202ereversed", "\\u202ereversed"),
])
def test_md_cell_cases(text: str, cell: str) -> None:
    assert md_cell(text) == cell


def test_json_text_escapes_what_ensure_ascii_false_would_pass_raw() -> None:
    text = json_text({"v": HOSTILE}, indent=None)
    assert text == ('{"v": "a|b\\nc<script>alert(1)</script>\\u001b[31mred\\u001b[0m [bold]x'
                    '[/bold] `c` *e* _u_ end_turn ~~s~~ $m$ \\u0000\\r\\u202eend\\\\ &lt; '
                    '\\r\\n\\t\\u009b!"}')
    assert json.loads(text) == {"v": HOSTILE}


def _record_with(value: str, reviewer: str) -> ReviewRecord:
    template = load_template("trace-review")
    fields = tuple(FieldValue(f.name, f.label, "unknown", "UNKNOWN", ()) for f in template.fields)
    hostile = FieldValue("evidence_gap", "Evidence gap", "reviewer", value, (14,), reviewer,
                         "2026-01-01T00:00:00+00:00")
    fields = tuple(hostile if f.name == "evidence_gap" else f for f in fields)
    return ReviewRecord(template, "t|7", "t7", 14, V, fields)


def test_hostile_reviewer_text_renders_byte_for_byte() -> None:
    md = render_markdown(_record_with(HOSTILE, "[red]mallory|x"))
    row = next(line for line in md.splitlines() if line.startswith("| Evidence gap |"))
    assert row == (f"| Evidence gap | {HOSTILE_MD} | reviewer \\[red\\]mallory\\|x, "
                   "2026-01-01T00:00:00+00:00 | #14 |")
    assert md.splitlines()[0] == "# Trace review record: attempt t\\|7"
    assert "\x1b" not in md and "\x00" not in md and "\r" not in md and "\u202e" not in md
    # The terminal shows exactly the Markdown: nothing left for safe_text to neutralise.
    assert safe_text(md, keep_newlines=True) == md


def test_hostile_model_text_in_the_candidate_renders_byte_for_byte() -> None:
    data = scenario("t1")
    deltas = [s for s in data["steps"] if "event" in s and "contentBlockDelta" in s["event"]]
    deltas[0]["event"]["contentBlockDelta"]["delta"]["text"] = "Desk|opens\n<script>x</script> "
    deltas[1]["event"]["contentBlockDelta"]["delta"]["text"] = "\x1b[31m[bold]Thu[/bold]\x00"
    md = render_markdown(fill_record(load_template("trace-review"), replayed(data), "t1",
                                     version=V))
    row = next(line for line in md.splitlines() if line.startswith("| Candidate |"))
    assert row == (
        "| Candidate | Complete: 1 text block from 2 deltas (#5–#6); still private (no "
        "ui/history/export/copy write); text: \"Desk\\|opens<br>&lt;script&gt;x&lt;/script&gt; "
        "\\x1b\\[31m\\[bold\\]Thu\\[/bold\\]\\x00\" | derived | #5, #6, #8 |")


def test_hostile_native_error_message_is_escaped() -> None:
    data = scenario("t2")
    for step in data["steps"]:
        if "event" in step and "modelStreamErrorException" in step["event"]:
            step["event"]["modelStreamErrorException"]["message"] = "x|y\n\x1b]8;;http://e\x07"
    md = render_markdown(fill_record(load_template("trace-review"), replayed(data), "t2",
                                     version=V))
    row = next(line for line in md.splitlines() if line.startswith("| Native observation |"))
    assert row == ('| Native observation | Native modelStreamErrorException "x\\|y<br>'
                   '\\x1b\\]8;;http://e\\x07" (exception) at #7; no native terminal; clean '
                   'drain at #9 | derived | #7, #9 |')


T7_MARKDOWN = f"""\
# Trace review record: attempt t7

Template trace-review · trace t7 · events up to #12 · tracestore {V}

Seed 003's filled trace-review record (T7 shows one), filled from the events of one attempt. A blank is UNKNOWN, never PASS.

| Field | Value | Source | Evidence |
| --- | --- | --- | --- |
| Comparison revision | Text-stream comparison 2026-10-09: source openai-responses gpt-4.1-2025-04-14 (stream:true, background:false); target bedrock-converse-stream us.anthropic.claude-haiku-4-5-20251001-v1:0 us-east-1 | derived | #1 |
| Reader/parser revision | NOT PROVIDED; no integration executed (no application capture, reader or destination write recorded); tracestore {V} (release policy seed003-v1) re-derived this record; reader r-t7 (bedrock-converse-stream normalizer); decision recorded at #7 under policy seed003-v1 | derived | #2, #7 |
| Attempt correlation | Local attempt t7 (trace t7, reader r-t7); no native response id in 6 frames | derived | #2 |
| Native observation | Native end_turn (normal) at #10, after local Stop at #6; clean drain at #12 | derived | #6, #10, #12 |
| Candidate | Complete: 1 text block from 2 deltas (#5–#8); text continued after local Stop at #6; still private (no ui/history/export/copy write); text: "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday." | derived | #5, #6, #8, #10 |
| Local ordering | Local Stop #6 → native end_turn #10 → clean drain #12; Stop recorded before the native terminal and before any acceptance | derived | #6, #10, #12 |
| Semantic rule | Answer from “The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday.” Accept only preservation of both days, Wednesday hours and UTC without invented additional hours. Do not require one exact string. No tools are authorized by this task. — 6 required and 4 forbidden patterns, case-insensitive on NFC text; no exact-string equality; not judged: the attempt was stopped at #6, before acceptance | derived | #1, #6 |
| Release decision | Ineligible: stopped at #6 (local_stop_before_release); policy seed003-v1; note frames_after_decision (native frames arrived after the decision; they changed nothing) | derived | #6, #7 |
| Accepted destinations | Expected absent (stopped); actual UI/history/export/copy NOT EXECUTED (no application write recorded); replay harness writes, not readback: no ui/history/export/copy write, progress fixed text only (#3); audit: no violations | derived | #3, #6 |
| Authority | No tool configured, proposed or authorized; Profile bedrock-converse-text configures no tools; no tool use observed in 6 frames; no model decision proposed, admitted or refused | derived | #1, #2 |
| Remote cancellation | UNKNOWN | unknown | — |
| Evidence gap | Not in the log: application destination readback (only replay-harness writes); raw capture bytes (synthetic projection); a provider receipt for the local Stop at #6 (client abort propagation unproven) | derived | #1, #6 |
| Independent reviewer | UNASSIGNED; not approved | derived | — |

UNKNOWN: 1 of 13 fields (Remote cancellation). Conflicts: 0.
Approvals: none.
"""


def test_t7_markdown_document_byte_for_byte() -> None:
    record = fill_record(load_template("trace-review"), replayed(scenario("t7")), "t7",
                         version=V)
    assert render_markdown(record) == T7_MARKDOWN


def test_conflict_is_visible_in_markdown_with_both_values() -> None:
    template = load_template("trace-review")
    f = FieldValue("release_decision", "Release decision", "reviewer", "released", (14,),
                   "alice", "2026-01-01T00:00:00+00:00", Derived("Ineligible: stopped", (6, 7)),
                   True)
    fields = tuple(f if t.name == "release_decision" else
                   FieldValue(t.name, t.label, "derived", "x", (1,)) for t in template.fields)
    md = render_markdown(ReviewRecord(template, "t7", "t7", 14, V, fields))
    assert ("| Release decision | **CONFLICT** — reviewer: released<br>derived: Ineligible: "
            "stopped | reviewer alice, 2026-01-01T00:00:00+00:00 | #14; derived: #6, #7 |") in md
    assert "UNKNOWN: 0 of 13 fields. Conflicts: 1 (Release decision)." in md


def test_blank_record_markdown_byte_for_byte() -> None:
    md = render_markdown(blank_record(load_template("trace-review"), version=V))
    labels = [f.label for f in load_template("trace-review").fields]
    rows = "".join(f"| {label} | UNKNOWN | unknown | — |\n" for label in labels)
    assert md == (
        "# Trace review record (blank)\n\nTemplate trace-review: every field is UNKNOWN until "
        "evidence or a reviewer fills it.\n\nSeed 003's filled trace-review record (T7 shows "
        "one), filled from the events of one attempt. A blank is UNKNOWN, never PASS.\n\n"
        "| Field | Value | Source | Evidence |\n| --- | --- | --- | --- |\n" + rows +
        f"\nUNKNOWN: 13 of 13 fields ({'; '.join(labels)}). Conflicts: 0.\n")


def test_json_record_shape() -> None:
    record = fill_record(load_template("trace-review"), replayed(scenario("t7")), "t7",
                         version=V)
    doc = json.loads(render_json(record))
    assert set(doc) == {"template", "attempt_id", "trace_id", "as_of_position",
                        "tracestore_version", "fields", "unknown", "conflicts", "approvals",
                        "orphan_values", "digest", "review_state"}  # issue 21
    assert (doc["template"], doc["attempt_id"], doc["unknown"]) == (
        "trace-review", "t7", ["remote_cancellation"])
    first = doc["fields"][0]
    assert first == {"name": "comparison_revision", "label": "Comparison revision",
                     "value": record.fields[0].value, "source": "derived", "evidence": [1],
                     "set_by": None, "set_at": None, "derived": None, "conflict": False}
    assert doc["fields"][10] | {"label": None} == {
        "name": "remote_cancellation", "label": None, "value": "UNKNOWN", "source": "unknown",
        "evidence": [], "set_by": None, "set_at": None, "derived": None, "conflict": False}
