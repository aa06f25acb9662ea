"""A Responses stream resumed on a second connection (``starting_after``) is one answer:
``ingest SECOND --resume-of FIRST`` records both connections as one attempt, judged whole.

The halves are cut from a real capture at event boundaries; a resumed connection replays
from ``starting_after + 1``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.errors import InputError, NotFound
from tracestore.events import TaskRule
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.projections import reasons as R
from tracestore.projections.attempt import project_attempt
from tracestore.projections.release import decide_with_view
from tracestore.store.log import EventStore

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT / "fixtures" / "real" / "openai-responses" / "background-queued.sse"
ACCEPT_ANY = TaskRule(answer_patterns=("",))


def events_of(data: bytes) -> list[bytes]:
    """The capture's SSE events, each with its blank line (their bytes joined are it)."""
    parts = data.split(b"\n\n")
    assert parts[-1].strip() == b""
    return [p + b"\n\n" for p in parts[:-1]]


EVENTS = events_of(CAPTURE.read_bytes())
SEQUENCES = [json.loads(e.split(b"data: ", 1)[1])["sequence_number"] for e in EVENTS]


def cut(last: int) -> bytes:
    """The first connection: every event up to sequence ``last``."""
    return b"".join(e for e, s in zip(EVENTS, SEQUENCES) if s <= last)


def resumed(starting_after: int) -> bytes:
    """A second connection opened with ``starting_after``: every event after it."""
    return b"".join(e for e, s in zip(EVENTS, SEQUENCES) if s > starting_after)


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = EventStore(f"sqlite:///{tmp_path / 's.db'}")
    yield s
    s.close()


def decided(store: EventStore, trace: str, attempt: str) -> tuple[Any, Any]:
    events = store.read(trace_id=trace)
    decision, _ = decide_with_view(events, attempt)
    return decision, project_attempt(events, attempt)


def test_the_halves_are_the_capture() -> None:
    assert list(range(17)) == SEQUENCES
    assert cut(8) + resumed(8) == CAPTURE.read_bytes()


def test_an_exact_resume_is_the_uncut_answer(store: EventStore) -> None:
    ingest_input(store, CAPTURE.read_bytes(), IngestOptions(
        filename="whole.sse", attempt_id="whole", trace_id="t-whole", task=ACCEPT_ANY))
    whole, whole_view = decided(store, "t-whole", "whole")
    first = ingest_input(store, cut(8), IngestOptions(
        filename="first.sse", attempt_id="a1", trace_id="t", task=ACCEPT_ANY))
    cut_off, _ = decided(store, "t", "a1")
    assert cut_off.status != R.RELEASED  # the first connection alone is cut off
    done = ingest_input(store, resumed(8), IngestOptions(filename="second.sse",
                                                         resume_of="a1"))
    assert (done.attempt_id, done.trace_id, first.trace_id) == ("a1-resumed", "t", "t")
    assert done.warnings == ()
    decision, view = decided(store, "t", "a1-resumed")
    assert whole.status == decision.status == R.RELEASED
    assert decision.reasons == whole.reasons
    assert view.text == whole_view.text == "2 + 2 equals 4."
    assert view.frames == whole_view.frames == 17
    frames = [e.event for e in store.read(trace_id="t") if e.type == "frame.received"
              and e.event.attempt_id == "a1-resumed"]
    assert [f.index for f in frames] == list(range(17))  # the first's numbering, continued
    assert len({f.capture_sha256 for f in frames}) == 2  # each points into its own capture
    again = ingest_input(store, resumed(8), IngestOptions(filename="second.sse",
                                                          resume_of="a1"))
    assert again.written.appended == 0


def test_a_gap_holds_the_answer_with_its_reason(store: EventStore) -> None:
    ingest_input(store, cut(8), IngestOptions(filename="first.sse", attempt_id="a1",
                                              trace_id="t", task=ACCEPT_ANY))
    ingest_input(store, resumed(10), IngestOptions(filename="second.sse", resume_of="a1"))
    decision, view = decided(store, "t", "a1-resumed")
    assert decision.status == R.HELD and R.RESUME_SEQUENCE_GAP in decision.reasons
    gap = [a for a in view.anomalies if a.code == R.RESUME_SEQUENCE_GAP]
    assert [a.detail for a in gap] == ["11 after 8"]


def test_an_overlap_replayed_unchanged_is_not_counted_twice(store: EventStore) -> None:
    ingest_input(store, cut(8), IngestOptions(filename="first.sse", attempt_id="a1",
                                              trace_id="t", task=ACCEPT_ANY))
    done = ingest_input(store, resumed(5), IngestOptions(filename="second.sse",
                                                         resume_of="a1"))
    assert done.frames == 8 and len(done.warnings) == 1
    assert "3 event(s)" in done.warnings[0] and "6..8" in done.warnings[0]
    decision, view = decided(store, "t", "a1-resumed")
    assert decision.status == R.RELEASED
    assert view.text == "2 + 2 equals 4." and view.frames == 17


def test_an_overlap_with_other_content_holds_the_answer(store: EventStore) -> None:
    ingest_input(store, cut(8), IngestOptions(filename="first.sse", attempt_id="a1",
                                              trace_id="t", task=ACCEPT_ANY))
    second = resumed(7).replace(b'"delta":"2"', b'"delta":"3"', 1)
    ingest_input(store, second, IngestOptions(filename="second.sse", resume_of="a1"))
    decision, _ = decided(store, "t", "a1-resumed")
    assert decision.status == R.HELD and R.RESUME_SEQUENCE_OVERLAP in decision.reasons


def test_what_cannot_be_resumed_is_refused(store: EventStore, tmp_path: Path) -> None:
    with pytest.raises(NotFound) as missing:
        ingest_input(store, resumed(8), IngestOptions(resume_of="nope"))
    assert missing.value.code == "attempt_not_found"
    chat = (ROOT / "fixtures" / "real" / "openai-chat").glob("*.sse")
    ingest_input(store, next(iter(sorted(chat))).read_bytes(),
                 IngestOptions(filename="c.sse", attempt_id="c1"))
    with pytest.raises(InputError) as refused:
        ingest_input(store, resumed(8), IngestOptions(resume_of="c1"))
    assert refused.value.code == "resume_not_possible"
    ingest_input(store, cut(8), IngestOptions(filename="first.sse", attempt_id="a1",
                                              trace_id="t"))
    with pytest.raises(InputError) as bad:
        ingest_input(store, resumed(8), IngestOptions(resume_of="a1", task=ACCEPT_ANY))
    assert bad.value.code == "invalid_option"


def test_the_cli_resumes(tmp_path: Path) -> None:
    from clihelp import run

    db = tmp_path / "c.db"
    first, second = tmp_path / "first.sse", tmp_path / "second.sse"
    first.write_bytes(cut(8))
    second.write_bytes(resumed(8))
    code, out, err = run("ingest", str(first), "--attempt", "a1", "--json", db=db)
    assert code == 0, err
    code, out, err = run("ingest", str(second), "--resume-of", "a1", "--json", db=db)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["attempt_id"] == "a1-resumed" and summary["frames"] == 8
