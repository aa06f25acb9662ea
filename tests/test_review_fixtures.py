"""Records filled from the seed 003 fixtures: each derived value asserted exactly.

Positions are those of an empty log (as in each fixture's ``expected`` block): the pure
planner's simulated events carry the positions the store will assign.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tracestore
from tracestore.errors import NotFound
from tracestore.events import StoredEvent
from tracestore.projections import reasons as R
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.review import ReviewRecord, blank_record, fill_record, load_template

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
V = tracestore.__version__
ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
TASK = ("Answer from “The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed "
        "Thursday.” Accept only preservation of both days, Wednesday hours and UTC without "
        "invented additional hours. Do not require one exact string. No tools are authorized "
        "by this task.")
NOT_EXECUTED = ("actual UI/history/export/copy NOT EXECUTED (no application write recorded); "
                "replay harness writes, not readback: ")


def events_of(name: str) -> list[StoredEvent]:
    scenario = json.loads((SEED / f"{name}.json").read_text(encoding="utf-8"))
    return preview_replay(parse_scenario(scenario))[1]


def record(name: str, attempt: str, template: str = "trace-review") -> ReviewRecord:
    return fill_record(load_template(template), events_of(name), attempt, version=V)


def values(rec: ReviewRecord) -> dict[str, tuple[str, str, tuple[int, ...]]]:
    return {f.name: (f.value, f.source, f.evidence) for f in rec.fields}


T7_EXPECTED = {
    "comparison_revision": (
        "Text-stream comparison 2026-10-09: source openai-responses gpt-4.1-2025-04-14 "
        "(stream:true, background:false); target bedrock-converse-stream "
        "us.anthropic.claude-haiku-4-5-20251001-v1:0 us-east-1", "derived", (1,)),
    "reader_revision": (
        "NOT PROVIDED; no integration executed (no application capture, reader or destination "
        f"write recorded); tracestore {V} (release policy seed003-v1) re-derived this record; "
        "reader r-t7 "
        "(bedrock-converse-stream normalizer); decision recorded at #7 under policy "
        "seed003-v1", "derived", (2, 7)),
    "attempt_correlation": (
        "Local attempt t7 (trace t7, reader r-t7); no native response id in 6 frames",
        "derived", (2,)),
    "native_observation": (
        "Native end_turn (normal) at #10, after local Stop at #6; clean drain at #12",
        "derived", (6, 10, 12)),
    "candidate": (
        "Complete: 1 text block from 2 deltas (#5–#8); text continued after local Stop at #6; "
        "still private (no ui/history/export/copy write); text: \"" + ANSWER + "\"",
        "derived", (5, 6, 8, 10)),
    "local_ordering": (
        "Local Stop #6 → native end_turn #10 → clean drain #12; Stop recorded before the "
        "native terminal and before any acceptance", "derived", (6, 10, 12)),
    "semantic_rule": (
        f"{TASK} — 6 required and 4 forbidden patterns, case-insensitive on NFC text; no "
        "exact-string equality; not judged: the attempt was stopped at #6, before acceptance",
        "derived", (1, 6)),
    "release_decision": (
        "Ineligible: stopped at #6 (local_stop_before_release); policy seed003-v1; note "
        "frames_after_decision (native frames arrived after the decision; they changed "
        "nothing)", "derived", (6, 7)),
    "accepted_destinations": (
        f"Expected absent (stopped); {NOT_EXECUTED}no ui/history/export/copy write, progress "
        "fixed text only (#3); audit: no violations", "derived", (3, 6)),
    "authority": (
        "No tool configured, proposed or authorized; Profile bedrock-converse-text configures "
        "no tools; no tool use observed in 6 frames; "
        "no model decision proposed, admitted or refused", "derived", (1, 2)),
    "remote_cancellation": ("UNKNOWN", "unknown", ()),
    "evidence_gap": (
        "Not in the log: application destination readback (only replay-harness writes); raw "
        "capture bytes (synthetic projection); a provider receipt for the local Stop at #6 "
        "(client abort propagation unproven)", "derived", (1, 6)),
    "independent_reviewer": ("UNASSIGNED; not approved", "derived", ()),
}


def test_t7_record_matches_the_seeds_filled_record_field_by_field() -> None:
    rec = record("t7", "t7")
    got = values(rec)
    assert list(got) == list(T7_EXPECTED)
    for name, want in T7_EXPECTED.items():
        assert got[name] == want, name
    assert [f.name for f in rec.unknown] == ["remote_cancellation"]
    assert rec.conflicts == [] and rec.as_of == 12 and rec.trace_id == "t7"


def test_t7_meaning_in_the_seeds_words() -> None:
    """The seed's T7 record, phrase by phrase, is present in the derived values."""
    got = {f.name: f.value for f in record("t7", "t7").fields}
    assert "end_turn" in got["native_observation"] and "after local Stop" in got[
        "native_observation"] and "clean drain" in got["native_observation"]
    assert got["candidate"].startswith("Complete") and "still private" in got["candidate"]
    assert got["local_ordering"].index("Stop") < got["local_ordering"].index("end_turn")
    assert got["release_decision"].startswith("Ineligible: stopped")
    assert R.LOCAL_STOP_BEFORE_RELEASE in got["release_decision"]
    assert got["accepted_destinations"].startswith("Expected absent")
    assert "audit: no violations" in got["accepted_destinations"]
    assert got["reader_revision"].startswith(
        f"NOT PROVIDED; no integration executed (no application capture, reader or destination "
        f"write recorded); tracestore {tracestore.__version__} ")
    assert got["remote_cancellation"] == "UNKNOWN"


