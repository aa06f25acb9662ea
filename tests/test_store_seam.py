"""Issue 14, item 1: whatever the decoders accept the store stores exactly; the rest is refused
with a typed error (exit 2/3), never ``internal error``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tracestore.providers import eventstream_encode as es
from tracestore.wire.limits import MAX_JSON_DEPTH
from clihelp import count_events, runner
from tracestore.cli import app


def run(*args: str, db: Path | str) -> tuple[int, str, str, BaseException | None]:
    result = runner.invoke(app, [*args, "--db", str(db)])
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return result.exit_code, result.stdout, result.stderr, exc


def error_of(stderr: str) -> dict:
    return json.loads(stderr.strip().splitlines()[-1])


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def _delta(text_json: str, seq: int) -> str:
    return ('{"type":"response.output_text.delta","sequence_number":%d,"item_id":"m",'
            '"output_index":0,"content_index":0,"delta":%s}' % (seq, text_json))


def test_lone_surrogate_delta_is_stored_and_read_back_byte_faithfully(tmp_path: Path) -> None:
    # A provider splitting an emoji across two deltas sends each half as an escape.
    body = "[" + ",".join([_delta('"\\ud83d"', 1), _delta('"\\ude00"', 2),
                           '{"local":"drain","outcome":"clean"}']) + "]"
    src = _write(tmp_path / "split.json", body)
    db = tmp_path / "s.db"
    code, out, err, exc = run("ingest", str(src), "--attempt", "a", "--json", db=db)
    assert (code, exc) == (0, None), err
    stored = [r[0] for r in sqlite3.connect(db).execute(
        "SELECT payload FROM ts_events WHERE type='frame.received' ORDER BY position")]
    assert ['"delta":"\\ud83d"' in stored[0], '"delta":"\\ude00"' in stored[1]] == [True, True]
    code, out, err, exc = run("events", "--attempt", "a", "--json", db=db)
    assert (code, exc) == (0, None), err
    natives = [json.loads(line)["payload"]["native"] for line in out.splitlines()
               if json.loads(line)["type"] == "frame.received"]
    assert [n["delta"] for n in natives] == ["\ud83d", "\ude00"]
    assert "\\ud83d" in out  # escaped in the JSON line, never a raw surrogate
    code, out, err, exc = run("verify", db=db)
    assert (code, exc) == (0, None), err
    for command in (["release", "a"], ["release", "a", "--json"], ["audit"], ["audit", "--json"],
                    ["events"]):
        code, out, err, exc = run(*command, db=db)
        assert exc is None and code == 0, (command, err)


def test_replay_of_a_scenario_with_a_lone_surrogate_is_recorded(tmp_path: Path) -> None:
    scenario = {
        "trace": "sur", "steps": [
            {"open": "r", "attempt": "sur-a", "api": "openai-responses"},
            {"reader": "r", "event": json.loads(_delta('"\\ud83d"', 1))},
            {"reader": "r", "local": "drain", "outcome": "clean"},
        ]}
    src = _write(tmp_path / "sc.json", json.dumps(scenario))
    code, out, err, exc = run("replay", str(src), db=tmp_path / "r.db")
    assert (code, exc) == (0, None), err
    code, out, err, exc = run("verify", db=tmp_path / "r.db")
    assert (code, exc) == (0, None), err


def _nest(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize("depth, code", [(MAX_JSON_DEPTH - 1, 0), (MAX_JSON_DEPTH + 1, 2),
                                         (300, 2), (1000, 2), (100_000, 2)])
def test_one_json_depth_bound_for_the_whole_path(tmp_path: Path, depth: int, code: int) -> None:
    # One element holding `depth` nested arrays (plus the element object: depth + 1 levels).
    body = '[{"type":"response.created","x":%s},{"local":"drain","outcome":"clean"}]' % _nest(depth)
    src = _write(tmp_path / "deep.json", body)
    got, out, err, exc = run("ingest", str(src), "--attempt", "d", "--json", db=tmp_path / "d.db")
    assert (got, exc) == (code, None), err
    if code:
        assert error_of(err)["error"] == "json_too_deep"
        assert count_events(tmp_path / "d.db") == 0
    else:
        got, out, err, exc = run("events", "--attempt", "d", "--json", db=tmp_path / "d.db")
        native = json.loads(out.splitlines()[2])["payload"]["native"]
        assert json.dumps(native["x"], separators=(",", ":")) == _nest(depth)


def test_a_capture_frame_nested_too_deep_is_refused_at_its_offset(tmp_path: Path) -> None:
    frame = 'data: {"type":"response.created","x":%s}\n\n' % _nest(400)
    src = _write(tmp_path / "deep.sse", 'data: {"type":"response.created"}\n\n' + frame)
    got, out, err, exc = run("ingest", str(src), "--json", db=tmp_path / "d.db")
    assert (got, exc) == (2, None)
    assert error_of(err)["error"] == "json_too_deep"
    assert error_of(err)["offset"] == len('data: {"type":"response.created"}\n\n')


def test_a_scenario_nested_100k_deep_is_a_typed_error(tmp_path: Path) -> None:
    src = _write(tmp_path / "deep-scenario.json", '{"trace":"x","steps":%s}' % _nest(100_000))
    got, out, err, exc = run("replay", str(src), "--json", db=tmp_path / "d.db")
    assert (got, exc) == (2, None)
    assert error_of(err)["error"] == "json_too_deep"


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1" * 400 + ".0"])
def test_an_overflowing_number_is_refused_not_turned_into_null(tmp_path: Path, number: str) -> None:
    body = '[{"type":"response.created","x":%s},{"local":"drain","outcome":"clean"}]' % number
    src = _write(tmp_path / "big.json", body)
    got, out, err, exc = run("ingest", str(src), "--json", db=tmp_path / "b.db")
    assert (got, exc) == (2, None)
    assert error_of(err)["error"] == "number_out_of_range"
    assert count_events(tmp_path / "b.db") == 0


@pytest.mark.parametrize("kind", ['["delta"]', '{"a":1}', "3"])
def test_a_kind_that_is_not_a_string_does_not_crash_detection(tmp_path: Path, kind: str) -> None:
    src = _write(tmp_path / "k.ndjson", '{"kind":%s,"sequence":1}\n' % kind)
    got, out, err, exc = run("ingest", str(src), "--json", db=tmp_path / "k.db")
    assert (got, exc) == (2, None)
    assert error_of(err)["error"] == "unknown_provider"


def _byte_header_error(value: bytes) -> bytes:
    """An unmodeled error message whose ``:error-code`` is a byte-array header (type 6)."""
    import struct
    import zlib

    def header(name: str, kind: int, raw: bytes) -> bytes:
        return bytes([len(name)]) + name.encode() + bytes([kind]) + struct.pack(">H", len(raw)) + raw

    headers = (header(":message-type", 7, b"error") + header(":error-code", 6, value)
               + header(":error-message", 7, b"boom"))
    total = 12 + len(headers) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers
    return body + struct.pack(">I", zlib.crc32(body))


def test_bedrock_error_code_header_with_non_utf8_bytes_is_refused(tmp_path: Path) -> None:
    capture = es.event("messageStart", {"role": "assistant"}) + _byte_header_error(b"\xff\xfe")
    src = _write(tmp_path / "err.bin", capture)
    got, out, err, exc = run("ingest", str(src), "--json", db=tmp_path / "e.db")
    assert (got, exc) == (2, None)
    assert error_of(err) | {"message": None} == {
        "error": "invalid_header", "message": None,
        "offset": len(es.event("messageStart", {"role": "assistant"}))}


def test_bedrock_error_code_header_as_utf8_bytes_is_text(tmp_path: Path) -> None:
    capture = es.event("messageStart", {"role": "assistant"}) + _byte_header_error(b"Throttled")
    src = _write(tmp_path / "err.bin", capture)
    got, out, err, exc = run("ingest", str(src), "--attempt", "e", "--json", db=tmp_path / "e.db")
    assert (got, exc) == (0, None), err
    got, out, err, exc = run("events", "--attempt", "e", "--json", db=tmp_path / "e.db")
    natives = [json.loads(line)["payload"].get("native") for line in out.splitlines()]
    assert {"error": {"code": "Throttled", "message": "boom"}} in natives


@pytest.mark.parametrize("command", [["events", "--after", str(2**63)],
                                     ["events", "--after", str(10**30), "--json"],
                                     ["release", "x", "--at", str(2**63)]])
def test_positions_beyond_64_bits_are_bad_input(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "p.db"
    run("init", db=db)
    got, out, err, exc = run(*command, db=db)
    assert (got, exc) == (2, None)
    assert "position_out_of_range" in err


def test_an_unknown_url_scheme_is_bad_input(tmp_path: Path) -> None:
    got, out, err, exc = run("init", "--json", db="nosuchdb://host/x")
    assert (got, exc) == (2, None)
    assert error_of(err)["error"] == "invalid_db_url"


def _initialised(tmp_path: Path) -> Path:
    db = tmp_path / "s.db"
    assert run("init", db=db)[0] == 0
    return db


def test_a_database_at_a_newer_schema_revision_is_refused(tmp_path: Path) -> None:
    db = _initialised(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.commit()
    conn.close()
    for command in (["init", "--json"], ["events", "--json"], ["verify", "--json"]):
        got, out, err, exc = run(*command, db=db)
        assert (got, exc) == (3, None), command
        assert error_of(err)["error"] == "schema_too_new"


@pytest.mark.parametrize("damage", [
    "DROP TABLE ts_events",
    "ALTER TABLE ts_events RENAME TO old_events",
    "DROP TABLE ts_events; CREATE TABLE ts_events (junk TEXT)",
])
def test_a_missing_or_corrupt_events_table_is_a_store_error(tmp_path: Path, damage: str) -> None:
    db = _initialised(tmp_path)
    conn = sqlite3.connect(db)
    conn.executescript(damage)
    conn.close()
    for command in (["events", "--json"], ["verify", "--json"], ["attempts", "--json"],
                    ["audit", "--json"]):
        got, out, err, exc = run(*command, db=db)
        assert (got, exc) == (3, None), (command, err)
        assert error_of(err)["error"] == "store_damaged", command
