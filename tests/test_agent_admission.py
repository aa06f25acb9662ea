"""Admission re-derived from seed 001's recorded live comparison, and seed 001's codes."""

from __future__ import annotations

from typing import Any

import pytest

from agenthelp import report, run_of, trial
from tracestore.agent import codes as C
from tracestore.agent.admission import check_citations, normalized_terms, validate_decision

# Seed 001's table (case / repeat, path, stop reason, model calls) plus the recorded counters.
RECORDED = {
    "overwrite-fixed-1": ("answered", "citation_contract_passed", (1, 1, 2, 423)),
    "overwrite-agent-1": ("answered", "citation_contract_passed", (3, 1, 1, 224)),
    "serialize-and-save-fixed-1": ("answered", "citation_contract_passed", (1, 1, 2, 423)),
    "serialize-and-save-agent-1": ("answered", "citation_contract_passed", (6, 2, 3, 577)),
    "newline-version-fixed-1": ("incomplete", "model_stopped", (1, 1, 1, 174)),
    "newline-version-agent-1": ("failed", "duplicate_query", (3, 1, 1, 174)),
    "unsupported-fixed-1": ("answered", "citation_contract_passed", (1, 1, 2, 423)),
    "unsupported-agent-1": ("answered", "citation_contract_passed", (3, 1, 1, 224)),
    "overwrite-fixed-2": ("answered", "citation_contract_passed", (1, 1, 2, 423)),
    "overwrite-agent-2": ("answered", "citation_contract_passed", (3, 1, 1, 224)),
    "serialize-and-save-fixed-2": ("answered", "citation_contract_passed", (1, 1, 2, 423)),
    "serialize-and-save-agent-2": ("answered", "citation_contract_passed", (6, 2, 3, 577)),
    "newline-version-fixed-2": ("incomplete", "model_stopped", (1, 1, 1, 174)),
    "newline-version-agent-2": ("incomplete", "model_stopped", (5, 3, 1, 174)),
    "unsupported-fixed-2": ("answered", "citation_contract_passed", (1, 1, 2, 423)),
    "unsupported-agent-2": ("answered", "citation_contract_passed", (3, 1, 1, 224)),
}


def test_the_fixture_is_the_complete_report() -> None:
    assert [t["id"] for t in report()["trials"]] == list(RECORDED)
    assert report()["summary"] == {"fixed": {"pass": 4, "fail": 2, "incomplete": 2},
                                   "agent": {"pass": 4, "fail": 3, "incomplete": 1}}


@pytest.mark.parametrize("trial_id", list(RECORDED))
def test_rederived_admission_reproduces_each_recorded_trial(trial_id: str) -> None:
    status, reason, counters = RECORDED[trial_id]
    run, admission = run_of(trial(trial_id))
    usage = dict(zip(("model_calls", "searches", "reads", "source_bytes"), counters))
    assert (run.finished.status, run.finished.reason, run.finished.usage) == (
        status, reason, usage)
    assert (admission.status, admission.reason, dict(admission.usage)) == (
        status, reason, usage)
    assert admission.findings == () and admission.agrees
    assert len(admission.verdicts) == counters[0]
    if status == "answered":
        recorded = trial(trial_id)["result"]["citations"]
        assert list(admission.citations) == recorded


def test_duplicate_query_is_refused_on_normalized_terms() -> None:
    _, admission = run_of(trial("newline-version-agent-1"))
    assert [(v.action, v.stage, v.code) for v in admission.verdicts] == [
        ("search", "admitted", None), ("read", "admitted", None),
        ("search", "refused", "duplicate_query")]
    assert normalized_terms("Path read_text newline encoding") == normalized_terms(
        "Path.read_text newline encoding") == ("encoding", "newline", "path", "read", "text")


