"""Issue 14, item 3: resource bounds hold for every input kind.

No absolute times here: "linear and bounded" is asserted as work that does not grow with
the number of blank lines (memory traced by ``tracemalloc``, decoder steps counted).
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from clihelp import runner
from tracestore.cli import app
from tracestore.cli import store_cmds
from tracestore.wire import decode_bytes, make_decoder


def _err(result) -> dict:
    return json.loads(result.stderr.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_ingest_of_an_endless_device_stops_at_the_size_bound(tmp_path: Path,
                                                               monkeypatch) -> None:
    monkeypatch.setattr(store_cmds, "MAX_INPUT_BYTES", 1 << 20)
    result = runner.invoke(app, ["ingest", "/dev/zero", "--json", "--db", str(tmp_path / "z.db")])
    assert result.exit_code == 2, result.exception
    assert _err(result) | {"message": None} == {
        "error": "input_too_large", "message": None, "path": "/dev/zero", "limit": 1 << 20}
    assert not (tmp_path / "z.db").exists() or (tmp_path / "z.db").stat().st_size >= 0


def test_ingest_from_standard_input_is_counted_while_reading(tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.setattr(store_cmds, "MAX_INPUT_BYTES", 1000)
    result = runner.invoke(app, ["ingest", "-", "--json", "--db", str(tmp_path / "z.db")],
                           input=b"data: {}\n\n" * 200)
    assert result.exit_code == 2
    assert _err(result)["error"] == "input_too_large"


def test_ingest_from_standard_input_records_the_capture(tmp_path: Path) -> None:
    capture = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "openai-responses"
               / "text-gpt-4o.sse").read_bytes()
    result = runner.invoke(app, ["ingest", "-", "--attempt", "piped", "--json",
                                 "--db", str(tmp_path / "p.db")], input=capture)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["attempt_id"], summary["api"], summary["framing"]) == \
        ("piped", "openai-responses", "sse")


def test_a_fifo_is_bounded_too(tmp_path: Path, monkeypatch) -> None:
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setattr(store_cmds, "MAX_INPUT_BYTES", 4096)

    def writer() -> None:
        try:
            with open(fifo, "wb") as out:
                for _ in range(64):
                    out.write(b"x" * 1024)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    result = runner.invoke(app, ["ingest", str(fifo), "--json", "--db", str(tmp_path / "f.db")])
    thread.join(5)
    assert result.exit_code == 2 and _err(result)["error"] == "input_too_large"


FLOODS = {
    "bare CR": b"\r",
    "LF": b"\n",
    "CRLF": b"\r\n",
    "mixed": b"\r\n\n\r",
}


def _peak(data: bytes, chunk: int | None) -> tuple[int, list, object]:
    tracemalloc.start()
    try:
        frames, truncation = decode_bytes(data, "sse", chunk_size=chunk)
        return tracemalloc.get_traced_memory()[1], frames, truncation
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", list(FLOODS))
def test_blank_line_floods_decode_in_bounded_memory(name: str) -> None:
    # An event, a flood of blank lines, an event: memory must not grow per blank line.
    unit = FLOODS[name]
    flood = unit * (400_000 // len(unit))
    data = b"data: a\n\n" + flood + b"data: b\n\n"
    peak, frames, truncation = _peak(data, None)
    assert [f.data for f in frames] == ["a", "b"] and truncation is None
    # Whole-buffer decoding holds the input (and at most one copy of it), not a list of
    # Python objects per blank line (that was ~64 bytes per line: 25x the input).
    assert peak < 3 * len(data) + 2_000_000, peak
    assert frames[1].offset == len(b"data: a\n\n") + len(flood)


@pytest.mark.parametrize("name", list(FLOODS))
def test_floods_give_the_same_frames_whole_or_chunked(name: str) -> None:
    unit = FLOODS[name]
    data = b"data: a\r" + unit * 5000 + b"event: e\ndata: b\r\n\r\n" + unit * 777 + b"data: c\n"
    whole = decode_bytes(data, "sse")
    for chunk in (1, 7, 4096):
        assert decode_bytes(data, "sse", chunk_size=chunk) == whole


def test_a_flood_costs_one_step_per_run_not_per_line() -> None:
    """Decoder work on a flood is counted, not timed: the generic line path must see a run
    of blank lines as at most two steps."""
    from tracestore.wire import sse

    seen: list[int] = []
    original = sse.SSEDecoder._lines

    def counting(self, pairs, out):
        pairs = list(pairs)
        seen.append(len(pairs))
        return original(self, pairs, out)

    sse.SSEDecoder._lines = counting  # type: ignore[method-assign]
    try:
        decode_bytes(b"data: a\r" + b"\r" * 100_000 + b"data: b\r\r", "sse")
    finally:
        sse.SSEDecoder._lines = original  # type: ignore[method-assign]
    assert sum(seen) <= 10, seen


def test_whole_buffer_decoding_obeys_the_frame_bound_like_streaming() -> None:
    data = b"data: " + b"x" * 5000 + b"\n\n"
    errors = []
    for chunk in (None, 100):
        try:
            decode_bytes(data, "sse", chunk_size=chunk, max_frame_bytes=1000)
        except Exception as exc:  # noqa: BLE001 - compared below
            errors.append((type(exc).__name__, exc.code, exc.offset))
    assert errors == [("WireError", "frame_byte_limit", 0)] * 2
    decoder = make_decoder("sse", max_frame_bytes=1000)
    with pytest.raises(Exception) as raised:
        decoder.feed(data)
    assert (raised.value.code, raised.value.offset) == ("frame_byte_limit", 0)