RELEASED_DEST = ("Expected: the released answer once each in ui, history, export and copy; "
                 + NOT_EXECUTED + "ui #{0}, history #{1}, export #{2}, copy #{3}, progress "
                 "fixed text only (#{4}); audit: no violations")
ABSENT_DEST = ("Expected absent ({0}); " + NOT_EXECUTED + "no ui/history/export/copy write, "
               "progress fixed text only (#{1}); audit: no violations")

DECISIONS = {
    ("s1", "s1"): (
        ("Released at #9 (normal_native_ending, clean_drain, semantic_accepted); policy "
         "seed003-v1; note metadata_absent (no usage/metadata was observed; recorded as "
         "absent, never as zero)", (9, 11)),
        (RELEASED_DEST.format(12, 13, 14, 15, 3), (3, 9, 12, 13, 14, 15))),
    ("t1", "t1"): (
        ("Released at #10 (normal_native_ending, clean_drain, semantic_accepted); policy "
         "seed003-v1", (10, 12)),
        (RELEASED_DEST.format(13, 14, 15, 16, 3), (3, 10, 13, 14, 15, 16))),
    ("t2", "t2"): (
        ("Ineligible: interrupted at #7 (native_exception); policy seed003-v1", (7, 8)),
        (ABSENT_DEST.format("interrupted", 3), (3, 7))),
    ("t5", "t5"): (
        ("Ineligible: rejected at #9 (semantic_rejected); policy seed003-v1", (9, 11)),
        (ABSENT_DEST.format("rejected", 3), (3, 9))),
    ("t6", "t6"): (
        ("Ineligible: held at #5 (tool_use_not_allowed); policy seed003-v1", (5, 6)),
        (ABSENT_DEST.format("held", 3), (3, 5))),
    ("t8", "t8-old"): (
        ("Ineligible: stopped at #6 (local_stop_before_release); policy seed003-v1; note "
         "superseded_after_decision (a newer attempt was opened after this one was decided); "
         "note frames_after_decision (native frames arrived after the decision; they changed "
         "nothing)", (6, 7)),
        (ABSENT_DEST.format("stopped", 3), (3, 6))),
    ("t8", "t8-new"): (
        ("Released at #17 (normal_native_ending, clean_drain, semantic_accepted); policy "
         "seed003-v1", (17, 19)),
        (RELEASED_DEST.format(20, 21, 22, 23, 9), (9, 17, 20, 21, 22, 23))),
}


