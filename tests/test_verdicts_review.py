"""Issue 11, items 8 and 11: review values the seed gives, and conflicts on every field.

The T7 golden test reads seed 003's own filled record (``fixtures/seed003/t7-record.md``,
copied verbatim) and checks tracestore's record against those words, field by field.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tracestore.errors import ReviewError
from tracestore.events import StoredEvent
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.review import ReviewRecord, fill_record, load_template, plan_review
from tracestore.review.context import CONFLICT_CHECKS, build_context
from tracestore.review.derivers import get_conflict_check
from tracestore.review.receipts import plan_receipt
from tracestore.review.templates import template_names

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"


def seed_t7_record() -> dict[str, str]:
    text = (SEED / "t7-record.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|$", text, re.MULTILINE)
    return {label: value for label, value in rows if label not in ("Field", "---")}


def events_of(name: str) -> list[StoredEvent]:
    scenario = json.loads((SEED / f"{name}.json").read_text(encoding="utf-8"))
    return preview_replay(parse_scenario(scenario))[1]


def record(name: str, attempt: str, template: str = "trace-review") -> ReviewRecord:
    return fill_record(load_template(template), events_of(name), attempt, version="test")


#: Per seed field, the seed's own words that tracestore's value must also say (checked to
#: be in the seed's text, so this table cannot drift from the seed).
SEED_WORDS = {
    "Comparison revision": ["Text-stream comparison 2026-10-09"],
    "Reader/parser revision": ["NOT PROVIDED; no integration executed"],
    "Attempt correlation": ["t7", "response ID"],
    "Native observation": ["end_turn", "after local Stop", "clean drain"],
    "Candidate": ["Complete", "still private"],
    "Local ordering": ["Stop recorded before", "acceptance"],
    "Semantic rule": ["exact-string equality"],
    "Release decision": ["Ineligible", "Stop"],
    "Accepted destinations": ["Expected absent", "actual UI/history/export/copy NOT EXECUTED"],
    "Authority": ["No tool configured, proposed or authorized"],
    "Remote cancellation": ["UNKNOWN"],
    "Evidence gap": ["abort propagation", "destination"],
    "Independent reviewer": ["UNASSIGNED; not approved"],
}


def test_t7_record_says_what_the_seeds_filled_record_says() -> None:
    seed = seed_t7_record()
    ours = {f.label: f.value for f in record("t7", "t7").fields}
    assert set(seed) == set(ours) == set(SEED_WORDS)
    for label, words in SEED_WORDS.items():
        for phrase in words:
            assert phrase in seed[label], (label, phrase)
            assert phrase.lower() in ours[label].lower(), (label, phrase, ours[label])
        # A seed value that opens with a marker (NOT PROVIDED, UNKNOWN, UNASSIGNED) is a
        # verdict: ours opens with the same clause.
        head = seed[label].split(";")[0]
        if head.isupper():
            assert ours[label].split(";")[0] == head, (label, ours[label])
    assert ours["Independent reviewer"] == seed["Independent reviewer"]


def test_an_approval_replaces_unassigned() -> None:
    events = events_of("t7")
    template = load_template("trace-review")
    planned = plan_review(template, events, "t7", approve=True, reviewer="bob")
    last = events[-1]
    stored = [StoredEvent(last.position + 1 + i, n.id, n.stream, 1, n.event.type, 1,
                          last.recorded_at, n.trace_id, n.event, "")
              for i, n in enumerate(planned)]
    rec = fill_record(template, events + stored, "t7", version="test")
    value = next(f.value for f in rec.fields if f.name == "independent_reviewer")
    assert value.startswith("Approved by bob at ") and "UNASSIGNED" not in value


def test_a_recorded_reader_revision_is_shown_instead_of_not_provided() -> None:
    scenario = json.loads((SEED / "t7.json").read_text(encoding="utf-8"))
    scenario["steps"][0]["request"] = {"reader_revision": "app-reader 2.4.1"}
    events = preview_replay(parse_scenario(scenario))[1]
    rec = fill_record(load_template("trace-review"), events, "t7", version="test")
    value = next(f.value for f in rec.fields if f.name == "reader_revision")
    assert value.startswith("application reader revision app-reader 2.4.1 (recorded at start); "
                            "tracestore test ")


# -- item 11: conflicts on every derived field ---------------------------------------------

def test_every_derived_field_has_a_conflict_check() -> None:
    for name in template_names():
        for field in load_template(name).fields:
            if field.evidence and field.evidence != "independent_reviewer":
                assert get_conflict_check(field.evidence) is not None, (name, field.name)


def conflicts(name: str, attempt: str, field: str, value: str,
              template: str = "trace-review") -> bool:
    tpl = load_template(template)
    ctx = build_context(events_of(name), attempt, template=tpl.name, version="test")
    check = CONFLICT_CHECKS[tpl.field(field).evidence or ""]
    return check(value, ctx)


@pytest.mark.parametrize("scenario, attempt, field, value, expected", [
    # the issue's example, and its truthful counterpart
    ("t7", "t7", "accepted_destinations", "delivered to UI, history, export and copy", True),
    ("t7", "t7", "accepted_destinations",
     "Expected absent; actual UI/history/export/copy NOT EXECUTED", False),
    ("t1", "t1", "accepted_destinations", "not delivered anywhere; absent", True),
    ("t1", "t1", "accepted_destinations", "delivered to ui and history once", False),
    ("t7", "t7", "candidate", "Complete answer, released to the user", True),
    ("t7", "t7", "candidate", "Complete supplied answer after late deltas; still private", False),
    ("t2", "t2", "candidate", "Complete answer; still private", True),
    ("t7", "t7", "native_observation", "max_tokens after local Stop; clean drain", True),
    ("t7", "t7", "native_observation", "end_turn after local Stop; eof drain", True),
    ("t7", "t7", "native_observation", "end_turn after local Stop; clean drain supplied", False),
    ("t7", "t7", "local_ordering", "Stop recorded after the normal terminal", True),
    ("t7", "t7", "local_ordering", "Stop recorded before normal terminal and acceptance", False),
    ("t1", "t1", "local_ordering", "Stop recorded before the terminal", True),
    ("t5", "t5", "semantic_rule", "Accepted: opening hours preserved", True),
    ("t1", "t1", "semantic_rule", "rejected: hours missing", True),
    ("t1", "t1", "semantic_rule", "accepted; not exact-string equality", False),
    ("t7", "t7", "release_decision", "released after the late end_turn", True),
    ("t7", "t7", "authority", "lookup tool authorized and dispatched", True),
    ("t7", "t7", "authority", "No tool configured, proposed or authorized", False),
    ("t6", "t6", "authority", "no tool use observed", True),
    ("t7", "t7", "attempt_correlation", "Local t8-old", False),  # not an attempt of t7's log
    ("t8", "t8-new", "attempt_correlation", "Local attempt t8-old", False),  # its retry link
    ("t7", "t7", "reader_revision", "NOT PROVIDED; policy seed003-v2", True),
    ("t7", "t7", "comparison_revision", "source anthropic-messages claude", True),
    ("t7", "t7", "comparison_revision", "Text-stream comparison 2026-10-09; exact pair", False),
    ("t7", "t7", "evidence_gap", "none", True),
    ("t7", "t7", "evidence_gap", "Actual client abort propagation untested", False),
])
def test_reviewer_values_that_contradict_the_events(scenario: str, attempt: str, field: str,
                                                    value: str, expected: bool) -> None:
    assert conflicts(scenario, attempt, field, value) is expected


@pytest.mark.parametrize("field, value, expected", [
    ("trace_origin", "framed capture from production", True),
    ("trace_origin", "synthetic projection", False),
    ("transport_accounting", "clean drain; zero tokens used", False),  # usage was recorded
    ("transport_accounting", "clean drain; no usage", True),
    ("transport_accounting", "eof drain", True),
    ("target_settings", "api openai-responses; profile openai-responses-text", True),
    ("output_profile", "bedrock-converse-text: tools allowed", True),
    ("expected_destinations", "history and copy receive the answer", True),
    ("actual_destinations", "written to history", True),
])
def test_application_record_conflicts(field: str, value: str, expected: bool) -> None:
    assert conflicts("t7", "t7", field, value, "application-record") is expected


def test_the_issue_example_is_flagged_in_the_record() -> None:
    events = events_of("t7")
    template = load_template("trace-review")
    planned = plan_review(template, events, "t7", reviewer="alice", sets=[
        ("accepted_destinations", "delivered to UI, history, export and copy")])
    last = events[-1]
    stored = [StoredEvent(last.position + 1, planned[0].id, planned[0].stream, 1,
                          planned[0].event.type, 1, last.recorded_at, "t7", planned[0].event,
                          "")]
    rec = fill_record(template, events + stored, "t7", version="test")
    assert [f.name for f in rec.conflicts] == ["accepted_destinations"]


@pytest.mark.parametrize("value", ["PASS", "cancelled by the provider", "verified"])
def test_pass_on_an_unknown_field_needs_cited_evidence(value: str) -> None:
    events = events_of("t7")
    template = load_template("trace-review")
    with pytest.raises(ReviewError) as refused:
        plan_review(template, events, "t7", reviewer="alice",
                    sets=[("remote_cancellation", value)])
    assert refused.value.code == "evidence_required"
    # Issue 21: #6 is the local Stop, which seed 003 says is not a provider receipt.
    with pytest.raises(ReviewError) as refused:
        plan_review(template, events, "t7", reviewer="alice", evidence=[6],
                    sets=[("remote_cancellation", value)])
    assert refused.value.code == "evidence_kind_mismatch" and refused.value.exit_code == 5
    assert "#6, a local.stopped, which cannot prove it: it needs an attached " \
           "cancellation_receipt or an attached provider_receipt" in refused.value.message
    receipt = plan_receipt(events, "t7", kind="cancellation_receipt", data=b"req_123 cancelled")
    last = events[-1]
    attached = StoredEvent(last.position + 1, receipt.id, receipt.stream, 1,
                           "evidence.attached", 1, last.recorded_at, "t7", receipt.event, "")
    planned = plan_review(template, [*events, attached], "t7", reviewer="alice",
                          evidence=[attached.position], sets=[("remote_cancellation", value)])
    assert planned[0].event.evidence == (attached.position,)


@pytest.mark.parametrize("value", ["UNKNOWN", "not verified: no provider receipt",
                                   "UNKNOWN; local action is not a provider receipt"])
def test_non_pass_values_on_unknown_fields_need_no_evidence(value: str) -> None:
    planned = plan_review(load_template("trace-review"), events_of("t7"), "t7",
                          reviewer="alice", sets=[("remote_cancellation", value)])
    assert planned[0].event.value == value
