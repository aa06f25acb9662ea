"""Issue 18 item 4: a destination write is judged as the write of the attempt whose text it
holds, whichever handle recorded it; a stopped attempt's partial text may be shown on the UI
marked as cut off, and the audit accepts exactly that."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracestore import Recorder
from tracestore.errors import InputError
from tracestore.projections.destinations import audit
from tracestore.projections.release import decide_release

from conftest import FIXTURES

REAL = FIXTURES / "real"
TASK = {"answer_patterns": ["paris"]}


@pytest.fixture
def rec(tmp_path: Path) -> Recorder:
    with Recorder(f"sqlite:///{tmp_path / 'rec.db'}") as opened:
        yield opened


def t8(rec: Recorder):
    """Old attempt: an Anthropic answer stopped after its first text delta, its late rest
    arriving after the retry started; new attempt: a real Responses answer, released."""
    old_bytes = (REAL / "anthropic/stop-sequence.sse").read_bytes()
    cut = old_bytes.index(b"event: content_block_delta", old_bytes.index(b"text_delta") + 1)
    new_bytes = (REAL / "openai-responses/text-gpt-4o.sse").read_bytes()
    trace = rec.trace("t", task=TASK)
    old = trace.attempt("old", api="anthropic-messages")
    old.feed(old_bytes[:cut])
    old.stop()
    new = trace.attempt("new", api="openai-responses", retry_of="old")
    old.feed(old_bytes[cut:])  # the old reader's late text, after the retry started
    old.drain()
    new.feed(new_bytes)
    new.drain()
    events = rec.store.read(trace_id="t")
    old_d, new_d = decide_release(events, "old"), decide_release(events, "new")
    assert (old_d.status, new_d.status) == ("stopped", "released")
    return old, new, new_d.answer


def partial_before_stop(rec: Recorder) -> str:
    from tracestore.projections.attempt import project_attempt as attempt_view

    return attempt_view(rec.store.read(trace_id="t"), "old").blocks[0].deltas[0]


def violations(rec: Recorder) -> list[tuple[str, str, str]]:
    return [(v.code, v.attempt_id, v.destination)
            for v in audit(rec.store.read(trace_id="t"), trace_id="t").violations]


def test_the_new_answer_recorded_on_the_old_handle_is_judged_as_the_new_attempts_write(
        rec: Recorder) -> None:
    old, new, answer = t8(rec)
    old.destination("history", answer)  # "the current attempt" routing: the old handle
    assert violations(rec) == [
        ("misattributed_destination_write", "new", "history")]


def test_the_old_partial_recorded_on_the_new_handle_is_blamed_on_the_old_attempt(
        rec: Recorder) -> None:
    old, new, answer = t8(rec)
    from tracestore.projections.attempt import project_attempt as attempt_view

    old_text = attempt_view(rec.store.read(trace_id="t"), "old").text
    new.destination("history", answer)
    new.destination("ui", old_text)
    assert violations(rec) == [
        ("misattributed_destination_write", "old", "ui"),
        ("ineligible_text_in_destination", "old", "ui")]


def test_a_partial_shown_as_cut_off_after_the_stop_is_accepted(rec: Recorder) -> None:
    old, new, answer = t8(rec)
    partial = partial_before_stop(rec)
    assert partial and partial not in answer
    old.destination("ui", partial, cut_off=True)
    new.destination("ui", answer)
    new.destination("history", answer)
    assert violations(rec) == []


def test_without_the_mark_the_same_partial_is_ineligible_text(rec: Recorder) -> None:
    old, new, answer = t8(rec)
    old.destination("ui", partial_before_stop(rec))
    new.destination("history", answer)
    assert violations(rec) == [("ineligible_text_in_destination", "old", "ui")]


def test_cut_off_text_must_be_what_was_delivered_before_the_stop(rec: Recorder) -> None:
    from tracestore.projections.attempt import project_attempt as attempt_view

    old, new, answer = t8(rec)
    whole_old = attempt_view(rec.store.read(trace_id="t"), "old").text  # includes the late text
    old.destination("ui", whole_old, cut_off=True)
    old.destination("ui", "Paris, probably.", cut_off=True)
    new.destination("history", answer)
    assert violations(rec) == [("cut_off_write_not_allowed", "old", "ui"),
                               ("cut_off_write_not_allowed", "old", "ui")]


def test_cut_off_on_a_released_attempt_is_not_allowed(rec: Recorder) -> None:
    old, new, answer = t8(rec)
    new.destination("ui", answer[:10], cut_off=True)
    new.destination("history", answer)
    assert violations(rec) == [("cut_off_write_not_allowed", "new", "ui")]


@pytest.mark.parametrize("destination", ["history", "export", "copy"])
def test_only_the_ui_can_be_written_as_cut_off(rec: Recorder, destination: str) -> None:
    old, new, answer = t8(rec)
    before = len(rec.store.read(trace_id="t"))
    with pytest.raises(InputError) as refused:
        old.destination(destination, partial_before_stop(rec), cut_off=True)
    assert refused.value.code == "cut_off_not_ui"
    assert len(rec.store.read(trace_id="t")) == before
