"""Issue 26 items 4 and 9: hostile export files for ``import``, table-driven.

Every case starts from a real export (a Bedrock capture: events plus one blob line), breaks
one thing, and must be refused with exit 2 and a stable code, nothing imported, in well under
a second -- never exit 70.  Most cases flip the header to ``"complete": false`` first, so the
hash chain (recomputed for partial exports) cannot be what catches them: the row checks must.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from clihelp import count_events, run

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"

Lines = list  # the export as parsed JSON values, line by line (header first)


@pytest.fixture(scope="module")
def export_lines(tmp_path_factory: pytest.TempPathFactory) -> list:
    folder = tmp_path_factory.mktemp("src")
    db = folder / "src.db"
    assert run("ingest", str(CAPTURE), "--attempt", "nova", db=db)[0] == 0
    out = folder / "out.jsonl"
    assert run("export", "--out", str(out), db=db)[0] == 0
    return [json.loads(line) for line in out.read_text("utf-8").splitlines()]


def _partial(lines: Lines) -> Lines:
    lines[0]["complete"] = False
    return lines


def _event(i: int, **changes: object) -> Callable[[Lines], Lines]:
    def mutate(lines: Lines) -> Lines:
        lines[i]["event"].update(changes)
        return _partial(lines)
    return mutate


def _payload(i: int, text: str | Callable[[str], str]) -> Callable[[Lines], Lines]:
    def mutate(lines: Lines) -> Lines:
        old = lines[i]["event"]["payload"]
        lines[i]["event"]["payload"] = text(old) if callable(text) else text
        return _partial(lines)
    return mutate


def _raw(text: str | Callable[[Lines], str]) -> Callable[[Lines], str]:
    return lambda lines: text(lines) if callable(text) else text


def _blob(**changes: object) -> Callable[[Lines], Lines]:
    def mutate(lines: Lines) -> Lines:
        lines[-1]["blob"].update(changes)
        return _partial(lines)
    return mutate


def _drop_blobs(lines: Lines) -> Lines:
    return [line for line in _partial(lines) if "blob" not in line]


def _dup_position(lines: Lines) -> Lines:
    lines[3]["event"]["position"] = 2
    return _partial(lines)


def _gap(lines: Lines) -> Lines:
    return [line for i, line in enumerate(lines) if i != 4]  # complete: 1, 2, 3, 5, …


def _dumps(lines: Lines) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


HEADER = '{"format":"tracestore-jsonl","version":1,"complete":false,"redacted":false}\n'
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000

CASES: list[tuple[str, Callable[[Lines], object], str]] = [
    ("line nested 100,000 deep", _raw(HEADER + DEEP + "\n"), "json_too_deep"),
    ("header nested 100,000 deep", _raw(DEEP + "\n"), "json_too_deep"),
    ("payload nested 100,000 deep", _payload(1, DEEP), "json_too_deep"),
    ("payload nested 200 deep", _payload(1, "[" * 200 + "]" * 200), "json_too_deep"),
    ("5,000-digit position", _raw(lambda ls: _dumps(_partial(ls)).replace(
        '"position": 1,', f'"position": {HUGE},', 1)), "invalid_export"),
    ("5,000-digit integer in a payload", _payload(1, lambda p: p.replace(
        '"profile":null', f'"profile":{HUGE}')), "invalid_export"),
    ("version 2**63", _event(2, version=2**63), "export_value_out_of_range"),
    ("position 2**63", _event(1, position=2**63), "export_value_out_of_range"),
    ("schema_version -1", _event(1, schema_version=-1), "export_value_out_of_range"),
    ("schema_version 0", _event(1, schema_version=0), "export_value_out_of_range"),
    ("schema_version 99", _event(1, schema_version=99), "export_value_out_of_range"),
    ("position 1e30", _event(1, position=1e30), "invalid_export"),
    ("position -1", _event(1, position=-1), "export_value_out_of_range"),
    ("position 0", _event(1, position=0), "export_value_out_of_range"),
    ("position true", _event(1, position=True), "invalid_export"),
    ("position repeated", _dup_position, "export_out_of_order"),
    ("position gap in a complete export", _gap, "export_out_of_order"),
    ("version 0", _event(2, version=0), "export_value_out_of_range"),
    ("version skipped", _event(3, version=7), "export_out_of_order"),
    ("unknown field in an event", _event(1, extra=1), "export_unknown_field"),
    ("unknown field beside the event", lambda ls: [*_partial(ls)[:1],
                                                   {**ls[1], "note": "x"}, *ls[2:]],
     "invalid_export"),
    ("blob lines removed", _drop_blobs, "export_blob_missing"),
    ("blob size wrong", _blob(size=1), "invalid_export"),
    ("blob sha256 wrong", _blob(sha256="0" * 64), "invalid_export"),
    ("blob not base64", _blob(base64="%%%"), "invalid_export"),
    ("blob unknown field", _blob(extra=True), "invalid_export"),
    ("recorded_at yesterday", _event(1, recorded_at="yesterday"), "export_bad_time"),
    ("recorded_at without zone", _event(1, recorded_at="2026-01-01T00:00:00.000000"),
     "export_bad_time"),
    ("recorded_at not UTC", _event(1, recorded_at="2026-01-01T00:00:00.000000+02:00"),
     "export_bad_time"),
    ("recorded_at without microseconds", _event(1, recorded_at="2026-01-01T00:00:00+00:00"),
     "export_bad_time"),
    ("id with ESC", _event(1, id="a\x1b[2Jb"), "invalid_identifier"),
    ("id empty", _event(1, id=""), "invalid_identifier"),
    ("id a lone surrogate", _event(1, id="\ud800"), "invalid_identifier"),
    ("stream with a newline", _event(1, stream="trace:\nnova"), "invalid_identifier"),
    ("trace_id with C1 CSI", _event(1, trace_id="t\x9b2J"), "invalid_identifier"),
    ("trace_id a number", _event(1, trace_id=7), "invalid_identifier"),
    ("hash not hex", _event(1, hash="z" * 64), "invalid_export"),
    ("payload not JSON", _payload(1, "{not json"), "invalid_export"),
    ("payload of another type", _payload(1, lambda p: p.replace(
        '"trace.opened"', '"attempt.started"')), "invalid_export"),
    ("payload with an extra field", _payload(1, lambda p: p[:-1] + ',"x":1}'), "invalid_event"),
    ("payload re-spelled with spaces", _payload(1, lambda p: p.replace(",", ", ")),
     "export_payload_not_canonical"),
    ("payload missing a field", _payload(2, lambda p: p.replace('"attempt_id":"nova",', "")),
     "invalid_event"),
    ("payload with NaN", _payload(1, lambda p: p.replace('"profile":null', '"profile":NaN')),
     "invalid_json_constant"),
    ("payload with a duplicated key", _payload(1, lambda p: p[:-1] + ',"type":"trace.opened"}'),
     "duplicate_json_key"),
    ("unknown event type", _event(1, type="evil.event"), "invalid_export"),
    ("header version 2**63", lambda ls: [{**ls[0], "version": 2**63}, *ls[1:]],
     "invalid_export"),
    ("header version as text", lambda ls: [{**ls[0], "version": "1"}, *ls[1:]],
     "invalid_export"),
    ("header complete as text", lambda ls: [{**ls[0], "complete": "yes"}, *ls[1:]],
     "invalid_export"),
    ("changed text in a complete export", lambda ls: [*ls[:1], *[
        {"event": {**line["event"], "payload": line["event"]["payload"].replace(
            "framed capture", "framed captura")}} if i == 1 else line
        for i, line in enumerate(ls[1:], 1)]],
     "export_hash_mismatch"),
]


@pytest.mark.parametrize("mutate, code", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_export_is_refused_and_nothing_is_imported(
        export_lines: list, tmp_path: Path, mutate: Callable, code: str) -> None:
    changed = mutate(json.loads(json.dumps(export_lines)))
    path = tmp_path / "hostile.jsonl"
    path.write_text(changed if isinstance(changed, str) else _dumps(changed), "utf-8",
                    errors="surrogatepass")
    target = tmp_path / "target.db"
    started = time.perf_counter()
    exit_code, _, stderr = run("import", str(path), "--json", db=target)
    assert time.perf_counter() - started < 5
    assert (exit_code, json.loads(stderr)["error"]) == (2, code), stderr[:300]
    assert count_events(target) == 0


def test_the_untouched_export_imports(export_lines: list, tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text(_dumps(export_lines), "utf-8")
    target = tmp_path / "target.db"
    assert run("import", str(path), db=target)[0] == 0
    assert json.loads(run("verify", "--json", db=target)[1])["ok"] is True


def test_an_endless_line_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``import - < /dev/zero``: one line that never ends stops at the line bound."""
    import io

    from tracestore.errors import InputError
    from tracestore.export import import_checks
    from tracestore.export.jsonl import read_export

    zeros = io.StringIO(HEADER + "\x00" * 5000)
    monkeypatch.setattr(import_checks, "MAX_LINE_CHARS", 1000)
    parsed = read_export(zeros, "-")
    with pytest.raises(InputError) as caught:
        list(parsed.rows)
    assert caught.value.code == "input_too_large"
    with open("/dev/zero", encoding="utf-8") as endless, pytest.raises(InputError) as caught:
        read_export(endless, "/dev/zero")
    assert caught.value.code == "input_too_large"


def test_the_table_has_the_sweeps_44_cases_or_more() -> None:
    assert len(CASES) >= 44 and len({c[0] for c in CASES}) == len(CASES)
