"""Seed 001 trials with ONE fact changed each, and the outcome each must have.

``build()`` derives every mutation from the recorded report; ``fixtures/agent/mutations/``
holds the result (regenerate with ``python tests/agent_mutations.py``), and the tests check
that each file is exactly its trial with the stated change.  The expectations are written
here by hand from seed 001's rules, never computed by tracestore.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "agent"
OUT = HERE / "mutations"


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(trial: dict[str, Any]) -> None:
        node = trial
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return apply


def _both(*changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(trial: dict[str, Any]) -> None:
        for change in changes:
            change(trial)
    return apply


R = ("result",)
ALTERED = "An existing file is kept as a backup."
# name: (source trial, what changed, change, expected)
MUTATIONS: dict[str, tuple[str, str, Callable[[dict[str, Any]], None], dict[str, Any]]] = {
    "altered-quote": (
        "overwrite-agent-1", "the answer's quote (and the recorded citation) no longer occurs "
        "in the read passage",
        _both(_set((*R, "decisions", 2, "citations", 0, "quote"), ALTERED),
              _set((*R, "citations", 0, "quote"), ALTERED)),
        {"status": "failed", "reason": "unread_or_changed_citation",
         "refused": [[2, "unread_or_changed_citation"]],
         "findings": ["admission_disagreement", "outcome_disagreement"]}),
    "unissued-read": (
        "overwrite-agent-1", "the search issued only path-read, yet path-write was read",
        _set((*R, "observations", 0, "result", "candidates"),
             [{"source_id": "path-read", "rank": 1, "version": "3.12"}]),
        {"status": "failed", "reason": "unissued_source", "refused": [[1, "unissued_source"]],
         "findings": ["admission_disagreement", "admission_disagreement",
                      "unadmitted_observation", "outcome_disagreement",
                      "usage_disagreement"]}),
    "duplicate-query": (
        "serialize-and-save-agent-1", "the second search repeats the first one's terms",
        _both(_set((*R, "decisions", 3, "query"), "utf-8 ensure_ascii dump json"),
              _set((*R, "observations", 3, "arguments", "query"), "utf-8 ensure_ascii dump json"),
              _set((*R, "observations", 3, "result", "query"), "utf-8 ensure_ascii dump json")),
        {"status": "failed", "reason": "duplicate_query", "refused": [[3, "duplicate_query"]],
         "findings": ["admission_disagreement", "admission_disagreement",
                      "admission_disagreement", "unadmitted_observation",
                      "unadmitted_observation", "outcome_disagreement",
                      "usage_disagreement"]}),
    "search-limit": (
        "newline-version-agent-2", "the search allowance is 2, and the run searched 3 times",
        _set((*R, "limits", "searches"), 2),
        {"status": "incomplete", "reason": "search_limit", "refused": [[3, "search_limit"]],
         "findings": ["admission_disagreement", "admission_disagreement",
                      "unadmitted_observation", "outcome_disagreement",
                      "usage_disagreement"]}),
    "unknown-action": (
        "overwrite-agent-1", "the first action is shell instead of search",
        _set((*R, "decisions", 0, "action"), "shell"),
        {"status": "failed", "reason": "unknown_action", "refused": [[0, "unknown_action"]],
         "findings": ["admission_disagreement", "admission_disagreement",
                      "admission_disagreement", "unadmitted_observation",
                      "unadmitted_observation", "outcome_disagreement",
                      "usage_disagreement"]}),
    "answer-without-citations": (
        "overwrite-agent-1", "the answer carries no citations",
        _both(_set((*R, "decisions", 2, "citations"), []), _set((*R, "citations"), [])),
        {"status": "failed", "reason": "missing_answer_evidence",
         "refused": [[2, "missing_answer_evidence"]],
         "findings": ["admission_disagreement", "outcome_disagreement"]}),
    "deadline-passed": (
        "overwrite-agent-1", "the run took 181 s against a 180 s limit",
        _set(("elapsed_seconds",), 181.0),
        {"status": "incomplete", "reason": "deadline", "refused": [[2, "deadline"]],
         "findings": ["admission_disagreement", "outcome_disagreement"]}),
    "changed-read": (
        "unsupported-agent-1", "the read passage's text no longer matches its text_sha256",
        _set((*R, "observations", 1, "result", "text"),
             "Path.write_text(data, encoding=None, errors=None, newline=None) writes text to a "
             "file and closes it. An existing file is overwritten. Backups are kept for 7 days."),
        {"status": "failed", "reason": "changed_read", "refused": [],
         "findings": ["admission_disagreement", "outcome_disagreement", "usage_disagreement"]}),
    "fourth-search": (
        "newline-version-agent-2", "the model's last proposal is a fourth search (limit 3), "
        "which ran, instead of stop",
        _both(_set((*R, "decisions", 4), {
            "action": "search", "assessment": "Try once more with other words.",
            "query": "universal newlines read_text 3.13", "source_id": "", "answer": "",
            "citations": []}),
              lambda t: t["result"]["observations"].append({
                  "tool": "search", "arguments": {"query": "universal newlines read_text 3.13"},
                  "result": {"query": "universal newlines read_text 3.13", "candidates": [
                      {"source_id": "path-read-3-13", "rank": 1, "version": "3.13"}]}})),
        {"status": "incomplete", "reason": "search_limit", "refused": [[4, "search_limit"]],
         "findings": ["admission_disagreement", "unadmitted_observation",
                      "outcome_disagreement"]}),
    "shell-only": (
        "overwrite-agent-1", "the first proposal is just {\"action\": \"shell\"}",
        _set((*R, "decisions", 0), {"action": "shell"}),
        {"status": "failed", "reason": "invalid_decision",
         "refused": [[0, "invalid_decision"]],
         "findings": ["admission_disagreement", "admission_disagreement",
                      "admission_disagreement", "unadmitted_observation",
                      "unadmitted_observation", "outcome_disagreement",
                      "usage_disagreement"]}),
}


def build(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    trials = {t["id"]: t for t in report["trials"]}
    out = {}
    for name, (source, changed, change, expected) in MUTATIONS.items():
        trial = copy.deepcopy(trials[source])
        change(trial)
        trial["id"] = f"{source}--{name}"
        trial["mutation"] = {"from": source, "changed": changed, "expected": expected}
        out[name] = trial
    return out


if __name__ == "__main__":
    report = json.loads((HERE / "seed001-live-comparison.json").read_text(encoding="utf-8"))
    for name, trial in build(report).items():
        (OUT / f"{name}.json").write_text(json.dumps(trial, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
