"""Issue 19, part 2: seed rules 000/001/003/004 the product did not follow (each test here
failed before its fix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracestore.events import FrameRejected
from tracestore.providers.app_frames import binding_digest

from test_contracts_seed000 import binding, ingest

ROOT = Path(__file__).resolve().parents[1]
SEED000 = ROOT / "fixtures" / "seed000"
MAX_FRAME_BYTES, MAX_TOTAL_BYTES = 8192, 65536


def frame_line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def stream_of(deltas: list[str]) -> bytes:
    digest = binding_digest(binding("replace-file"))
    frames = [{"sequence": i, "kind": "content_delta", "binding_sha256": digest, "text": t}
              for i, t in enumerate(deltas, start=1)]
    frames.append({"sequence": len(frames) + 1, "kind": "done", "binding_sha256": digest})
    return b"".join(frame_line(f) for f in frames)


REPLY_END = '", "source_ids": ["path-write"]}'


def padded_stream(frame_size: int, total: int | None = None) -> bytes:
    """A replace-file stream whose first delta (JSON whitespace before the reply) is
    ``frame_size`` bytes without its newline; with ``total``, the answer is padded with
    4-byte characters (within the content bound) and a second whitespace delta makes the
    stream exactly ``total`` bytes, newlines included."""
    base = len(stream_of([""]).splitlines(keepends=True)[0]) - 1
    deltas = [" " * (frame_size - base), " ", '{"status": "answered", "answer": "Yes.']
    if total is not None:
        while total - len(stream_of([*deltas, REPLY_END])) > 8200:
            deltas.append("\U0001F600" * 2000)
        deltas.append("\U0001F600" * ((total - len(stream_of([*deltas, REPLY_END])) - 300) // 4))
    deltas.append(REPLY_END)
    if total is not None:
        deltas[1] += " " * (total - len(stream_of(deltas)))  # text length keeps sequences
    data = stream_of(deltas)
    assert len(data.split(b"\n")[0]) == frame_size
    assert total is None or len(data) == total
    return data


def test_a_frame_of_exactly_max_frame_bytes_without_its_newline_is_accepted() -> None:
    _, d = ingest(padded_stream(MAX_FRAME_BYTES))
    assert (d.status, d.reasons) == ("released", (
        "normal_native_ending", "clean_drain", "contract_accepted"))


def test_a_frame_one_byte_over_max_frame_bytes_is_rejected() -> None:
    _, d = ingest(padded_stream(MAX_FRAME_BYTES + 1))
    assert (d.status, d.reasons) == ("held", ("frame_byte_limit",))


def test_a_stream_of_exactly_max_total_bytes_is_accepted_and_one_more_is_not() -> None:
    _, d = ingest(padded_stream(200, MAX_TOTAL_BYTES))
    assert (d.status, d.reasons) == ("released", (
        "normal_native_ending", "clean_drain", "contract_accepted"))
    _, d = ingest(padded_stream(200, MAX_TOTAL_BYTES + 1))
    assert (d.status, d.reasons) == ("held", ("stream_byte_limit",))


def test_a_final_frame_without_its_newline_is_not_a_frame() -> None:
    data = (SEED000 / "replace-file.ndjson").read_bytes()
    assert data.endswith(b"}\n")
    cut = data[:-1]  # the done frame is whole JSON, but not a complete line
    events, d = ingest(cut)
    assert d.answer is None and d.status == "held"
    assert d.reasons == ("truncated_frame",)
    rejected = [e.event for e in events if isinstance(e.event, FrameRejected)]
    assert [(r.code, r.offset) for r in rejected] == [
        ("truncated_frame", data.rindex(b"\n", 0, len(data) - 1) + 1)]
    assert sum(e.type == "frame.received" for e in events) == data.count(b"\n") - 1
