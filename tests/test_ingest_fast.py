"""The fast projection path plans exactly what the reference path plans, or hands over.

The reference path (incremental wire decoder + ``plan_projection``) is the specification;
``chunk_size`` forces it.  Every accepted projection must give the same ids, streams,
types and payload bytes both ways, and every input the fast path is unsure about must end
in the reference path's own error.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tracestore.errors import InputError, WireError
from tracestore.events import FrameReceived, SerializedEvent
from tracestore.ingest import plan_ingest
from tracestore.ingest.fast import HandOver, MAX_LABELS_PER_PROJECTION, check_projection
from tracestore.ingest.projection import _label_event, projection_api_of
from tracestore.store.log import EventStore, canonical_payload
from tracestore.wire import MAX_FRAMES_PER_CAPTURE

ROOT = Path(__file__).resolve().parent.parent
PROJECTIONS = sorted((ROOT / "fixtures" / "projections").glob("*.json")) + sorted(
    p for p in (ROOT / "fixtures" / "seed003").glob("*.json"))


def _rows(plan) -> list[tuple]:
    out = []
    for e in plan.events:
        payload = e.payload if isinstance(e, SerializedEvent) else canonical_payload(e.event)
        out.append((e.id, e.stream, e.trace_id, json.loads(payload)["type"], payload))
    return out


def _is_projection(path: Path) -> bool:
    try:
        return plan_ingest(path.read_bytes(), filename=path.name, chunk_size=1 << 30).kind \
            == "projection"
    except (InputError, WireError):
        return False


CASES = [(p.name, p.read_bytes()) for p in PROJECTIONS if _is_projection(p)] + [
    ("odd.json", '\t[ {"type":"r","d":"é—😀\\u2028","x":[1.5e300, -0.0, 1e16, 2e-7]} ,\r\n'
                 '{"local":"stop","by":"user"},{"type":"r","d":"\\ud83d"} ]\n'.encode()),
    ("bedrock.json", b'[{"messageStart":{"role":"assistant"}},{"contentBlockDelta":'
                     b'{"contentBlockIndex":0,"delta":{"text":"hi"}}},{"local":"drain",'
                     b'"outcome":"reset","detail":"x"},{"messageStop":{"stopReason":"x"}}]'),
]


def test_there_are_projection_fixtures_to_compare() -> None:
    assert len(CASES) >= 5


@pytest.mark.parametrize("name, data", CASES, ids=[c[0] for c in CASES])
def test_fast_and_reference_paths_plan_the_same_bytes(name: str, data: bytes) -> None:
    fast = plan_ingest(data, filename=name)
    slow = plan_ingest(data, filename=name, chunk_size=len(data) + 1)
    assert any(isinstance(e, SerializedEvent) for e in fast.events)
    assert _rows(fast) == _rows(slow)
    assert (fast.attempt_id, fast.api, fast.frames, fast.drain, fast.sha256) == \
        (slow.attempt_id, slow.api, slow.frames, slow.drain, slow.sha256)


def test_payloads_are_the_models_own_serialization_for_odd_values() -> None:
    natives = [{"type": "response.output_text.delta", "delta": "é—😀 \u2028", "n": 1.5e300,
                "i": 2 ** 70, "f": 0.1, "z": -0.0, "e": 1e16, "l": [True, None, {}]}]
    data = json.dumps(natives, ensure_ascii=False).encode()
    (frame,) = [e for e in plan_ingest(data, filename="odd.json").events
                if isinstance(e, SerializedEvent)]
    model = FrameReceived.model_validate_json(frame.payload)
    assert frame.payload == canonical_payload(model)
    assert frame.event == model


def test_non_ascii_offsets_are_byte_offsets() -> None:
    data = '[ {"type":"a","t":"éé"} ,\n{"type":"b"}]'.encode()
    frames = [e.event for e in plan_ingest(data, filename="u.json").events
              if e.event.type == "frame.received"]
    assert [(f.offset, f.length) for f in frames] == [(2, 23), (28, 12)]
    assert [data[f.offset:f.offset + f.length] for f in frames] == \
        ['{"type":"a","t":"éé"}'.encode(), b'{"type":"b"}']


@pytest.mark.parametrize("content", [
    b'\xef\xbb\xbf[{"type":"a"}]',  # a byte-order mark
    b'[{"type":"a"},,{"type":"b"}]',
    b'[{"type":"a"}, 42]',
    b'[{"type":"a","type":"b"}]',
    b'[{"type":"a","n":NaN}]',
    b'[{"type":"a"}, {"local":"pause"}]',
    b'[{"type":"a"}, {"messageStart":{}}]',
    b'[{"type":"a"}] x',
    b'[{"type":"a"}',
    b'[]',
    b'[{"type":"\xff"}]',
])
def test_doubtful_inputs_are_handed_over(content: bytes) -> None:
    with pytest.raises(HandOver):
        check_projection(content, "auto", label_event=_label_event, api_of=projection_api_of)


def test_a_million_frames_plus_labels_are_within_the_bounds() -> None:
    # Goal 6: the frame bound counts frames, not the labels around them.
    assert MAX_FRAMES_PER_CAPTURE == 1_000_000 and MAX_LABELS_PER_PROJECTION >= 2
    few = b'[{"local":"stop"},{"type":"a"},{"local":"drain","outcome":"clean"}]'
    checked = check_projection(few, "auto", label_event=_label_event,
                               api_of=projection_api_of)
    assert (checked.frames, checked.labels, checked.drain) == (1, 2, "clean")


def test_more_labels_than_the_bound_are_refused_by_the_reference_path() -> None:
    labels = ['{"local":"stop"}'] * (MAX_LABELS_PER_PROJECTION + 1)
    data = ("[" + ",".join(['{"type":"a"}', *labels]) + "]").encode()
    with pytest.raises(InputError) as caught:
        plan_ingest(data, filename="many.json")
    assert caught.value.code == "label_count_limit"


def test_an_ingest_streams_in_chunks_and_keeps_the_chain(tmp_path: Path) -> None:
    natives = [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": f"w{n} "}}}
               for n in range(12_345)]
    data = json.dumps([{"messageStart": {"role": "assistant"}}, *natives,
                       {"messageStop": {"stopReason": "end_turn"}},
                       {"local": "drain", "outcome": "clean"}]).encode()
    from tracestore.ingest.pipeline import append_plan

    with EventStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        first = append_plan(store, plan_ingest(data, filename="big.json"))
        again = append_plan(store, plan_ingest(data, filename="big.json"))
        assert first.positions == tuple(range(1, 12_352))
        assert (again.appended, len(again.skipped_ids)) == (0, 12_351)
        # The decision the plan implies is in the same transaction, after the frames.
        assert (first.followed, again.followed) == ((12_352,), ())
        assert store.verify().ok and store.verify().count == 12_352
        *_, last, decided = store.read(attempt_id="big-" + first.blobs_stored[0][:8])
        assert (last.version, last.event.type, last.event.outcome) == \
            (12_350, "transport.drained", "clean")
        assert (decided.position, decided.event.type, decided.event.decided_at_position) \
            == (12_352, "release.decided", 12_351)


def _bound_projection() -> bytes:
    """A Bedrock projection whose answer is seed 000's replace-file structured reply."""
    reply = ('{\n"status": "answered",\n"answer": "Yes, an existing file is overwritten.",\n'
             '"source_ids": [\n"path-write"\n]\n}')
    pieces = [reply[i:i + 13] for i in range(0, len(reply), 13)]
    natives = [{"messageStart": {"role": "assistant"}}] + [
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": p}}} for p in pieces
    ] + [{"contentBlockStop": {"contentBlockIndex": 0}},
         {"messageStop": {"stopReason": "end_turn"}}, {"local": "drain", "outcome": "clean"}]
    return json.dumps(natives).encode()


