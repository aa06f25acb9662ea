"""Issue 11, items 9 and 10: the trace's origin is what the person ingesting says (a decoded
JSON array is not assumed synthetic), and settings are filled from what the bytes show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clihelp import count_events, run

ROOT = Path(__file__).resolve().parents[1]
S1 = ROOT / "fixtures" / "projections" / "s1.json"
GPT4O = ROOT / "fixtures" / "real" / "openai-responses" / "text-gpt-4o.sse"
NOVA = ROOT / "fixtures" / "real" / "bedrock" / "nova-micro-text.bin"


def fields(db: Path, attempt: str, template: str = "application-record") -> dict[str, dict]:
    code, out, err = run("review", attempt, "--template", template, "--json", db=db)
    assert code == 0, err
    return {f["name"]: f for f in json.loads(out)["fields"]}


def origin_of(db: Path, attempt: str) -> str:
    return fields(db, attempt)["trace_origin"]["value"].split(";")[0]


@pytest.mark.parametrize("args, origin", [
    ([], "origin not stated: a decoded JSON array, synthetic projection or decoded capture "
         "(ingest --origin says which)"),
    (["--origin", "synthetic"], "synthetic projection"),
    (["--origin", "decoded"], "decoded capture"),
])
def test_a_projection_says_the_origin_it_was_given(args: list[str], origin: str,
                                                   tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    assert run("ingest", str(S1), "--attempt", "s1", *args, db=db)[0] == 0
    assert origin_of(db, "s1") == origin


@pytest.mark.parametrize("args, origin", [
    ([], "framed capture"), (["--origin", "capture"], "framed capture"),
    (["--origin", "synthetic"], "synthetic framed capture"),
])
def test_a_raw_capture_says_framed_capture(args: list[str], origin: str,
                                           tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    assert run("ingest", str(GPT4O), "--attempt", "g", *args, db=db)[0] == 0
    assert origin_of(db, "g") == origin


@pytest.mark.parametrize("path, origin, code", [
    (GPT4O, "decoded", "origin_mismatch"), (S1, "capture", "origin_mismatch"),
    (S1, "guessed", "unknown_origin"),
])
def test_an_origin_that_contradicts_the_input_is_refused(path: Path, origin: str, code: str,
                                                         tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    exit_code, _, err = run("ingest", str(path), "--origin", origin, db=db)
    assert (exit_code, count_events(db)) == (2, 0) and f"error[{code}]" in err


def test_a_trace_keeps_one_origin(tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    assert run("ingest", str(S1), "--attempt", "a", "--trace", "t", "--origin", "decoded",
               db=db)[0] == 0
    stored = count_events(db)
    code, _, err = run("ingest", str(S1), "--attempt", "b", "--trace", "t", "--origin",
                       "synthetic", db=db)
    assert (code, count_events(db)) == (2, stored) and "error[trace_conflict]" in err


def test_settings_name_the_model_the_bytes_show(tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    assert run("ingest", str(GPT4O), "--attempt", "g", db=db)[0] == 0
    got = fields(db, "g")
    created = 4  # trace.opened, attempt.started, capture.stored, then response.created
    assert (got["source_settings"]["value"], got["source_settings"]["evidence"]) == (
        f"api openai-responses; model gpt-4o-2024-08-06 (named by the bytes at #{created}); "
        "request settings UNKNOWN (not recorded, not in the bytes)", [2, created])
    assert got["target_settings"]["value"] == (
        f"api openai-responses; profile openai-responses-text; model gpt-4o-2024-08-06 (named "
        f"by the bytes at #{created}); request settings UNKNOWN (not recorded, not in the bytes)")
    assert got["target_settings"]["evidence"] == [2, created]


def test_bytes_without_a_model_leave_it_unknown(tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    assert run("ingest", str(NOVA), "--attempt", "n", db=db)[0] == 0
    got = fields(db, "n")
    assert (got["source_settings"]["value"], got["source_settings"]["source"]) == (
        "UNKNOWN", "unknown")
    assert got["target_settings"]["value"] == (
        "api bedrock-converse-stream; profile bedrock-converse-text; model UNKNOWN (the bytes "
        "do not name it); request settings UNKNOWN (not recorded, not in the bytes)")