def test_the_agent_refines_after_a_read() -> None:
    _, admission = run_of(trial("serialize-and-save-agent-1"))
    assert [(v.action, v.stage) for v in admission.verdicts] == [
        ("search", "admitted"), ("read", "admitted"), ("read", "admitted"),
        ("search", "admitted"), ("read", "admitted"), ("answer", "admitted")]


# --- validate_decision: every code, each from one changed field -------------------------

def _valid(action: str = "search", **fields: Any) -> dict[str, Any]:
    base = {"action": action, "assessment": "need more", "query": "", "source_id": "",
            "answer": "", "citations": []}
    base.update(fields)
    return base


@pytest.mark.parametrize("decision, code", [
    ("not an object", C.INVALID_DECISION),
    ({"action": "shell"}, C.INVALID_DECISION),
    (_valid("shell"), C.UNKNOWN_ACTION),
    (_valid(query=7), C.INVALID_DECISION),
    (_valid(query="x" * 2001), C.INVALID_DECISION),
    (_valid(query="q", assessment="  "), C.INVALID_DECISION),
    (_valid("answer", answer="a", citations=[{"source_id": "s", "quote": "q"}] * 7),
     C.INVALID_DECISION),
    (_valid("answer", answer="a", citations=[{"source_id": "s"}]), C.INVALID_CITATION),
    (_valid("answer", answer="a", citations=[{"source_id": "s", "quote": " "}]),
     C.INVALID_CITATION),
    (_valid("answer", answer="a", citations=[{"source_id": "s", "quote": "q" * 2001}]),
     C.INVALID_CITATION),
    (_valid("read", source_id="s", query="q"), C.UNEXPECTED_ACTION_FIELDS),
    (_valid("search", query="q", answer="a"), C.UNEXPECTED_ACTION_FIELDS),
    (_valid("search", query="  "), C.INVALID_QUERY),
    (_valid("read"), C.INVALID_SOURCE),
    (_valid("answer", answer="a"), C.MISSING_ANSWER_EVIDENCE),
    (_valid("answer", answer=" ", citations=[{"source_id": "s", "quote": "q"}]),
     C.MISSING_ANSWER_EVIDENCE),
])
def test_validate_decision_codes(decision: Any, code: str) -> None:
    assert validate_decision(decision) == code


def test_bounds_are_inclusive() -> None:
    assert validate_decision(_valid(query="x" * 2000)) is None
    six = [{"source_id": "s", "quote": "q"}] * 6
    assert validate_decision(_valid("answer", answer="a", citations=six)) is None


def test_check_citations_needs_read_text_quote_and_hash() -> None:
    row = trial("overwrite-agent-1")["result"]["observations"][1]["result"]
    cite = {"citations": [{"source_id": "path-write", "quote": "An existing file is overwritten."}]}
    assert check_citations(cite, {"path-write": row}) == (None, (
        {"source_id": "path-write", "quote": "An existing file is overwritten.",
         "url": "https://docs.python.org/3.12/library/pathlib.html#pathlib.Path.write_text"},))
    assert check_citations(cite, {})[0] == C.UNREAD_OR_CHANGED_CITATION
    altered = {"citations": [{"source_id": "path-write", "quote": "A backup is kept."}]}
    assert check_citations(altered, {"path-write": row})[0] == C.UNREAD_OR_CHANGED_CITATION
    changed = {**row, "text": row["text"] + " Backups are kept for 7 days."}
    assert check_citations(cite, {"path-write": changed})[0] == C.UNREAD_OR_CHANGED_CITATION


def test_every_agent_code_is_described_and_documented() -> None:
    from pathlib import Path
    import re

    doc = (Path(__file__).resolve().parents[1] / "docs" / "agent.md").read_text("utf-8")
    documented = set(re.findall(r"`([a-z][a-z0-9_]*)`", doc))
    codes = [v for k, v in vars(C).items() if k.isupper() and isinstance(v, str)
             and k != "AGENT_API"]
    for code in codes:
        assert code in C.DESCRIPTIONS, code
        assert code in documented, f"{code} missing from docs/agent.md"