def _log(db: Path) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT position, id, stream, version, type, trace_id, payload "
                            "FROM ts_events ORDER BY position").fetchall()
    finally:
        conn.close()
    # Decisions get fresh ids and name the time they were taken: compare the rest.
    return [row if row[4] != "release.decided" else (*row[:1], None, *row[2:6], None)
            for row in rows]


def test_a_bound_projection_gets_its_bindings_on_the_fast_path(tmp_path: Path) -> None:
    from clihelp import run

    capture = tmp_path / "bound.json"
    capture.write_bytes(_bound_projection())
    bound = ["--attempt", "b", "--contract", str(ROOT / "fixtures/contracts/seed000-rag.json"),
             "--binding", str(ROOT / "fixtures/seed000/replace-file.binding.json")]
    fast, slow = tmp_path / "fast.db", tmp_path / "slow.db"
    assert run("ingest", str(capture), *bound, db=fast)[0] == 0
    assert run("ingest", str(capture), *bound, "--chunk-size", "4096", db=slow)[0] == 0
    types = [row[4] for row in _log(fast)]
    assert types[:3] == ["trace.opened", "contract.bound", "request.bound"]
    assert _log(fast) == _log(slow)
    decisions = [json.loads(run("release", "b", "--json", db=db)[1]) for db in (fast, slow)]
    assert decisions[0] == decisions[1]
    assert decisions[0]["envelope"]["state"] == "ok"
    code, out, _ = run("ingest", str(capture), *bound, "--json", db=fast)  # a no-op again
    assert (code, json.loads(out)["appended"]) == (0, 0)


