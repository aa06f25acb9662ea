"""Seed 004's envelope projected from an attempt's events: ok / empty / partial / error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.projections.envelope import NO_ANSWER, SORRY, project_envelope
from tracestore.projections.release import decide_with_view
from tracestore.ingest.replay import parse_scenario, preview_replay
from test_contracts_seed000 import SEED000, ingest, frames_of

ROOT = Path(__file__).resolve().parents[1]


def seed003(name: str, attempt: str) -> Any:
    scenario = parse_scenario(json.loads((ROOT / "fixtures" / "seed003" / f"{name}.json")
                                         .read_text(encoding="utf-8")))
    _, events = preview_replay(scenario)
    decision, view = decide_with_view(events, attempt)
    envelope = project_envelope(decision, view)
    return envelope.to_dict() if envelope else None


def env(state: str, text: str, code: str = "ok", retryable: bool = False,
        result: Any = None) -> dict[str, Any]:
    return {"schema_version": 2, "state": state, "text": text, "code": code,
            "retryable": retryable, "result": result}


ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."


def test_plain_text_states() -> None:
    assert seed003("t1", "t1") == env("ok", ANSWER)
    # dropped stream: partial, the text so far, retry may help
    t4 = seed003("t4", "t4")
    assert (t4["state"], t4["code"], t4["retryable"]) == ("partial", "interrupted", True)
    assert ANSWER.startswith(t4["text"]) and t4["text"]
    # cut by the length limit: partial, but a retry would be cut again
    t3 = seed003("t3", "t3")
    assert (t3["state"], t3["code"], t3["retryable"]) == ("partial", "truncated", False)
    assert seed003("s2", "s2") == env("error", SORRY, "stream_error", True)
    assert seed003("t5", "t5") == env("error", SORRY, "semantic_rejected")
    assert seed003("t6", "t6") == env("error", SORRY, "tool_use_not_allowed")


def test_a_stopped_attempt_shows_only_the_text_before_its_stop() -> None:
    t7 = seed003("t7", "t7")
    assert t7 == env("partial", "The public desk opens Wednesday from 09:00 to 17:00 UTC. ",
                     "stopped", True)
    assert seed003("t8", "t8-new") == env("ok", ANSWER)


def test_structured_states() -> None:
    events, d = ingest((SEED000 / "replace-file.ndjson").read_bytes())
    from tracestore.projections.attempt import project_attempt

    reply = {"status": "answered", "answer": "Yes, an existing file is overwritten.",
             "source_ids": ["path-write"]}
    assert project_envelope(d, project_attempt(events, "a")).to_dict() == env(
        "ok", "Yes, an existing file is overwritten.", result=reply)
    # half a JSON text is never shown: an interrupted structured stream is an error
    events, d = ingest((SEED000 / "controlled-transport-eof-before-terminal.ndjson").read_bytes())
    assert project_envelope(d, project_attempt(events, "a")).to_dict() == env(
        "error", SORRY, "interrupted", True)
    events, d = ingest(frames_of('{"status": "answered", "status": "x"}'))
    assert project_envelope(d, project_attempt(events, "a")).to_dict() == env(
        "error", SORRY, "invalid_answer_json", True)
    events, d = ingest((SEED000 / "controlled-local-error.ndjson").read_bytes())
    assert project_envelope(d, project_attempt(events, "a")).to_dict() == env(
        "error", SORRY, "stream_error", True)


@pytest.mark.parametrize("data", [frames_of(), frames_of(" ", "\n")])
def test_an_empty_answer_with_a_normal_ending_is_the_empty_state(data: bytes) -> None:
    from tracestore.projections.attempt import project_attempt

    events, d = ingest(data)
    assert (d.status, d.eligible) == ("held", False)
    assert project_envelope(d, project_attempt(events, "a")).to_dict() == env(
        "empty", NO_ANSWER, "empty")


def test_pending_and_superseded_attempts_have_no_envelope() -> None:
    scenario = parse_scenario(json.loads((ROOT / "fixtures" / "seed003" / "t8.json")
                                         .read_text(encoding="utf-8")))
    _, events = preview_replay(scenario)
    d, view = decide_with_view(events, "t8-new", upto=16)
    assert d.status == "pending" and project_envelope(d, view) is None


def test_review_record_describes_contract_failures_with_positions(tmp_path: Path) -> None:
    from clihelp import run

    db = tmp_path / "r.db"
    data = frames_of('{"status": "answered", "answer": "\\u001b[31mYes", '
                     '"source_ids": ["path-read"]}')
    capture = tmp_path / "bad.ndjson"
    capture.write_bytes(data)
    code, _, err = run("ingest", str(capture), "--attempt", "bad", "--contract",
                       str(ROOT / "fixtures/contracts/seed000-rag.json"), "--binding",
                       str(SEED000 / "replace-file.binding.json"), db=db)
    assert code == 0, err
    code, out, _ = run("review", "bad", "--format", "json", db=db)
    fields = {f["name"]: f for f in json.loads(out)["fields"]}
    candidate = fields["candidate"]
    assert candidate["value"].endswith(
        "structured reply under contract seed000-rag: unknown_context_citation (source_ids/0: "
        "cited id 'path-read' is not in the context bound to this request); binding checked")
    assert "\x1b" not in out
    release = json.loads(run("release", "bad", "--json", db=db)[1])
    assert release["envelope"] == env("error", SORRY, "unknown_context_citation", True)
    assert release["decided_at_position"] in candidate["evidence"]


def test_review_record_shows_the_envelope_of_a_structured_attempt(tmp_path: Path) -> None:
    from clihelp import run

    db = tmp_path / "r.db"
    code, _, err = run("ingest", str(SEED000 / "replace-file.ndjson"), "--attempt", "rf",
                       "--contract", str(ROOT / "fixtures/contracts/seed000-rag.json"),
                       "--binding", str(SEED000 / "replace-file.binding.json"), db=db)
    assert code == 0, err
    fields = {f["name"]: f for f in json.loads(run("review", "rf", "--format", "json",
                                                   db=db)[1])["fields"]}
    assert fields["release_decision"]["value"].endswith("envelope ok/ok, validated result")
    assert fields["candidate"]["value"].endswith(
        "structured reply under contract seed000-rag: ok; cites path-write; binding checked")


def test_hostile_reply_text_renders_inert_in_the_release_table(tmp_path: Path) -> None:
    from clihelp import run

    db = tmp_path / "h.db"
    capture = tmp_path / "h.ndjson"
    capture.write_bytes(frames_of('{"status": "answered", "answer": "x", '
                                  '"source_ids": ["\\u001b]8;;evil\\u0007[red]\\u202e"]}'))
    assert run("ingest", str(capture), "--attempt", "h", "--contract",
               str(ROOT / "fixtures/contracts/seed000-rag.json"), "--binding",
               str(SEED000 / "replace-file.binding.json"), db=db)[0] == 0
    code, out, _ = run("release", "h", db=db)
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "unknown_context_citation" in out and "[red]" in out  # markup shown, not applied
