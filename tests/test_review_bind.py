"""Issue 21: an approval binds to the content it approved (digest), goes stale when the
record changes, and is refused while a CONFLICT stands or when the record changed since
the approver read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tracestore.errors import ReviewError
from tracestore.events import DestinationWritten, NewEvent, TaskRevised, TaskRule, attempt_stream, trace_stream
from tracestore.review.render import render_json, render_markdown
from tracestore.store.log import EventStore
from tests.test_review_amend import act, rec, replay_into


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with EventStore(f"sqlite:///{tmp_path / 'bind.db'}") as opened:
        replay_into(opened, "t7")
        yield opened


def test_an_approval_records_the_digest_and_reads_approved(store: EventStore) -> None:
    before = rec(store, "t7")
    assert before.review_state == "unreviewed" and len(before.digest or "") == 64
    act(store, "t7", approve=True, reviewer="bob")
    after = rec(store, "t7")
    assert after.digest == before.digest  # approving does not change what was approved
    assert after.review_state == "approved"
    assert [(a.reviewer, a.digest, a.stale) for a in after.approvals] == [
        ("bob", before.digest, False)]
    doc = after.to_dict()
    assert doc["review_state"] == "approved" and doc["approvals"][0]["stale"] is False


def test_a_later_amendment_makes_the_approval_stale_everywhere(store: EventStore) -> None:
    (approved,) = act(store, "t7", approve=True, reviewer="bob")
    act(store, "t7", sets=[("evidence_gap", "client abort propagation untested")],
        reviewer="alice")
    record = rec(store, "t7")
    assert record.review_state == "stale"
    assert [a.stale for a in record.approvals] == [True]
    assert f"bob at {record.approvals[0].at} (#{approved}; STALE: the record changed after " \
           "it was approved)" in render_markdown(record)
    assert "Review state: stale" in render_markdown(record)
    assert '"review_state": "stale"' in render_json(record)
    # A stale record needs a new approval; bob (who only approved) may give it.
    act(store, "t7", approve=True, reviewer="bob")
    assert rec(store, "t7").review_state == "approved"


def test_new_evidence_for_a_derived_field_makes_the_approval_stale(store: EventStore) -> None:
    act(store, "t7", approve=True, reviewer="bob")
    store.append([NewEvent(attempt_stream("t7"), DestinationWritten(
        attempt_id="t7", destination="ui", text="leaked", sha256="0" * 64,
        source="application"), trace_id="t7")])
    assert rec(store, "t7").review_state in ("stale", "conflict")
    assert rec(store, "t7").approvals[0].stale is True


def test_a_task_rule_revision_makes_the_approval_stale(store: EventStore) -> None:
    act(store, "t7", approve=True, reviewer="bob")
    store.append([NewEvent(trace_stream("t7"), TaskRevised(
        trace_id="t7", version=2, task=TaskRule(answer_patterns=("Wednesday",)), by="carol"),
        trace_id="t7")])
    record = rec(store, "t7")
    assert record.review_state == "stale"
    semantic = next(f for f in record.fields if f.name == "semantic_rule")
    assert "rule revised to v2 at #" in semantic.value


def test_approval_is_refused_while_a_conflict_stands_unless_overridden(
        store: EventStore) -> None:
    act(store, "t7", sets=[("release_decision", "released")], reviewer="alice")
    assert rec(store, "t7").review_state == "conflict"
    head = store.head_position()
    with pytest.raises(ReviewError) as refused:
        act(store, "t7", approve=True, reviewer="bob")
    assert refused.value.code == "conflict_unresolved" and refused.value.exit_code == 5
    assert store.head_position() == head
    from tracestore.cli.review_cmds import amend, trace_of
    from tests.test_review_amend import TEMPLATE

    amend(store, TEMPLATE, "t7", trace_of(store, "t7"), sets=[], approve=True,
          reviewer="bob", evidence=[], override_reason="alice's value is under discussion")
    record = rec(store, "t7")
    assert record.approvals[0].override_reason == "alice's value is under discussion"
    assert record.review_state == "approved" and [f.name for f in record.conflicts] == [
        "release_decision"]


def test_approval_of_a_record_changed_since_it_was_read_is_refused(store: EventStore) -> None:
    from tracestore.cli.review_cmds import amend, trace_of
    from tests.test_review_amend import TEMPLATE

    seen = rec(store, "t7").digest
    act(store, "t7", sets=[("evidence_gap", "more")], reviewer="alice")
    head = store.head_position()
    with pytest.raises(ReviewError) as refused:
        amend(store, TEMPLATE, "t7", trace_of(store, "t7"), sets=[], approve=True,
              reviewer="bob", evidence=[], expect_digest=seen)
    assert refused.value.code == "record_changed"
    assert store.head_position() == head
    now = rec(store, "t7").digest
    amend(store, TEMPLATE, "t7", trace_of(store, "t7"), sets=[], approve=True,
          reviewer="bob", evidence=[], expect_digest=now)
    assert rec(store, "t7").approvals[0].digest == now


def test_report_timeline_names_the_record_an_approval_covers(store: EventStore) -> None:
    """The default report template (trace-review) no longer reads "approved by bob" in its
    timeline while its record says "UNASSIGNED; not approved": the row names the
    application-record it approved, and the record shows its own state."""
    from tracestore.cli.review_cmds import amend, trace_of
    from tracestore.report.model import build_report
    from tracestore.review import load_template

    amend(store, load_template("application-record"), "t7", trace_of(store, "t7"), sets=[],
          approve=True, reviewer="bob", evidence=[])
    report = build_report(store.read(trace_id="t7"), "t7", template=load_template(),
                          version="test")
    labels = [row.label for row in report.rows if row.kind == "review"]
    assert labels == ["application-record record approved by bob"]
    (lane,) = report.lanes
    assert lane.record is not None and lane.record.review_state == "unreviewed"


def test_evidence_command_attaches_a_receipt_that_a_pass_value_can_cite(
        tmp_path: Path) -> None:
    """Seed 003: remote_cancellation=PASS citing the local Stop is refused (exit 5, naming
    the kind needed); an attached cancellation receipt can be cited; verify re-hashes it."""
    import json

    from tests.clihelp import run

    db = tmp_path / "e.db"
    with EventStore(f"sqlite:///{db}") as opened:
        replay_into(opened, "t7")
    head = 12
    code, _, err = run("review", "t7", "--set", "remote_cancellation=PASS", "--evidence", "6",
                       "--reviewer", "alice", db=db)
    assert code == 5 and "evidence_kind_mismatch" in err and "cancellation_receipt" in err
    receipt = tmp_path / "receipt.txt"
    receipt.write_bytes(b"provider cancellation req_123 at 12:00:01Z")
    code, out, _ = run("evidence", "t7", "--kind", "cancellation_receipt", "--file",
                       str(receipt), "--json", db=db)
    doc = json.loads(out)
    assert code == 0 and doc["position"] == head + 1 and doc["already_attached"] is False
    code, out, _ = run("evidence", "t7", "--kind", "cancellation_receipt", "--file",
                       str(receipt), "--json", db=db)
    assert json.loads(out)["already_attached"] is True  # content-addressed: no duplicate
    code, out, _ = run("review", "t7", "--set", "remote_cancellation=PASS", "--evidence",
                       str(head + 1), "--reviewer", "alice", "--json", db=db)
    field = next(f for f in json.loads(out)["fields"] if f["name"] == "remote_cancellation")
    assert code == 0 and field["value"] == "PASS" and head + 1 in field["evidence"]
    code, out, _ = run("verify", "--json", db=db)
    assert code == 0 and json.loads(out)["captures_checked"] == 1
    code, _, err = run("evidence", "t7", "--kind", "Bad Kind", "--file", str(receipt), db=db)
    assert code == 2 and "invalid_evidence_kind" in err


def test_expect_digest_through_the_cli(tmp_path: Path) -> None:
    import json

    from tests.clihelp import count_events, run

    db = tmp_path / "d.db"
    with EventStore(f"sqlite:///{db}") as opened:
        replay_into(opened, "t7")
    code, out, _ = run("review", "t7", "--json", db=db)
    seen = json.loads(out)["digest"]
    run("review", "t7", "--set", "evidence_gap=more", "--reviewer", "alice", db=db)
    before = count_events(db)
    code, _, err = run("review", "t7", "--approve", "--reviewer", "bob", "--expect-digest",
                       seen, "--json", db=db)
    assert code == 5 and json.loads(err)["error"] == "record_changed"
    assert count_events(db) == before
    code, out, _ = run("review", "t7", "--json", db=db)
    now = json.loads(out)["digest"]
    code, out, _ = run("review", "t7", "--approve", "--reviewer", "bob", "--expect-digest", now,
                       "--json", db=db)
    assert code == 0 and json.loads(out)["approvals"][0]["digest"] == now


def test_every_derived_field_names_the_kinds_that_support_a_pass(store: EventStore) -> None:
    """native_observation=verified citing the trace's opening (#1) is refused; citing the
    native terminal frame (#10) is accepted."""
    from tests.test_review_amend import TEMPLATE
    from tracestore.review.templates import load_all

    for template in load_all():
        for f in template.fields:
            if f.evidence and f.evidence not in ("evidence_gap", "independent_reviewer",
                                                 "actual_destinations"):
                assert f.pass_evidence, (template.name, f.name)
    head = store.head_position()
    with pytest.raises(ReviewError) as refused:
        act(store, "t7", sets=[("native_observation", "verified end_turn")], evidence=[1])
    assert refused.value.code == "evidence_kind_mismatch"
    assert "#1, a trace.opened, which cannot prove it" in refused.value.message
    assert store.head_position() == head
    act(store, "t7", sets=[("native_observation", "verified end_turn")], evidence=[10])
    assert TEMPLATE.field("native_observation").accepts("frame.received", None)


def test_an_attached_receipt_fills_remote_cancellation(tmp_path: Path) -> None:
    """An attached cancellation receipt is derived into remote_cancellation (citing it) and
    taken off the evidence gap; another kind of evidence is not."""
    import hashlib
    import json

    from tests.clihelp import run

    db = tmp_path / "r.db"
    with EventStore(f"sqlite:///{db}") as opened:
        replay_into(opened, "t7")
    shot = tmp_path / "shot.png"
    shot.write_bytes(b"not a receipt")
    run("evidence", "t7", "--kind", "screenshot", "--file", str(shot), db=db)
    receipt = tmp_path / "receipt.txt"
    receipt.write_bytes(b"provider cancellation req_123 at 12:00:01Z")
    code, out, _ = run("evidence", "t7", "--kind", "cancellation_receipt", "--file",
                       str(receipt), "--note", "req_123", "--json", db=db)
    at = json.loads(out)["position"]
    code, out, _ = run("review", "t7", "--json", db=db)
    fields = {f["name"]: f for f in json.loads(out)["fields"]}
    sha = hashlib.sha256(receipt.read_bytes()).hexdigest()
    assert code == 0
    assert (fields["remote_cancellation"]["value"], fields["remote_cancellation"]["source"],
            fields["remote_cancellation"]["evidence"]) == (
        f"Receipt attached: cancellation_receipt receipt.txt (42 bytes, sha256 {sha[:16]}) "
        f"at #{at}: req_123", "derived", [at])
    assert "provider receipt" not in fields["evidence_gap"]["value"]
    assert "remote_cancellation" not in json.loads(out)["unknown"]