# -- the kinds-only normalizer path against feed, on every real and seed capture ----------

def _captures() -> list[tuple[str, object]]:
    """(name, CaptureReading) for every capture under fixtures/ that reads cleanly."""
    from tracestore.providers.capture import read_capture

    out = []
    for folder in ("real", "synthetic", "seed000", "seed004"):
        for path in sorted((ROOT / "fixtures" / folder).rglob("*")):
            if not path.is_file() or path.suffix in (".md",) or ".binding." in path.name:
                continue
            try:
                out.append((f"{folder}/{path.relative_to(ROOT / 'fixtures' / folder)}",
                            read_capture(path.read_bytes(), filename=path.name)))
            except (InputError, WireError):
                continue
    return out


CAPTURES = _captures()


def test_the_real_captures_of_the_fast_apis_are_all_read() -> None:
    apis = [reading.provider for _, reading in CAPTURES]
    assert apis.count("openai-responses") >= 6 and apis.count("bedrock-converse-stream") >= 6


@pytest.mark.parametrize("name, reading", CAPTURES, ids=[c[0] for c in CAPTURES])
def test_kinds_equal_the_kinds_of_feed(name: str, reading) -> None:
    from tracestore.providers.base import make_normalizer

    by_kinds, by_feed = make_normalizer(reading.provider), make_normalizer(reading.provider)
    for frame in reading.frames:
        expected = tuple(o.kind for o in frame.observations)
        assert by_kinds.kinds(frame.native, frame.event_name) == expected, frame.index
        assert tuple(o.kind for o in by_feed.feed(frame.native, frame.event_name)) == expected
        assert _state(by_kinds) == _state(by_feed), frame.index  # the same state after each


def _state(value):
    """A normalizer's state as plain data (normalizers may hold normalizers)."""
    if hasattr(value, "__dict__"):
        return (type(value).__name__, {k: _state(v) for k, v in vars(value).items()})
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_state(v) for v in value]
    return value


PROJECTED = [(name, reading) for name, reading in CAPTURES
             if reading.provider in ("openai-responses", "bedrock-converse-stream")
             and reading.frames
             and all(projection_api_of(f.native) == reading.provider for f in reading.frames)]


@pytest.mark.parametrize("name, reading", PROJECTED, ids=[c[0] for c in PROJECTED])
def test_real_captures_as_projections_plan_the_same_bytes_both_ways(name: str,
                                                                    reading) -> None:
    # The capture's natives written as a decoded projection (seed 003's form), with a drain.
    natives = [f.native for f in reading.frames] + [{"local": "drain", "outcome": "clean"}]
    data = json.dumps(natives, ensure_ascii=False, indent=1).encode()
    fast = plan_ingest(data, filename="real.json")
    slow = plan_ingest(data, filename="real.json", chunk_size=len(data) + 1)
    assert any(isinstance(e, SerializedEvent) for e in fast.events)
    assert _rows(fast) == _rows(slow)
    kinds = [json.loads(r[4]).get("kinds") for r in _rows(fast) if r[3] == "frame.received"]
    assert [list(k) for k in kinds] == [[o.kind for o in f.observations]
                                        for f in reading.frames]


