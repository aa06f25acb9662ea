"""Seed 001's admission rules the recorded comparison never exercises, each from one recorded
trial with one fact changed: the re-derived status, reason, verdicts, usage and findings are
written here by hand from seed 001's controller (``run`` in the seed)."""

from __future__ import annotations

from typing import Any

from agenthelp import run_of, trial
from tracestore.agent import codes as C

PLAIN = {"assessment": "next step", "query": "", "source_id": "", "answer": "", "citations": []}


def _finish(value: dict[str, Any], status: str, reason: str, usage: tuple[int, ...]) -> None:
    """What seed 001's ``finish`` records for a run without answer."""
    value["result"].update(status=status, reason=reason, answer="", citations=[],
                           usage=dict(zip(("model_calls", "searches", "reads",
                                           "source_bytes"), usage)))
    value.pop("checks", None)


def _verdicts(admission: Any) -> list[tuple[Any, str, str | None]]:
    return [(v.action, v.stage, v.code) for v in admission.verdicts]


def test_the_fixed_paths_model_may_not_ask_for_a_tool() -> None:
    value = trial("overwrite-fixed-1")
    value["result"]["decisions"] = [{**PLAIN, "action": "search", "query": "more"}]
    _finish(value, "failed", "fixed_policy_tool_request", (1, 1, 2, 423))
    _, admission = run_of(value)
    assert (admission.status, admission.reason, admission.findings) == (
        "failed", C.FIXED_POLICY_TOOL_REQUEST, ())
    assert _verdicts(admission) == [("search", "refused", C.FIXED_POLICY_TOOL_REQUEST)]


def test_a_second_read_of_a_source_is_refused() -> None:
    value = trial("overwrite-agent-1")
    decisions = value["result"]["decisions"]
    decisions[2] = {**PLAIN, "action": "read", "source_id": "path-write"}
    _finish(value, "failed", "duplicate_read", (3, 1, 1, 224))
    _, admission = run_of(value)
    assert (admission.status, admission.reason, admission.findings) == (
        "failed", C.DUPLICATE_READ, ())
    assert _verdicts(admission)[-1] == ("read", "refused", C.DUPLICATE_READ)


def test_a_read_over_the_byte_allowance_ends_the_run_incomplete() -> None:
    value = trial("overwrite-agent-1")  # path-write is 224 bytes; allow 200
    result = value["result"]
    result["limits"]["source_bytes"] = 200
    result["decisions"], result["observations"] = result["decisions"][:2], result["observations"][:1]
    _finish(value, "incomplete", "read_or_byte_limit", (2, 1, 0, 0))
    _, admission = run_of(value)
    assert (admission.status, admission.reason, dict(admission.usage), admission.findings) == (
        "incomplete", C.READ_OR_BYTE_LIMIT,
        {"model_calls": 2, "searches": 1, "reads": 0, "source_bytes": 0}, ())
    assert _verdicts(admission)[-1] == ("read", "refused", C.READ_OR_BYTE_LIMIT)
    # The size of a source never read is not in the record: said, not guessed.
    assert admission.notes == ("read size not recorded; byte-limit refusal taken as recorded",)


def test_an_admitted_search_whose_tool_failed_still_consumes_its_allowance() -> None:
    value = trial("overwrite-agent-1")
    result = value["result"]
    result["decisions"], result["observations"] = result["decisions"][:1], []
    _finish(value, "failed", "search_backend_unavailable", (1, 1, 0, 0))
    _, admission = run_of(value)
    assert (admission.status, admission.reason, dict(admission.usage), admission.findings) == (
        "failed", "search_backend_unavailable",
        {"model_calls": 1, "searches": 1, "reads": 0, "source_bytes": 0}, ())
    assert _verdicts(admission) == [("search", "admitted", None)]
    assert admission.notes == ("tool error as recorded: search_backend_unavailable",)


def test_an_admitted_read_without_observation_in_an_answered_run() -> None:
    value = trial("overwrite-agent-1")
    del value["result"]["observations"][1]
    recorded, admission = run_of(value)
    assert (admission.status, admission.reason) == ("failed", C.MISSING_OBSERVATION)
    assert [(f.code, f.position) for f in admission.findings] == [
        (C.MISSING_OBSERVATION, recorded.proposals[1].position),
        (C.ADMISSION_DISAGREEMENT, recorded.proposals[2].verdict_position),
        (C.OUTCOME_DISAGREEMENT, recorded.finished_position),
        (C.USAGE_DISAGREEMENT, recorded.finished_position)]


def test_an_observation_of_another_call_than_the_admitted_one() -> None:
    value = trial("overwrite-agent-1")
    read = value["result"]["observations"][1]
    read["arguments"] = {"source_id": "path-read"}
    recorded, admission = run_of(value)
    assert (admission.status, admission.reason) == ("failed", C.OBSERVATION_MISMATCH)
    codes = [(f.code, f.position) for f in admission.findings]
    assert codes[0] == (C.OBSERVATION_MISMATCH, recorded.observations[1].position)
    assert C.UNADMITTED_OBSERVATION in [c for c, _ in codes]


def test_a_search_observation_carrying_passage_text() -> None:
    value = trial("overwrite-agent-1")
    search = value["result"]["observations"][0]["result"]
    search["candidates"][0]["text"] = "An existing file is overwritten."
    recorded, admission = run_of(value)
    assert (admission.status, admission.reason) == ("answered", C.CITATION_CONTRACT_PASSED)
    assert [(f.code, f.position) for f in admission.findings] == [
        (C.SEARCH_RESULT_NOT_METADATA, recorded.observations[0].position)]


def test_a_recorded_citation_url_that_is_not_the_read_records() -> None:
    value = trial("overwrite-agent-1")
    value["result"]["citations"][0]["url"] = "https://example.invalid/overwrite"
    recorded, admission = run_of(value)
    assert (admission.status, admission.reason) == ("answered", C.CITATION_CONTRACT_PASSED)
    assert admission.citations[0]["url"] == (
        "https://docs.python.org/3.12/library/pathlib.html#pathlib.Path.write_text")
    assert [(f.code, f.position) for f in admission.findings] == [
        (C.CITATION_DISAGREEMENT, recorded.finished_position)]


def test_an_admitted_read_whose_tool_failed_still_consumes_reads_and_bytes() -> None:
    """Seed 001 counts the read and its bytes before the tool runs; the size of a read that
    never returned is not in the record, so the recorded byte total is taken (noted) when it
    fits the allowance, and refused as a disagreement when it does not."""
    value = trial("overwrite-agent-1")
    result = value["result"]
    result["decisions"], result["observations"] = result["decisions"][:2], result["observations"][:1]
    _finish(value, "failed", "read_backend_unavailable", (2, 1, 1, 224))
    _, admission = run_of(value)
    assert (admission.status, admission.reason, dict(admission.usage), admission.findings) == (
        "failed", "read_backend_unavailable",
        {"model_calls": 2, "searches": 1, "reads": 1, "source_bytes": 224}, ())
    assert admission.notes == (
        "size of the failed read not recorded; its bytes taken as recorded",
        "tool error as recorded: read_backend_unavailable")
    result["usage"]["source_bytes"] = 5000  # over the 4096-byte allowance: not believed
    recorded, admission = run_of(value)
    assert [(f.code, f.position) for f in admission.findings] == [
        (C.USAGE_DISAGREEMENT, recorded.finished_position)]
    assert admission.usage["source_bytes"] == 0
