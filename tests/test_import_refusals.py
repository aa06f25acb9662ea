"""``import`` refuses an export the store would not have written, each with its own code and
a sentence naming the line, and writes nothing: the target store keeps its event count and
its head.

Cases: a header with an unknown field, a frame whose ``index`` is 10**30, an event in stream
``attempt:nova`` whose payload says ``attempt_id: "other"``, and an event id given twice.
Each starts from a real export flipped to ``"complete": false``, so the recomputed hash chain
cannot be what catches it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from clihelp import count_events, run

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"
FRAME = 4  # line 4 of the export: the first frame.received (position 4)


@pytest.fixture(scope="module")
def export_lines(tmp_path_factory: pytest.TempPathFactory) -> list:
    folder = tmp_path_factory.mktemp("src")
    db = folder / "src.db"
    assert run("ingest", str(CAPTURE), "--attempt", "nova", db=db)[0] == 0
    out = folder / "out.jsonl"
    assert run("export", "--out", str(out), db=db)[0] == 0
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    lines[0]["complete"] = False
    assert lines[FRAME]["event"]["type"] == "frame.received"
    return lines


def _payload(**changes: object) -> Callable[[list], list]:
    def mutate(lines: list) -> list:
        event = lines[FRAME]["event"]
        payload = {**json.loads(event["payload"]), **changes}
        # The store's own spelling (compact, keys in model order), so canonical-form checks
        # pass and the refusal is the one under test.
        event["payload"] = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        return lines
    return mutate


def _header_field(lines: list) -> list:
    lines[0]["comment"] = "hand-made"
    return lines


def _duplicate_id(lines: list) -> list:
    lines[FRAME + 1]["event"]["id"] = lines[FRAME]["event"]["id"]
    return lines


CASES: dict[str, tuple[Callable[[list], list], str, int, str]] = {
    "header with an unknown field": (
        _header_field, "export_unknown_field", 1,
        "line 1: the header has unknown fields ['comment']"),
    "frame index 10**30": (
        _payload(index=10**30), "export_value_out_of_range", FRAME + 1,
        "field 'index' of the frame.received payload is 10000000000000000000…, outside a "
        "64-bit signed integer"),
    "payload names another attempt than its stream": (
        _payload(attempt_id="other"), "export_stream_mismatch", FRAME + 1,
        "an event in stream 'attempt:nova' says attempt_id 'other'"),
    "event id twice": (
        _duplicate_id, "import_duplicate_event", FRAME + 2,
        "appears twice (an event id is unique in a store)"),
}


def _state(db: Path) -> tuple[int, int, str]:
    code, out, err = run("verify", "--json", db=db)
    assert code == 0, err
    result = json.loads(out)
    return count_events(db), result["count"], result["head_hash"]


@pytest.mark.parametrize("name", list(CASES))
def test_the_import_is_refused_with_its_code_and_nothing_is_written(
        export_lines: list, tmp_path: Path, name: str) -> None:
    mutate, code, line, sentence = CASES[name]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(item) + "\n"
                            for item in mutate(json.loads(json.dumps(export_lines)))), "utf-8")
    target = tmp_path / "target.db"
    assert run("init", db=target)[0] == 0
    before = _state(target)
    exit_code, stdout, stderr = run("import", str(path), "--json", db=target)
    error = json.loads(stderr)
    assert (exit_code, stdout, error["error"], error["line"]) == (2, "", code, line)
    assert error["message"].startswith(f"{path} line {line}: ")
    assert sentence in error["message"]
    assert _state(target) == before == (0, 0, before[2])


def test_the_untouched_partial_export_imports(export_lines: list, tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in export_lines), "utf-8")
    target = tmp_path / "target.db"
    assert run("import", str(path), db=target)[0] == 0
    assert count_events(target) == len(export_lines) - 2  # the header and one blob line
