"""Cohere v2 chat streams: the normalizer, detection and the text profile, on the four
vercel/ai Cohere fixtures of the wild corpus (fixtures/wild/PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracestore.events import TaskRule
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.projections import reasons as R
from tracestore.projections.release import decide_with_view
from tracestore.providers.capture import read_capture
from tracestore.providers.cohere import CohereNormalizer
from tracestore.store.log import EventStore

COHERE = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "vercel-chunks" / "cohere"
ACCEPT_ANY = TaskRule(answer_patterns=("",))


def body(name: str) -> bytes:
    return (COHERE / f"vercel__cohere-{name}.chunks.txt").read_bytes()


def decided(tmp_path: Path, name: str) -> tuple[object, object]:
    store = EventStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        done = ingest_input(store, body(name), IngestOptions(
            filename=f"{name}.chunks.txt", attempt_id="a", task=ACCEPT_ANY))
        assert done.api == "cohere-v2"
        return decide_with_view(store.read(trace_id="a"), "a")
    finally:
        store.close()


def test_the_text_stream_is_released_with_the_text_its_deltas_carry(tmp_path: Path) -> None:
    decision, view = decided(tmp_path, "text")
    assert decision.status == R.RELEASED
    assert view.text == "The capital of France is Paris."
    assert view.usage == {"billed_units": {"input_tokens": 12, "output_tokens": 7},
                          "tokens": {"input_tokens": 507, "output_tokens": 10},
                          "cached_tokens": 448}
    assert [t.stop_reason for t in view.terminals] == ["COMPLETE"]


@pytest.mark.parametrize("name", ["reasoning", "tool-call", "empty-tool-call"])
def test_thinking_tool_plans_and_tool_calls_are_held(tmp_path: Path, name: str) -> None:
    decision, _ = decided(tmp_path, name)
    assert decision.status == R.HELD and decision.reasons[0] == R.NON_TEXT_CONTENT


def test_observations() -> None:
    reading = read_capture(body("reasoning"), filename="r.chunks.txt")
    assert reading.provider == "cohere-v2" and reading.terminal_seen
    kinds = [o.kind for o in reading.observations]
    assert kinds[:3] == ["message_start", "block_start", "reasoning_delta"]
    assert kinds[-2:] == ["usage", "terminal"] and "text_delta" in kinds
    starts = [o.block_type for o in reading.observations if o.kind == "block_start"]
    assert starts == ["reasoning", "text"]


def test_tool_calls_are_named_and_their_arguments_joined() -> None:
    reading = read_capture(body("tool-call"), filename="t.chunks.txt")
    done = [o for o in reading.observations if o.kind == "tool_call_done"]
    assert [(o.tool_call_id, o.tool_name) for o in done] == [
        ("weather_e8p4pn45zt0t", "weather"), ("cityAttractions_pyxssbwnq9fq", "cityAttractions")]
    deltas = [o.arguments or "" for o in reading.observations
              if o.kind == "tool_call_delta" and o.block == 0]
    assert done[0].arguments == "".join(deltas) and done[0].arguments


def test_unknown_and_odd_events_are_unknown_never_raised() -> None:
    n = CohereNormalizer()
    assert [o.kind for o in n.feed({"type": "debug"})] == ["unknown"]
    assert [o.kind for o in n.feed([1])] == ["unknown"]
    assert [o.kind for o in n.feed({"type": "content-delta", "index": 0,
                                    "delta": {"message": {"content": {}}}})] == ["unknown"]
    end = n.feed({"type": "message-end", "delta": {"finish_reason": "MAX_TOKENS"}})
    assert [(o.kind, o.stop_reason) for o in end] == [("terminal", "MAX_TOKENS")]
