"""Review fields of agent runs: authority from admitted/refused decisions with positions,
candidate naming cited sources and whether quotes matched; refusals never hidden."""

from __future__ import annotations

import json
from pathlib import Path

from agent_mutations import OUT
from agenthelp import events_of, report, trial
from clihelp import run
from tracestore.review.context import build_context
from tracestore.review.derivers import get_deriver

LIMITS = "limits: model_calls 9, searches 3, reads 4, source_bytes 4096, seconds 180"


def _field(events: list, attempt: str, name: str, template: str = "trace-review"):
    ctx = build_context(events, attempt, template=template, version="test")
    return get_deriver(name)(ctx)


def test_authority_lists_admitted_and_refused_with_positions() -> None:
    events = events_of(trial("newline-version-agent-1"))
    got = _field(events, "newline-version-agent-1", "authority")
    assert got.value == (
        "Agent run (agent path) with tools search, read only, admitted by application code "
        f"before execution; {LIMITS}; admitted: search \"Path read_text newline encoding\" at "
        "#7; read \"path-read-3-13\" at #11; refused: search \"Path.read_text newline "
        "encoding\" (duplicate_query) at #15; verdicts implied by the recorded run result; "
        "re-derived admission agrees (failed/duplicate_query)")
    assert got.evidence == (4, 7, 11, 15, 16)


def test_authority_names_a_verdict_the_rederivation_does_not_share() -> None:
    value = json.loads((OUT / "unknown-action.json").read_text(encoding="utf-8"))
    got = _field(events_of(value), value["id"], "authority")
    # A shell action asks for no tool observation: the recorded search result lands last.
    assert "admitted: \"shell\" (not a tool) at #7; read \"path-write\" at #10; answer at #13" \
        in got.value
    assert got.value.endswith(
        "DISAGREES with re-derived admission: \"shell\" (not a tool) at #7: re-derived refused "
        "unknown_action; read \"path-write\" at #10: re-derived not_reached; answer at #13: "
        "re-derived not_reached")


def test_candidate_names_cited_sources_and_quote_matches() -> None:
    events = events_of(trial("serialize-and-save-fixed-1"))
    got = _field(events, "serialize-and-save-fixed-1", "candidate")
    assert got.value.startswith(
        "Answered (citation_contract_passed) at #11; cited: \"json-text\" (quote matches read "
        "at #6); \"path-write\" (quote matches read at #7); re-derived: "
        "answered/citation_contract_passed; text: \"To serialize an object")
    assert got.evidence == (6, 7, 11)


def test_candidate_shows_an_altered_quote() -> None:
    value = json.loads((OUT / "altered-quote.json").read_text(encoding="utf-8"))
    got = _field(events_of(value), value["id"], "candidate")
    assert ("cited: \"path-write\" (quote DOES NOT MATCH read at #12); re-derived: "
            "failed/unread_or_changed_citation") in got.value


def test_candidate_of_a_run_without_answer() -> None:
    events = events_of(trial("newline-version-fixed-1"))
    got = _field(events, "newline-version-fixed-1", "candidate")
    assert got.value == ("No answer: the run ended incomplete (model_stopped) at #10; nothing "
                         "to release")


def test_review_cli_application_record_tool_authority(db_file: Path) -> None:
    path = Path(__file__).resolve().parents[1] / "fixtures" / "agent" / "seed001-live-comparison.json"
    assert run("ingest", str(path), db=db_file)[0] == 0
    code, out, _ = run("review", "overwrite-agent-1", "--template", "application-record",
                       "--format", "json", db=db_file)
    assert code == 0
    fields = {f["name"]: f for f in json.loads(out)["fields"]}
    assert fields["tool_authority"]["value"].startswith("Agent run (agent path)")
    assert "refused: none" in fields["tool_authority"]["value"]
    assert fields["candidate_assembly"]["value"].startswith(
        "Answered (citation_contract_passed) at #")
    assert report()["trials"][1]["id"] == "overwrite-agent-1"


def test_evidence_gap_names_what_an_agent_log_cannot_show() -> None:
    value = trial("overwrite-agent-1")
    value["provider_usage"] = value["provider_usage"][:2]
    got = _field(events_of(value), "overwrite-agent-1", "evidence_gap")
    assert got.value == (
        "Not in the log: any destination write; the application's own admission log "
        "(verdicts implied by the run result); model request bodies (3 of 3 calls have no "
        "digest); provider usage for 1 of 3 model calls; raw model replies (decisions are "
        "stored decoded); per-call times (the deadline is judged on the run's total time)")
    assert "drain" not in got.value