def test_a_large_capture_is_streamed_into_sqlite_and_rolls_back_with_its_append(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.errors import ExpectedVersionConflict
    from tracestore.events import LocalStopped, NewEvent
    from tracestore.store import log, rows_io

    streamed: list[bool] = []
    original = log.EventStore._stream_blob
    monkeypatch.setattr(log.EventStore, "_stream_blob", lambda self, *a: streamed.append(
        original(self, *a)) or streamed[-1])

    data = bytes(range(256)) * (3 * rows_io._BLOB_PIECE // 256) + b"tail"  # 3 pieces and a bit
    stop = NewEvent("attempt:a", LocalStopped(attempt_id="a"), id="s1")
    with EventStore(f"sqlite:///{tmp_path / 'b.db'}") as store:
        with pytest.raises(ExpectedVersionConflict):
            store.append([stop], expected_versions={"attempt:a": 5}, blob_data=[data])
        sha = hashlib.sha256(data).hexdigest()
        assert store.get_blob(sha) is None  # the streamed blob went with the refused append
        result = store.append([stop], blob_data=[data])
        assert (result.blobs_stored, store.get_blob(sha)) == ((sha,), data)
        assert result.positions == (1,) and result.positions == [1]
        assert store.verify().ok
    assert streamed == [True, True]


def test_positions_are_a_range_equal_to_the_tuple() -> None:
    from tracestore.store.log import Positions

    positions = Positions(4, 3)
    assert (positions == (4, 5, 6), positions == [4, 5, 6], positions == (4, 5)) == \
        (True, True, False)
    assert (len(positions), positions[0], positions[-1], list(positions)) == (3, 4, 6, [4, 5, 6])
    assert not Positions(1, 0) and repr(Positions(1, 1_000_000)) == "Positions(1…1000000)"


@pytest.fixture
def small_frame_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    """MAX_FRAMES_PER_CAPTURE lowered to 5 wherever projections read it."""
    import tracestore.ingest.planner as ingest_mod
    import tracestore.ingest.fast as fast_mod
    import tracestore.ingest.projection as projection_mod

    for module in (ingest_mod, fast_mod, projection_mod):
        monkeypatch.setattr(module, "MAX_FRAMES_PER_CAPTURE", 5)
    return 5


def _projection(frames: int, labels: int) -> bytes:
    natives = [{"type": "response.output_text.delta", "delta": f"w{n}"} for n in range(frames)]
    return json.dumps(natives + [{"local": "stop"}] * (labels - 1)
                      + [{"local": "drain", "outcome": "clean"}]).encode()


def test_exactly_the_frame_bound_plus_labels_is_accepted_on_both_paths(
        small_frame_bound: int) -> None:
    # Goal 6 at a size a test can afford: the bound counts native frames, never labels.
    data = _projection(small_frame_bound, labels=3)
    fast = plan_ingest(data, filename="edge.json")
    slow = plan_ingest(data, filename="edge.json", chunk_size=7)
    assert any(isinstance(e, SerializedEvent) for e in fast.events)  # not handed over
    assert _rows(fast) == _rows(slow)
    assert [r[3] for r in _rows(fast)].count("frame.received") == small_frame_bound


def test_one_frame_over_the_bound_is_frame_count_limit_on_both_paths(
        small_frame_bound: int) -> None:
    data = _projection(small_frame_bound + 1, labels=1)
    for chunk_size in (None, 7):
        with pytest.raises(WireError) as caught:
            plan_ingest(data, filename="over.json", chunk_size=chunk_size)
        assert caught.value.code == "frame_count_limit"