@pytest.mark.parametrize("case", DECISIONS, ids=[f"{t}:{a}" for t, a in DECISIONS])
def test_release_and_destination_fields(case: tuple[str, str]) -> None:
    got = values(record(*case))
    decision, destinations = DECISIONS[case]
    assert got["release_decision"] == (decision[0], "derived", decision[1])
    assert got["accepted_destinations"] == (destinations[0], "derived", destinations[1])


def test_t6_tool_is_named_held_and_ordering_is_unknown_without_an_end() -> None:
    got = {f.name: f.value for f in record("t6", "t6").fields}
    assert got["authority"] == (
        "Profile bedrock-converse-text configures no tools; tool use observed and held, never "
        "dispatched: unexpected_lookup at #5; no model decision proposed, admitted or refused")
    assert got["candidate"] == "No text candidate in 2 frames; nothing to release"
    assert got["local_ordering"] == "UNKNOWN"  # no Stop, terminal or drain: nothing to order


def test_t8_old_attempt_names_its_retry_and_late_terminal() -> None:
    got = {f.name: f.value for f in record("t8", "t8-old").fields}
    assert got["local_ordering"] == (
        "Local Stop #6 → retry t8-new opened #8 → native end_turn #24; Stop recorded before "
        "the native terminal and before any acceptance")
    assert got["attempt_correlation"] == (
        "Local attempt t8-old (trace t8, reader r-old); superseded by t8-new at #8; no native "
        "response id in 4 frames")


def test_s1_cites_native_ids_and_final_text_agreement() -> None:
    got = {f.name: f.value for f in record("s1", "s1").fields}
    assert got["attempt_correlation"] == (
        "Local attempt s1 (trace s1, reader r-s1); native ids: resp_s1 (#4), msg_s1 (#5)")
    assert "source final text agrees (#7, #8)" in got["candidate"]


def test_application_record_for_a_leaky_application() -> None:
    got = values(record("t7-leaky-app", "t7-leaky", "application-record"))
    assert got["actual_destinations"] == (
        "Actual: history #14, ui #15, progress fixed text (#3), progress shows OTHER TEXT (#6) "
        "— written by: application; audit: 3 violations: progress_not_fixed (progress) at #6, "
        "ineligible_text_in_destination (history) at #14, ineligible_text_in_destination (ui) "
        "at #15", "derived", (3, 6, 14, 15))
    assert got["expected_destinations"] == ("Expected absent (stopped)", "derived", (7,))


def test_application_record_for_t7_leaves_only_unprovable_fields_unknown() -> None:
    rec = record("t7", "t7", "application-record")
    assert [f.name for f in rec.unknown] == [
        "actual_destinations", "remote_cancellation", "integration_decision",
        "gaps_owner_review"]
    got = {f.name: f.value for f in rec.fields}
    assert got["trace_origin"] == "synthetic projection; no raw capture bytes stored"
    assert got["transport_accounting"] == (
        "Clean drain at #12; usage inputTokens=30, outputTokens=20, totalTokens=50 at #11 "
        "(one final record (metadata.usage))")
    assert got["local_eligibility"] == {f.name: f.value for f in record("t7", "t7").fields}[
        "release_decision"]


def test_metadata_absent_is_said_to_be_absent_never_zero() -> None:
    got = {f.name: f.value for f in record("t1-metadata-absent", "t1-metadata-absent",
                                           "application-record").fields}
    assert got["transport_accounting"].endswith(
        "no usage metadata (recorded as absent, never as zero)")
    assert "=0" not in got["transport_accounting"]


def test_filling_is_pure_and_deterministic() -> None:
    events = events_of("t8")
    template = load_template("trace-review")
    one = fill_record(template, events, "t8-new", version=V)
    two = fill_record(template, list(reversed(events)), "t8-new", version=V)
    assert one == two


def test_unknown_attempt_is_not_found() -> None:
    with pytest.raises(NotFound) as info:
        record("t7", "nope")
    assert info.value.code == "attempt_not_found"


def test_blank_record_is_all_unknown_never_pass() -> None:
    for name in ("trace-review", "application-record"):
        rec = blank_record(load_template(name), version=V)
        assert {(f.value, f.source, f.evidence) for f in rec.fields} == {("UNKNOWN", "unknown", ())}
        assert len(rec.unknown) == len(rec.fields)
