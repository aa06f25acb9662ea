"""Seed 004's FAQ endpoint captures, its client-side event contract and grapheme clusters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracestore.projections.envelope import SORRY, project_envelope
from tracestore.contracts.events_check import check_events
from tracestore.contracts.graphemes import broken_boundaries, chunk_clusters, clusters
from tracestore.contracts.model import parse_contract_bytes
from tracestore.ingest import Bindings, plan_ingest
from tracestore.projections.release import decide_with_view
from tracestore.providers.capture import read_capture
from test_contracts_seed000 import stored

ROOT = Path(__file__).resolve().parents[1]
SEED004 = ROOT / "fixtures" / "seed004"
CONTRACT = parse_contract_bytes((ROOT / "fixtures/contracts/seed004-faq.json").read_bytes())
BINDING = json.loads((SEED004 / "faq.binding.json").read_text(encoding="utf-8"))


def judge(name: str, *, contract: Any = CONTRACT, data: bytes | None = None) -> Any:
    data = data if data is not None else (SEED004 / f"{name}.sse").read_bytes()
    plan = plan_ingest(data, filename=f"{name}.sse", attempt_id="a",
                       bindings=Bindings(contract, BINDING))
    assert plan.api == "faq-endpoint"  # auto-detected by its event names and shapes
    events = stored(plan.events)
    decision, view = decide_with_view(events, "a")
    return decision, view, project_envelope(decision, view)


def kinds_and_texts(name: str) -> list[tuple[str | None, Any]]:
    reading = read_capture((SEED004 / f"{name}.sse").read_bytes())
    return [(f.event_name, f.native.get("text") if f.event_name == "chunk" else None)
            for f in reading.frames]


# seed 004's mini-lab table: status, chunks, last event, state/code, check_events
ENDPOINT_CASES = [
    ("good-v2", 3, "done", "ok", "ok"),
    ("bangla-answer", 3, "done", "ok", "ok"),
    ("id-not-retrieved", 0, "error", "error", "untrusted_value"),
    ("dropped-stream", 0, "error", "error", "interrupted"),
    ("error-mid-stream", 0, "error", "error", "stream_error"),
]


@pytest.mark.parametrize(("name", "chunks", "last", "state", "code"), ENDPOINT_CASES)
def test_the_five_endpoint_cases(name: str, chunks: int, last: str, state: str,
                                 code: str) -> None:
    events = kinds_and_texts(name)
    assert sum(kind == "chunk" for kind, _ in events) == chunks
    assert events[-1][0] == last
    assert check_events(events) == []
    decision, view, envelope = judge(name)
    assert (envelope.state, envelope.code) == (state, code)
    assert view.sent_envelope["state"] == state
    if state == "ok":
        assert (decision.status, decision.reasons) == (
            "released", ("normal_native_ending", "clean_drain", "contract_accepted"))
        assert envelope.text == view.text == view.sent_envelope["text"]
        assert "schema_version" not in envelope.result  # seed 004: the internal Answer
        assert view.grapheme_splits == ()  # the endpoint chunks by grapheme cluster
    else:
        assert (decision.status, decision.reasons, envelope.text) == (
            "failed", ("endpoint_error",), SORRY)
        assert envelope.retryable is True and envelope.result is None


def test_the_endpoints_ok_is_rejudged_against_the_bound_context() -> None:
    decision, _, envelope = judge("tampered-ok")
    assert (decision.status, decision.reasons) == ("rejected", ("untrusted_value",))
    assert [p.to_dict() for p in decision.contract.verdict.problems] == [
        {"loc": "cited_ids/0",
         "msg": "cited id 'kc-privacy-v1' is not in the context bound to this request"}]
    assert (envelope.state, envelope.code, envelope.result) == ("error", "untrusted_value", None)


def test_chunks_that_disagree_with_the_envelope_text_are_held() -> None:
    data = (SEED004 / "good-v2.sse").read_bytes().replace(b'"text": " 30 days."',
                                                          b'"text": " 60 days."', 1)
    decision, _, _ = judge("good-v2", data=data)
    assert (decision.status, decision.reasons) == ("held", ("final_text_mismatch",))


@pytest.mark.parametrize(("tail", "reasons"), [
    (b'event: chunk\ndata: {"text": "x"}\n\n',
     ("event_after_terminal", "content_after_terminal")),
    (b'event: done\ndata: {"text": "x"}\n\n', ("event_after_terminal", "unknown_native_form")),
])
def test_events_after_the_terminal_are_held(tail: bytes, reasons: tuple[str, ...]) -> None:
    data = (SEED004 / "good-v2.sse").read_bytes() + tail
    decision, _, _ = judge("good-v2", data=data)
    assert (decision.status, decision.reasons) == ("held", reasons)


def test_an_empty_chunk_is_held() -> None:
    data = b'event: chunk\ndata: {"text": ""}\n\n' + (SEED004 / "good-v2.sse").read_bytes()
    decision, _, _ = judge("good-v2", data=data)
    assert (decision.status, decision.reasons) == ("held", ("empty_chunk",))


def test_a_stream_without_its_terminal_is_interrupted() -> None:
    data = (SEED004 / "good-v2.sse").read_bytes()
    data = data[:data.index(b"event: done")]
    decision, _, envelope = judge("good-v2", data=data)
    assert (decision.status, decision.reasons) == ("interrupted",
                                                   ("no_native_terminal", "drain_eof"))
    assert (envelope.state, envelope.code) == ("error", "interrupted")


def test_check_events_reports_in_the_seeds_words() -> None:
    good = kinds_and_texts("good-v2")
    assert check_events(good[:2]) == ["no terminal event (done or error)"]
    assert check_events(good + [("chunk", "x")]) == ["event 4: chunk after the stream ended"]
    assert check_events(good + [("error", None)]) == ["event 4: error after the stream ended"]
    assert check_events([("chunk", ""), good[-1]]) == ["event 0: empty chunk"]
    assert check_events([("ping", None), good[-1]]) == ["event 0: unknown kind 'ping'"]


BANGLA = "কিংবা ক্ষমা কার্যদিবস"
ACCENTS = "cafe\u0301 e\u0301te\u0301"
EMOJI = "👩\u200d👩\u200d👧 ok 🇩🇪"


def by_chars(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_grapheme_counts_match_the_seed() -> None:
    assert (len(BANGLA), len(clusters(BANGLA))) == (21, 11)
    assert (len(ACCENTS), len(clusters(ACCENTS))) == (11, 8)
    assert [len(broken_boundaries(by_chars(BANGLA, n))) for n in (1, 3)] == [10, 2]
    assert [len(broken_boundaries(by_chars(ACCENTS, n))) for n in (1, 3)] == [3, 0]
    assert [len(broken_boundaries(chunk_clusters(t, n))) for t in (BANGLA, ACCENTS)
            for n in (1, 3)] == [0, 0, 0, 0]
    assert clusters(EMOJI)[0] == "👩\u200d👩\u200d👧" and broken_boundaries(
        [EMOJI[:2], EMOJI[2:]]) == [1]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([BANGLA, ACCENTS, EMOJI, "नमस्ते दुनिया", "e\r\nx"]),
       st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=30))
def test_reassembly_is_lossless_and_cluster_chunks_never_split(text: str,
                                                                sizes: list[int]) -> None:
    pieces, i, k = [], 0, 0
    while i < len(text):
        pieces.append(text[i:i + sizes[k % len(sizes)]])
        i += sizes[k % len(sizes)]
        k += 1
    assert "".join(pieces) == text
    safe = chunk_clusters(text, sizes[0])
    assert "".join(safe) == text and broken_boundaries(safe) == []


def test_a_split_cluster_is_a_note_with_positions_not_a_verdict() -> None:
    from tracestore.providers.app_frames import binding_digest
    from test_contracts_seed000 import ingest, binding

    digest = binding_digest(binding("replace-file"))
    reply = json.dumps({"status": "answered", "answer": BANGLA, "source_ids": ["path-write"]},
                       ensure_ascii=False)
    frames = [{"sequence": i, "kind": "content_delta", "binding_sha256": digest, "text": t}
              for i, t in enumerate(by_chars(reply, 3), start=1)]
    frames.append({"sequence": len(frames) + 1, "kind": "done", "binding_sha256": digest})
    data = "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in frames).encode()
    events, d = ingest(data)
    assert d.status == "released" and "grapheme_split" in d.notes
    assert json.loads(d.answer)["answer"] == BANGLA  # lossless
    from tracestore.projections.attempt import project_attempt

    splits = project_attempt(events, "a").grapheme_splits
    assert len(splits) == 2
    assert all(events[p - 1].type == "frame.received" for p in splits)
