"""Capture ingest end to end: real bytes in, events pointing back into them, decisions out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracestore.cli import app
from tracestore.providers.capture import read_capture
from tracestore.store.log import EventStore

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SYNTHETIC = Path(__file__).resolve().parents[1] / "fixtures" / "synthetic"
runner = CliRunner()


def invoke(*args: str, db: Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [*args, "--db", str(db), "--json"])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"answer_patterns": ["paris|capital|france"],
                                "forbidden_patterns": ["\\blondon\\b"]}))
    return path


@pytest.mark.parametrize("capture", [
    "bedrock/nova-micro-text.bin",
    "openai-responses/text-gpt-4o.sse",
])
def test_a_capture_and_its_decoded_projection_get_the_same_decision(
        capture: str, tmp_path: Path, db_file: Path, task_file: Path) -> None:
    data = (REAL / capture).read_bytes()
    reading = read_capture(data, filename=capture)
    projection = [frame.native for frame in reading.frames if frame.native != "[DONE]"]
    projection.append({"local": "drain", "outcome": "clean"})
    projected = tmp_path / "projection.json"
    projected.write_text(json.dumps(projection))

    code, out, err = invoke("ingest", str(REAL / capture), "--attempt", "raw", "--task",
                            str(task_file), db=db_file)
    assert code == 0, err
    assert json.loads(out)["kind"] == "capture" and json.loads(out)["drain"] == "clean"
    code, out, err = invoke("ingest", str(projected), "--attempt", "decoded", "--task",
                            str(task_file), db=db_file)
    assert code == 0, err
    assert json.loads(out)["kind"] == "projection"

    decisions = {}
    for attempt in ("raw", "decoded"):
        code, out, _ = invoke("release", attempt, db=db_file)
        assert code == 0
        decisions[attempt] = json.loads(out)
    same = ("eligible", "status", "reasons", "answer", "answer_sha256")
    assert {k: decisions["raw"][k] for k in same} == {k: decisions["decoded"][k] for k in same}
    assert decisions["raw"]["status"] == "released"
    assert "Paris" in decisions["raw"]["answer"]


def test_frames_point_back_into_the_stored_bytes(db_file: Path) -> None:
    capture = REAL / "bedrock" / "claude-tool-use.bin"
    code, out, _ = invoke("ingest", str(capture), "--attempt", "tool", db=db_file)
    assert code == 0
    summary = json.loads(out)
    assert (summary["api"], summary["framing"], summary["frames"], summary["drain"]) == \
        ("bedrock-converse-stream", "aws-eventstream", 11, "clean")
    data = capture.read_bytes()
    with EventStore(f"sqlite:///{db_file}") as store:
        frames = [e.event for e in store.read(attempt_id="tool") if e.type == "frame.received"]
        assert store.get_blob(summary["sha256"]) == data
    assert sum(f.length for f in frames) == len(data)
    assert [f.offset for f in frames] == sorted(f.offset for f in frames)
    assert frames[0].offset == 0 and frames[-1].offset + frames[-1].length == len(data)
    assert list(frames[0].native) == ["messageStart"]


def test_chunk_size_changes_nothing(db_file: Path, tmp_path: Path) -> None:
    capture = REAL / "anthropic" / "code-execution-emoji.sse"
    outs = []
    for size in ("1", "7", "4096"):
        db = tmp_path / f"chunk{size}.db"
        code, out, _ = invoke("ingest", str(capture), "--attempt", "a", "--chunk-size", size,
                              db=db)
        assert code == 0
        with EventStore(f"sqlite:///{db}") as store:
            outs.append([(e.event.native, e.event.offset, e.event.length)
                         for e in store.read(attempt_id="a") if e.type == "frame.received"])
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) == 35


def test_a_capture_cut_inside_a_frame_drains_eof(tmp_path: Path, db_file: Path) -> None:
    data = (REAL / "anthropic" / "text-basic.sse").read_bytes()
    cut = tmp_path / "cut.sse"
    cut.write_bytes(data[: data.index(b"message_delta") + 20])
    code, out, _ = invoke("ingest", str(cut), "--attempt", "cut", db=db_file)
    assert code == 0
    assert json.loads(out)["drain"] == "eof"
    with EventStore(f"sqlite:///{db_file}") as store:
        drained = [e.event for e in store.read(attempt_id="cut") if e.type == "transport.drained"]
    assert [(d.outcome, d.detail.split(" at byte")[0]) for d in drained] == \
        [("eof", "input ended inside a frame")]


def test_corrupt_bytes_keep_the_valid_prefix_and_the_rejection_at_the_offset(
        tmp_path: Path, db_file: Path) -> None:
    # issue 19 (seed 000 keeps an invalid stream's partial trace): was "write nothing"
    data = bytearray((REAL / "bedrock" / "nova-micro-text.bin").read_bytes())
    second = int.from_bytes(data[0:4], "big")  # start of the second message
    data[second + 20] ^= 0xFF
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    code, out, err = invoke("ingest", str(bad), "--attempt", "crc", db=db_file)
    assert code == 0, err
    with EventStore(f"sqlite:///{db_file}") as store:
        events = list(store.read(attempt_id="crc"))
    assert [e.event.offset for e in events if e.type == "frame.received"] == [0]
    rejected = [(e.event.code, e.event.offset) for e in events if e.type == "frame.rejected"]
    assert rejected == [("message_crc_mismatch", second)]
    code, out, _ = invoke("release", "crc", "--json", db=db_file)
    assert (json.loads(out)["status"], json.loads(out)["reasons"]) == (
        "held", ["message_crc_mismatch"])


def test_corrupt_bytes_before_any_frame_name_the_offset_and_write_nothing(
        tmp_path: Path, db_file: Path) -> None:
    data = bytearray((REAL / "bedrock" / "nova-micro-text.bin").read_bytes())
    data[20] ^= 0xFF
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    code, out, err = invoke("ingest", str(bad), db=db_file)
    assert code == 2 and out == ""
    assert (json.loads(err)["error"], json.loads(err)["offset"]) == ("message_crc_mismatch", 0)
    assert not db_file.exists() or EventStore(f"sqlite:///{db_file}").head_position() == 0


def test_progress_reports_bytes_decoded_up_to_the_whole_capture() -> None:
    from tracestore.wire import decode_bytes

    data = (REAL / "openai-responses" / "reasoning-summary-o3-mini.sse").read_bytes()
    seen: list[int] = []
    frames, truncation = decode_bytes(data, "sse", chunk_size=50_000, progress=seen.append)
    assert seen == [50_000, 100_000, 150_000, len(data), len(data)]
    assert truncation is None
    assert frames == decode_bytes(data, "sse")[0]


def test_projection_kinds_come_from_one_normalizer_fed_in_order() -> None:
    from tracestore.ingest import plan_ingest

    data = json.dumps([
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0,
                               "start": {"toolUse": {"toolUseId": "t", "name": "n"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
    ]).encode()
    plan = plan_ingest(data, filename="tool.json")
    # The stop closes the tool block only a normalizer that saw its start knows about.
    assert [e.event.kinds for e in plan.events if e.event.type == "frame.received"] == [
        ("message_start",), ("tool_call_start",), ("tool_call_delta",),
        ("tool_call_done", "block_stop")]


def test_a_gemini_json_array_is_a_capture_not_a_projection(db_file: Path) -> None:
    code, out, _ = invoke("ingest", str(REAL / "gemini" / "jsonarray-thinking-text.json"),
                          "--attempt", "g", db=db_file)
    assert code == 0
    summary = json.loads(out)
    assert (summary["kind"], summary["api"], summary["framing"], summary["frames"],
            summary["drain"]) == ("capture", "gemini", "json-array", 3, "clean")
