"""Issue 14, item 4: every JSON output is safe to print, with one escaper; tables tell a
literal backslash sequence from a real control character."""

from __future__ import annotations

import json
from pathlib import Path

from clihelp import runner
from tracestore.cli import app

# C1 controls incl. the 8-bit CSI (U+009B) and NEL (U+0085), DEL, a bidi override,
# line and paragraph separators: json.dumps(ensure_ascii=False) writes all of them raw.
HOSTILE = "a\x9b31mb\x85c\x7fd\u202ee\u2028f\u2029g\u2066h"
RAW = ["\x9b", "\x85", "\x7f", "\u202e", "\u2028", "\u2029", "\u2066"]
ESCAPED = ["\\u009b", "\\u0085", "\\u007f", "\\u202e", "\\u2028", "\\u2029", "\\u2066"]


def _store(tmp_path: Path) -> Path:
    deltas = [HOSTILE, " and \\x1b is text, \x1b is not."]
    body = [{"type": "response.output_text.delta", "sequence_number": i, "item_id": "m",
             "output_index": 0, "content_index": 0, "delta": d} for i, d in enumerate(deltas)]
    body.append({"type": "response.completed", "sequence_number": 9,
                 "response": {"id": "r", "status": "completed"}})
    body.append({"local": "drain", "outcome": "clean"})
    src = tmp_path / "hostile.json"
    src.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"answer_patterns": ["is text"]}))
    db = tmp_path / "h.db"
    result = runner.invoke(app, ["ingest", str(src), "--attempt", "h", "--task", str(task),
                                 "--db", str(db)])
    assert result.exit_code == 0, result.stderr
    return db


def _check_json_output(out: str) -> list:
    for char in RAW:
        assert char not in out, repr(char)
    # Every line is one JSON document (U+2028/9 no longer split lines for any reader).
    return [json.loads(line) for line in out.splitlines()]


def test_events_release_and_audit_json_escape_c1_del_bidi_and_separators(tmp_path: Path) -> None:
    db = _store(tmp_path)
    outputs = {}
    for command in (["events", "--json"], ["release", "h", "--json"], ["audit", "--json"],
                    ["attempts", "--json"]):
        result = runner.invoke(app, [*command, "--db", str(db)])
        assert result.exit_code == 0, (command, result.stderr)
        outputs[command[0]] = result.stdout
        _check_json_output(result.stdout)
    for escape in ESCAPED:
        assert escape in outputs["events"], escape
        assert escape in outputs["release"], escape
    # Escaping changes nothing a JSON reader sees.
    rows = _check_json_output(outputs["events"])
    natives = [r["payload"]["native"] for r in rows if r["type"] == "frame.received"]
    assert natives[0]["delta"] == HOSTILE
    assert json.loads(outputs["release"])["answer"].startswith(HOSTILE)


def test_error_json_is_escaped_too(tmp_path: Path) -> None:
    db = _store(tmp_path)
    result = runner.invoke(app, ["release", "no\x9bpe\u2028", "--json", "--db", str(db)])
    assert result.exit_code == 4
    assert "\x9b" not in result.stderr and "\u2028" not in result.stderr
    assert json.loads(result.stderr)["attempt_id"] == "no\x9bpe\u2028"


def test_tables_show_a_literal_backslash_sequence_differently_from_a_control(
        tmp_path: Path) -> None:
    db = _store(tmp_path)
    result = runner.invoke(app, ["release", "h", "--db", str(db)], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    out = result.stdout
    assert "\x1b" not in out and "\x9b" not in out
    assert "\\\\x1b is text, \\x1b is not." in out  # typed backslash doubled; ESC escaped


def test_one_escaper_for_every_json_output() -> None:
    from tracestore.cli import common
    from tracestore.review import escape

    for char, escaped in zip(RAW + ["\ud83d"], ESCAPED + ["\\ud83d"]):
        assert escape.json_text(char, indent=None) == f'"{escaped}"'
        assert common.json_text(char, compact=True) == f'"{escaped}"'
